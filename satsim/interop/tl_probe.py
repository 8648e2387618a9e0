"""An imported HookedTransformer proves itself: TransformerLens's forward beside the soft twin.

The probe (:mod:`satsim.interop.probe`) runs random token sequences up to n_ctx through the model
itself (token tensors, so TransformerLens prepends no BOS, as the spec has none) and through the
spec's soft twin, and compares the logits. A difference beyond
``tolerance(ε of the model's dtype, the largest |logit|)`` is refused in one line naming the
largest difference and the first TransformerLens hook where the two computations part (found by
running the differing sequence again with every activation cached). Hooks, edited modules and
features the tables do not know all show up here.

Over a large vocabulary the unembedding is most of a run's cost, so the check first unembeds a
few positions only, on both sides, and bounds the rest through the streams the unembedding
reads (:func:`_sampled_agreement`); where that bound is not met, or where anything but
TransformerLens's own per-position code runs after ``unembed.hook_in``, it compares the full
logits.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from satsim.errors import SatsimError, first_line
from satsim.interop.probe import (
    largest_difference,
    probe_lengths,
    probe_tokens,
    scale_of,
    sensitivity,
    tolerance,
)
from satsim.model.spec import ModelSpec

SHARED_BY_HEADS = "ln1.hook_normalized"
"""A hook that use_split_qkv_input gives a head axis (equal copies); the twin records one copy."""


def _compute_dtype(model: Any) -> Any:
    parameter = next(iter(model.parameters()), None)
    if parameter is None:
        raise SatsimError("the model has no parameters to import")
    return parameter.dtype


def _tokens(sequence: np.ndarray) -> Any:
    import torch

    return torch.as_tensor(sequence, dtype=torch.long)[None]


def _their_logits(model: Any, sequence: np.ndarray) -> np.ndarray:
    """TransformerLens's logits of one sequence, (n, d_vocab_out) float64."""
    import torch

    try:
        with torch.no_grad():
            logits = model(_tokens(sequence))
    except Exception as error:  # the user's model fails on its own inputs
        first = str(error).splitlines()[0] if str(error) else ""
        raise SatsimError(f"TransformerLens's forward pass fails on a probe sequence of "
                          f"{len(sequence)} tokens ({type(error).__name__}: {first})") from None
    return logits[0].detach().cpu().double().numpy()


def sampled_positions(length: int) -> list[int]:
    """The positions whose logits the sampled comparison reads: up to 8, first and last included."""
    return sorted({round(float(x)) for x in np.linspace(0, length - 1, min(length, 8))})


def _per_position_tail(model: Any) -> bool:
    """Whether everything after ``unembed.hook_in`` is TransformerLens's own per-position code.

    That is: the model's forward and its Unembed are TransformerLens's classes, and no hook of
    anyone's (on the model, the unembedding, its output hook point, or every module) runs after
    it. Then the logits at some positions are the full run's logits at those positions.
    """
    from torch.nn.modules import module as torch_module
    from transformer_lens import HookedTransformer
    from transformer_lens.components import Unembed
    from transformer_lens.hook_points import HookPoint

    unembed = getattr(model, "unembed", None)
    hook_in, hook_out = getattr(unembed, "hook_in", None), getattr(unembed, "hook_out", None)
    if (type(model).forward is not HookedTransformer.forward
            or type(unembed).forward is not Unembed.forward
            or type(hook_in).forward is not HookPoint.forward
            or type(hook_out).forward is not HookPoint.forward
            or any("forward" in vars(module) for module in (model, unembed, hook_in, hook_out))):
        return False
    global_hooks = [getattr(torch_module, name, None) for name in
                    ("_global_forward_hooks", "_global_forward_pre_hooks")]
    if any(hooks is None or len(hooks) for hooks in global_hooks):
        return False
    return not any(len(module._forward_hooks) for module in (model, unembed, unembed.hook_out)
                   ) and not len(unembed.hook_out._forward_pre_hooks)


def _their_sampled(model: Any, sequence: np.ndarray, at: list[int]
                   ) -> tuple[np.ndarray, np.ndarray] | None:
    """TransformerLens's run of one sequence, unembedded at ``at`` only: (final, logits_at).

    ``final`` (n, d) is what the unembedding reads at every position, taken at
    ``unembed.hook_in`` after any hook of the user's there (None if it never passed there).
    """
    kept = {}

    def sample(module: Any, inputs: Any, output: Any) -> Any:
        kept["final"] = output
        return output[:, at]

    handle = model.unembed.hook_in.register_forward_hook(sample)
    try:
        logits = _their_logits(model, sequence)
    finally:
        handle.remove()
    if "final" not in kept:  # the unembedding never read its input through hook_in
        return None
    return kept["final"][0].detach().cpu().double().numpy(), logits


class _Twins:
    """The spec's soft twin on CPU in float32 and float64, each built when first asked for."""

    def __init__(self, spec: ModelSpec) -> None:
        self.spec = spec
        self.built: dict[str, Any] = {}
        self.ran: dict[str, np.ndarray] = {}  # the probe's logits, by dtype (one probe a check)

    def _twin(self, dtype: str) -> Any:
        from satsim.soft import SoftTransformer

        if dtype not in self.built:
            self.built[dtype] = SoftTransformer.from_spec(self.spec, device="cpu", dtype=dtype)
        return self.built[dtype]

    def logits(self, dtype: str, sequences: list[np.ndarray]) -> np.ndarray:
        """The twin's logits of the padded sequences, (B, T, n_outputs) float64.

        Run once per dtype: a check asks for the same probe again after its first comparison.
        """
        if dtype not in self.ran:
            self.ran[dtype] = self._run(dtype, sequences, None)[1]
        return self.ran[dtype]

    def sampled(self, dtype: str, sequences: list[np.ndarray], at: list[int]
                ) -> tuple[np.ndarray, np.ndarray]:
        """The twin's final streams (B, T, d) and its logits at ``at`` (B, P, n_outputs)."""
        return self._run(dtype, sequences, at)

    def _run(self, dtype: str, sequences: list[np.ndarray], at: list[int] | None
             ) -> tuple[np.ndarray, np.ndarray]:
        import torch

        lengths = torch.tensor([len(sequence) for sequence in sequences])
        batch = torch.zeros((len(sequences), int(lengths.max())), dtype=torch.long)
        for row, sequence in enumerate(sequences):
            batch[row, :len(sequence)] = torch.as_tensor(sequence)
        with torch.no_grad():
            run = self._twin(dtype)(batch, lengths, logits_at=at)
        return run.final.double().numpy(), run.logits.double().numpy()

    def hooks(self, dtype: str, sequence: np.ndarray) -> dict[str, np.ndarray]:
        """The twin's activations on one sequence, by TransformerLens hook name, float64."""
        import torch

        with torch.no_grad():
            run = self._twin(dtype)(_tokens(sequence), cache=True)
        hooks = {name: value.detach().double().numpy() for name, value in run.cache.items()}
        hooks["unembed.hook_in"] = run.final.detach().double().numpy()
        hooks["unembed.hook_out"] = run.logits.detach().double().numpy()
        return hooks


def _first_difference(model: Any, twins: _Twins, sequence: np.ndarray, eps: float
                      ) -> tuple[str, float]:
    """The first TransformerLens hook (in the order it runs) that the twin does not reproduce."""
    import torch

    with torch.no_grad():
        logits, cache = model.run_with_cache(_tokens(sequence))
    reference, narrow = twins.hooks("float64", sequence), twins.hooks("float32", sequence)
    for name, value in cache.items():
        if name not in reference:
            continue
        theirs = value.detach().cpu().double().numpy()
        if name.endswith(SHARED_BY_HEADS) and theirs.ndim == 4:
            theirs = theirs[:, :, 0]
        difference = largest_difference(reference[name], theirs)
        limit = tolerance(eps, scale_of(theirs), sensitivity(reference[name], narrow[name]))
        if difference > limit:
            return name, difference
    return "the logits after unembed.hook_out", largest_difference(
        reference["unembed.hook_out"], logits.detach().cpu().double().numpy())


def _compared(theirs: list[np.ndarray], ours: np.ndarray, eps: float,
              rounded: np.ndarray | None = None) -> list[tuple[float, float]]:
    """Per sequence: the largest |Δlogit| against the twin's, and the rounding it may be.

    Without ``rounded`` the rounding allowed follows the logits' scale; with it (the float32
    twin, ``ours`` being the float64 one) it also follows the model's measured sensitivity.
    """
    found = []
    for row, logits in enumerate(theirs):
        mine = ours[row, :len(logits)]
        moved = 0.0 if rounded is None else sensitivity(mine, rounded[row, :len(logits)])
        found.append((largest_difference(mine, logits), tolerance(eps, scale_of(logits), moved)))
    return found


def _largest_column_norm(matrix: np.ndarray) -> float:
    """An upper bound on the largest column norm, summed in the matrix's own dtype.

    The factor 1 + 2·rows·ε covers the rounding of the sum of squares (about rows·ε at most)
    and of the square root, so no float64 copy of a large unembedding is needed.
    """
    squares = np.einsum("ij,ij->j", matrix, matrix)
    if not squares.size:
        return 0.0
    eps = float(np.finfo(matrix.dtype).eps) if matrix.dtype.kind == "f" else 0.0
    return float(np.sqrt(float(squares.max()))) * (1.0 + 2.0 * matrix.shape[0] * eps)


def _sampled_agreement(model: Any, spec: ModelSpec, twins: _Twins,
                       sequences: list[np.ndarray], eps: float) -> bool:
    """Whether the logits agree at every position, shown without unembedding every position.

    Both runs unembed a few positions (:func:`sampled_positions`) and keep what the
    unembedding reads everywhere. The logits at any position then differ by at most the
    largest difference at the sampled ones plus |Δfinal|₂ · the largest column norm of W_U
    (the unembedding being the same map at every position); that bound must be within the
    rounding allowed at the sampled logits' scale. False sends the check to the full run.
    """
    at = sorted({p for sequence in sequences for p in sampled_positions(len(sequence))})
    ours_final, ours_logits = twins.sampled(str(spec.dtype), sequences, at)
    column = _largest_column_norm(np.asarray(spec.output.W_U))
    for row, sequence in enumerate(sequences):
        mine = [index for index, position in enumerate(at) if position < len(sequence)]
        theirs = _their_sampled(model, sequence, [at[index] for index in mine])
        if theirs is None:
            return False
        final, logits = theirs
        gap = largest_difference(ours_logits[row, mine], logits)
        with np.errstate(invalid="ignore", over="ignore"):
            drift = np.linalg.norm(ours_final[row, :len(sequence)] - final, axis=-1).max()
        bound = gap + drift * column
        if not bound <= tolerance(eps, scale_of(logits)):
            return False
    return True


def check_against_transformer_lens(model: Any, spec: ModelSpec) -> None:
    """Raise a one-line SatsimError unless the model and the spec's twin agree on the probe.

    The twin runs in the spec's dtype first, against rounding at the logits' scale; where that
    is not enough (large weights amplify rounding), the float64 twin is the reference and the
    allowance grows to the model's sensitivity, measured as the float32 twin's distance to it.
    A bfloat16 or float16 model is checked as a float32 copy of itself (:func:`_widened`).
    """
    if not callable(model) or not hasattr(model, "parameters"):
        raise SatsimError(f"a {type(model).__name__} cannot be run to check the import against; "
                          "pass a HookedTransformer (or check=False for a model already "
                          "checked)")
    import torch

    dtype = narrow = _compute_dtype(model)
    if dtype not in (torch.float32, torch.float64):
        model, dtype = _widened(model, narrow), torch.float32
    eps = float(torch.finfo(dtype).eps)
    causal = all(block.attn.mask == "causal" for block in spec.blocks)
    sequences = probe_tokens(len(spec.vocab),
                             probe_lengths(spec.positional.W_pos.shape[0], causal))
    twins = _Twins(spec)
    if _per_position_tail(model) and _sampled_agreement(model, spec, twins, sequences, eps):
        return
    theirs = [_their_logits(model, sequence) for sequence in sequences]
    checked = _compared(theirs, twins.logits(str(spec.dtype), sequences), eps)
    if all(difference <= limit for difference, limit in checked):
        return
    checked = _compared(theirs, twins.logits("float64", sequences), eps,
                        twins.logits("float32", sequences))
    worst = max(range(len(sequences)), key=lambda row: checked[row][0] - checked[row][1])
    difference, limit = checked[worst]
    if difference <= limit:
        return
    hook, at_hook = _first_difference(model, twins, sequences[worst], eps)
    copied = "" if narrow == dtype else f", run as a float32 copy of the {_name(narrow)} model"
    raise SatsimError(
        f"the imported spec does not compute what the TransformerLens model computes: on a "
        f"probe of {len(sequences[worst])} random tokens the logits differ by up to "
        f"{difference:.3g} (rounding in {_name(dtype)} allows {limit:.2g}{copied}), first at "
        f"{hook} (by {at_hook:.3g}); the model runs something its config and weights do not "
        "say (a hook, an edited module, a feature satsim does not know)")


def _name(dtype: Any) -> str:
    return str(dtype).removeprefix("torch.")


def _widened(model: Any, dtype: Any) -> Any:
    """A float32 copy of a bfloat16 or float16 model (its config's dtype too), hooks and all.

    The spec holds such a model's weights in float32, and the model's own run rounds every
    activation to 8 or 11 bits: up to about half the logits' scale (docs/interop.md), which
    would hide any real difference. The copy computes what the spec claims, in float32.
    """
    import copy

    import torch

    try:
        widened = copy.deepcopy(model)
    except Exception as error:  # a hook or attribute of the user's that cannot be copied
        raise SatsimError(f"cannot copy the {_name(dtype)} model to check it in "
                          f"float32 ({type(error).__name__}: {first_line(error)}); convert it "
                          "with model.to(torch.float32) first") from None
    if hasattr(getattr(widened, "cfg", None), "dtype"):
        widened.cfg.dtype = torch.float32  # TransformerLens rounds norms' outputs to it
    return torch.nn.Module.to(widened, torch.float32)
