"""The gradient projection cθᵀ·∇L at cθ, in float64, two ways.

θ is the sublayer's parameters (LayerNorm's γ, β included) by default: the paper "defines the
loss by first applying a random affine layer", so the head belongs to the loss, stays at its
initial values at every c and is not part of θ or ‖θ0‖. ``scale_head=True`` puts the head in θ
(scaled with the sublayer, and counted in the projection and in ‖θ0‖). At scale c
the parameters θ become cθ, the inputs x become cx (the paper treats the input as the output of
an earlier 1-homogeneous layer; the inputs are not parameters), and the loss is the mean softmax
cross-entropy of the logits against the labels. The projection is Σ_p cθ_p · ∂L/∂θ_p at cθ,
which equals d/dt L(t·cθ) at t = 1 with the labels held fixed.

- ``projection_autograd``: the definition, ``torch.autograd.grad`` of the loss, dotted with cθ.
- ``projection_terms`` (what the experiment uses): forward-mode autograd gives ż = d/dt z(t·cθ)
  for every logit; then dL/dt = mean_i Σ_k p_ik (ż_ik − ż_iy_i), summed in log space.

Both are the same number by the chain rule (Σ_k p_ik = 1), and agree to rounding at small c. At
large c they part: when a sample's softmax is so peaked that p_iy rounds to 1, the reverse-mode
gradient p − e_y loses its −ż_y part and the float sum can take the wrong sign (a few 1e-60
positives at a = 1.0 on an exactly homogeneous probe), and when p_ik underflows both give 0. The
log-space sum keeps the sign and the order of magnitude (``log10_abs``) however large c is.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch.func import functional_call, jvp

from satsim.errors import SatsimError
from satsim.papers.projection.sublayers import Probe


def theta_names(probe: Probe, scale_head: bool = False) -> list[str]:
    """Names of the parameters that make up θ (the scaled ones)."""
    return [name for name, _ in probe.named_parameters()
            if scale_head or not name.startswith("head.")]


def theta_norm(probe: Probe, scale_head: bool = False) -> float:
    """‖θ0‖: the Euclidean norm of the initial θ."""
    params = dict(probe.named_parameters())
    return float(torch.sqrt(sum((params[k].detach() ** 2).sum()
                                for k in theta_names(probe, scale_head))))


def scaled_parameters(probe: Probe, c: float, scale_head: bool = False
                      ) -> dict[str, torch.Tensor]:
    """Detached parameters with θ multiplied by c and the rest (a fixed head) as they are."""
    names = set(theta_names(probe, scale_head))
    return {name: value.detach() * c if name in names else value.detach()
            for name, value in probe.named_parameters()}


def loss_at(probe: Probe, params: dict[str, torch.Tensor], inputs: torch.Tensor,
            labels: np.ndarray | torch.Tensor) -> torch.Tensor:
    """Mean softmax cross-entropy of the probe run with ``params`` on ``inputs``."""
    labels = torch.as_tensor(labels, dtype=torch.int64)
    return F.cross_entropy(functional_call(probe, params, (inputs,)), labels)


def projection_autograd(probe: Probe, inputs: np.ndarray | torch.Tensor, c: float,
                        labels: np.ndarray, scale_head: bool = False) -> float:
    """cθᵀ·∇L at cθ by reverse-mode autograd (the definition; loses its sign at large c)."""
    x = torch.as_tensor(inputs, dtype=torch.float64) * c
    params = scaled_parameters(probe, c, scale_head)
    theta = [params[name].requires_grad_(True) for name in theta_names(probe, scale_head)]
    grads = torch.autograd.grad(loss_at(probe, params, x, labels), theta)
    return float(sum((p.detach() * g).sum() for p, g in zip(theta, grads)))


@dataclass(frozen=True)
class Terms:
    """Logits z and their derivative ż = d/dt z(t·cθ) at t = 1, for every sample."""

    logits: np.ndarray  # (n, classes)
    rates: np.ndarray   # (n, classes)

    @property
    def argmax(self) -> np.ndarray:
        """The model's own prediction per sample."""
        return self.logits.argmax(axis=1)

    def projection(self, labels: np.ndarray) -> SignedValue:
        """cθᵀ·∇L = mean_i Σ_k p_ik (ż_ik − ż_iy), summed in log space."""
        n = len(self.logits)
        z = self.logits
        log_p = z - _logsumexp(z, axis=1)[:, None]
        rows = np.arange(n)
        diff = self.rates - self.rates[rows, labels][:, None]
        diff[rows, labels] = 0.0
        with np.errstate(divide="ignore"):
            log_terms = log_p + np.log(np.abs(diff))
        log_pos = _logsumexp(np.where(diff > 0, log_terms, -np.inf), axis=None)
        log_neg = _logsumexp(np.where(diff < 0, log_terms, -np.inf), axis=None)
        return SignedValue.difference(log_pos, log_neg, math.log(n))


def projection_terms(probe: Probe, inputs: np.ndarray | torch.Tensor, c: float,
                     scale_head: bool = False) -> Terms:
    """Run the probe at scale c once, with forward-mode autograd along θ."""
    x = torch.as_tensor(inputs, dtype=torch.float64) * c
    params = scaled_parameters(probe, c, scale_head)
    names = theta_names(probe, scale_head)
    theta = {name: params[name] for name in names}
    rest = {name: value for name, value in params.items() if name not in theta}

    def logits(theta_part: dict[str, torch.Tensor]) -> torch.Tensor:
        return functional_call(probe, {**rest, **theta_part}, (x,))

    with warnings.catch_warnings():
        # torch.func's jvp decompositions call the deprecated torch.jit.script internally
        warnings.filterwarnings("ignore", message=r"`torch\.jit\.script` is deprecated",
                                category=DeprecationWarning)
        z, rates = jvp(logits, (theta,), (theta,))
    terms = Terms(z.detach().numpy(), rates.detach().numpy())
    if not (np.isfinite(terms.logits).all() and np.isfinite(terms.rates).all()):
        raise SatsimError(f"the {probe.variant.name} probe overflows float64 at c = {c:g} "
                          "(its logits or their rates are infinite); use smaller --scales")
    return terms


@dataclass(frozen=True)
class SignedValue:
    """A real number kept as a sign and a natural log of its magnitude (no underflow)."""

    sign: int
    log_abs: float

    @classmethod
    def difference(cls, log_a: float, log_b: float, log_divisor: float = 0.0) -> SignedValue:
        """(e^log_a − e^log_b) / e^log_divisor."""
        if log_a == log_b:
            return cls(0, -math.inf)
        sign, big, small = (1, log_a, log_b) if log_a > log_b else (-1, log_b, log_a)
        return cls(sign, big + math.log1p(-math.exp(small - big)) - log_divisor)

    @property
    def value(self) -> float:
        """As a float (±0.0 when it underflows)."""
        return self.sign * math.exp(self.log_abs) if self.sign else 0.0

    @property
    def log10_abs(self) -> float:
        """log10 of the magnitude (−inf for zero)."""
        return self.log_abs / math.log(10)


def _logsumexp(a: np.ndarray, axis: int | None) -> np.ndarray | float:
    """Return log Σ exp(a) along ``axis``, −inf for an empty or all −inf sum."""
    top = np.max(a, axis=axis, keepdims=True) if a.size else np.array(-np.inf)
    safe = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(divide="ignore"):
        out = np.log(np.sum(np.exp(a - safe), axis=axis, keepdims=True)) + safe
    return float(out.reshape(())) if axis is None else np.squeeze(out, axis=axis)
