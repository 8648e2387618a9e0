"""Reproduction options: the authors' Figure 5 model, as the soft twin with two changes.

Not satsim semantics, and with no saturated limit in satsim: kept only to reproduce the figure.
In ``src/si_transformer.py`` of viking-sudo-rm/norm-growth,
- the causal "mask" multiplies the scores of future keys by 0 rather than excluding them, so
  they keep softmax weight exp(0) (``multiplicative_mask``);
- the arrangement called pre-norm is LN(f(x)) + x, with no final LayerNorm
  (``arrangement='ln-of-branch'``); their post-norm is the usual LN(x + f(x)).
A spec cannot say either, so ``to_spec`` refuses: a spec taken from this twin would be read by
the simulator and the exact limit as a different model.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from torch import Tensor

from satsim.errors import SatsimError
from satsim.model.architecture import Step, steps
from satsim.model.spec import LayerNormSpec, ModelSpec
from satsim.soft.model import SoftPass, SoftTransformer

ARRANGEMENTS = ("post", "ln-of-branch")
"""The authors' two arrangements: LN(x + f(x)) and LN(f(x)) + x."""


class AuthorsTwin(SoftTransformer):
    """The soft twin of a post-LN causal spec, run with the authors' mask and arrangement."""

    def __init__(self, spec: ModelSpec, *, arrangement: str, multiplicative_mask: bool = True,
                 device: Any = "auto", dtype: Any = None) -> None:
        if arrangement not in ARRANGEMENTS:
            raise SatsimError(f"unknown arrangement {arrangement!r}; known: {ARRANGEMENTS}")
        if spec.norm != "post" or spec.ln_final is not None:
            raise SatsimError("the authors' model is built from a post-LN spec without a final "
                              "LayerNorm (every sublayer carries its own LayerNorm)")
        if spec.residual is not True:
            raise SatsimError("the authors' model keeps every skip connection: give a spec "
                              "with residual true")
        super().__init__(spec, device=device, dtype=dtype)
        self.arrangement = arrangement
        self.multiplicative_mask = multiplicative_mask
        # ln-of-branch: each step's LayerNorm, by the stream it writes, moved onto the branch
        self.branch_norms: dict[str, LayerNormSpec | None] = {}

    def forward(self, tokens: Tensor, lengths: Tensor | None = None, **options: Any):
        """The soft twin's forward pass; sequences must share one length (no padding)."""
        if lengths is not None and bool((lengths != tokens.shape[1]).any()):
            raise SatsimError("the authors' model runs sequences of one length: its 0/1 mask "
                              "would give padding weight")
        return super().forward(tokens, lengths, **options)

    def _pass(self, key_mask: Tensor, beta: float, cache: bool) -> SoftPass:
        return _AuthorsPass(self, key_mask, beta, cache)

    def _steps(self) -> tuple[Step, ...]:
        if self.arrangement == "post":
            return steps(self.spec)
        # LN(f(x)) + x: the norm moves from after the sum onto the branch's output (``add``).
        walk = steps(self.spec)
        self.branch_norms = {step.out_name: step.norm_out for step in walk}
        return tuple(replace(step, norm_out=None) for step in walk)

    def to_spec(self) -> ModelSpec:
        """Refuse: satsim has no limit theory for the authors' mask or LN(f(x)) + x."""
        raise SatsimError("the authors' reproduction model (multiplicative 0/1 mask, "
                          "LN(f(x)) + x) has no spec: satsim's saturated limit has no limit "
                          "theory for it")


class _AuthorsPass(SoftPass):
    """The soft twin's operations with the authors' mask and, for ln-of-branch, LN(f(x)) + x."""

    def fused_softmax(self) -> bool:
        """Only without the 0/1 mask: a fused kernel cannot give future keys weight exp(0)."""
        return not self.model.multiplicative_mask and super().fused_softmax()

    def mask_scores(self, scores: Tensor, allowed: Tensor) -> Tensor:
        """Disallowed scores become 0, not −∞, so they keep weight (when the mask multiplies)."""
        if not self.model.multiplicative_mask:
            return super().mask_scores(scores, allowed)
        return scores * allowed

    def add(self, terms: list[Tensor], step: Step) -> Tensor:
        """The sum of x and f(x) (post), or LN(f(x)) + x (ln-of-branch)."""
        if self.model.arrangement == "post":
            return super().add(terms, step)
        x, y = terms
        return self.norm(y, self.model.branch_norms[step.out_name], step.norm_name) + x
