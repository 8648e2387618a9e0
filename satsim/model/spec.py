"""A model as a frozen, validated description: every tensor named, shaped and finite.

Tensor names follow TransformerLens (``embed.W_E``, ``blocks.{l}.attn.W_Q`` shaped
[n_heads, d_model, d_head], ...), so a spec's tensors read like the models researchers
already inspect. Validation happens at construction and names the offending tensor.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field, fields, is_dataclass, replace
from typing import Any

import numpy as np

from satsim.errors import SatsimError, SpecError
from satsim.model.masks import MASKS
from satsim.model.positions import FEATURES, POSITION_KINDS

NORM_PLACEMENTS = ("none", "pre", "post")
PROGRAM_LANGUAGES = ("crasp", "brasp")
"""The languages of the programs a compiled model carries (:mod:`satsim.rasp`), as file suffixes."""
LANGUAGE_TASKS = ("recognition", "next-symbol")
"""Tasks on a formal language, which the languages' oracles, evaluation and constructions judge."""
PER_POSITION_TASKS = ("categorical", "numerical")
"""Per-position outputs: the label of the largest logit, or the value of the one logit."""
TASKS = LANGUAGE_TASKS + PER_POSITION_TASKS
READOUTS = ("last", "per-position")
ACTIVATIONS = ("relu", "gelu", "gelu_tanh", "silu")
"""Feed-forward activations: ReLU, GELU (erf form), GELU (tanh form, TL's gelu_new), SiLU."""
NORM_KINDS = ("layer", "rms")
"""LayerNorm (centre, then divide by the RMS) and RMSNorm (divide by the RMS; a scale only)."""
FLOAT_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))
HEAD_KINDS = ("run", "soft", "saturated", "tolerant-hard", "score-class")
"""A head's attention kind (docs/semantics.md §1): "run" follows the run's setting (saturated in
the simulator, softmax(β) in the soft twin); the others fix the head's kind in every backend."""
KINDS_WITH_WIDTH = ("tolerant-hard", "score-class")
"""Head kinds that take a width δ (tolerant-hard: optional, None is the default tolerance)."""
Array = np.ndarray


def _frozen_array(name: str, value: Any) -> Array:
    """Return ``value`` as a read-only float array, or raise SpecError naming ``name``."""
    array = np.array(value, copy=True)
    if array.dtype not in FLOAT_DTYPES:
        raise SpecError(f"{name} has dtype {array.dtype}; expected float32 or float64")
    if not np.all(np.isfinite(array)):
        raise SpecError(f"{name} contains NaN or infinite values")
    array.flags.writeable = False
    return array


def _check_shape(name: str, array: Array | None, expected: tuple[int, ...]) -> None:
    """Raise SpecError unless ``array`` (when present) has shape ``expected``."""
    if array is not None and array.shape != expected:
        raise SpecError(f"{name} has shape {array.shape}; expected {expected}")


def _freeze_fields(obj: Any, prefix: str) -> None:
    """Replace every array-valued field of a frozen dataclass by a validated read-only copy."""
    for f in fields(obj):
        value = getattr(obj, f.name)
        if f.metadata.get("tensor") and value is not None:
            object.__setattr__(obj, f.name, _frozen_array(f"{prefix}{f.name}", value))


def tensor(optional: bool = False) -> Any:
    """Declare a dataclass field that holds a tensor (validated and frozen on construction)."""
    if optional:
        return field(default=None, metadata={"tensor": True})
    return field(metadata={"tensor": True})


BOS = "<bos>"
"""The BOS token of satsim's own models (hand-built constructions, compiled programs, trained
models); a spec names its own (``ModelSpec.bos``)."""


def default_scale(d_head: int) -> float:
    """The default score scale 1/√d_head."""
    return 1.0 / math.sqrt(d_head)


@dataclass(frozen=True)
class LayerNormSpec:
    """A norm over the model dimension: LayerNorm (``kind`` "layer") or RMSNorm ("rms").

    LayerNorm: (x - mean) / sqrt(var + eps), then γ (``w``) and β (``b``), both or neither.
    RMSNorm: x / sqrt(mean(x²) + eps), then γ (``w``) when present; it has no β.
    """

    w: Array | None = tensor(optional=True)
    b: Array | None = tensor(optional=True)
    eps: float = 1e-5
    kind: str = "layer"

    def __post_init__(self) -> None:
        _freeze_fields(self, "ln.")
        if self.kind not in NORM_KINDS:
            raise SpecError(f"unknown norm kind {self.kind!r}; known: {NORM_KINDS}")
        if self.kind == "layer" and (self.w is None) != (self.b is None):
            raise SpecError("LayerNorm needs both w (gamma) and b (beta), or neither")
        if self.kind == "rms" and self.b is not None:
            raise SpecError("RMSNorm has a scale w only, no shift b")
        if isinstance(self.eps, bool) or not isinstance(self.eps, numbers.Real):
            raise SpecError(f"norm eps must be a number, got {self.eps!r}")
        if not (np.isfinite(self.eps) and self.eps > 0):
            raise SpecError(f"norm eps must be positive and finite, got {self.eps}")

    @property
    def affine(self) -> bool:
        """Whether the norm has a learned scale (and, for LayerNorm, shift)."""
        return self.w is not None

    @property
    def centred(self) -> bool:
        """Whether the mean is subtracted first (LayerNorm, not RMSNorm)."""
        return self.kind == "layer"


@dataclass(frozen=True)
class AttentionSpec:
    """Multi-head self-attention: W_Q, W_K [H, d, d_head], W_V [H, d, d_v], W_O [H, d_v, d].

    ``mask`` says which keys each query may attend by position (:mod:`satsim.model.masks`):
    one name for every head, or a tuple with one name per head.
    """

    W_Q: Array = tensor()
    W_K: Array = tensor()
    W_V: Array = tensor()
    W_O: Array = tensor()
    b_Q: Array | None = tensor(optional=True)
    b_K: Array | None = tensor(optional=True)
    b_V: Array | None = tensor(optional=True)
    b_O: Array | None = tensor(optional=True)
    mask: str | tuple[str, ...] = "causal"
    scale: float | None = None  # the scores are scale · q·k; None: 1/√d_head
    kind: str | tuple[str, ...] = "run"  # each head's attention kind (HEAD_KINDS)
    delta: float | None | tuple[float | None, ...] = None  # each head's width δ (or None)

    def __post_init__(self) -> None:
        _freeze_fields(self, "attn.")
        if self.scale is not None:
            if isinstance(self.scale, bool) or not isinstance(self.scale, numbers.Real):
                raise SpecError(f"attention scale must be a number, got {self.scale!r}")
            object.__setattr__(self, "scale", float(self.scale))
            if not np.isfinite(self.scale):
                raise SpecError(f"attention scale must be finite, got {self.scale}")
        if self.W_Q.ndim != 3:
            raise SpecError(f"attn.W_Q must be [n_heads, d_model, d_head], got {self.W_Q.shape}")
        n_heads, d_model, d_head = self.W_Q.shape
        d_v = self.W_V.shape[2] if self.W_V.ndim == 3 else -1
        _check_shape("attn.W_K", self.W_K, (n_heads, d_model, d_head))
        _check_shape("attn.W_V", self.W_V, (n_heads, d_model, d_v))
        _check_shape("attn.W_O", self.W_O, (n_heads, d_v, d_model))
        _check_shape("attn.b_Q", self.b_Q, (n_heads, d_head))
        _check_shape("attn.b_K", self.b_K, (n_heads, d_head))
        _check_shape("attn.b_V", self.b_V, (n_heads, d_v))
        _check_shape("attn.b_O", self.b_O, (d_model,))
        if not isinstance(self.mask, str):
            object.__setattr__(self, "mask", tuple(self.mask))
            if len(self.mask) != n_heads:
                raise SpecError(f"attn.mask has {len(self.mask)} masks for {n_heads} heads")
        unknown = sorted({m for m in self.head_masks if m not in MASKS})
        if unknown:
            raise SpecError(f"unknown attention mask {unknown[0]!r}; known: {', '.join(MASKS)}")
        self._check_kinds(n_heads)

    def _check_kinds(self, n_heads: int) -> None:
        """Validate the heads' kinds and widths (one for all heads, or one per head)."""
        for name in ("kind", "delta"):
            value = getattr(self, name)
            if isinstance(value, (list, tuple)):
                object.__setattr__(self, name, tuple(value))
                if len(value) != n_heads:
                    raise SpecError(f"attn.{name} has {len(value)} entries for {n_heads} heads")
        for kind, delta in zip(self.head_kinds, self.head_deltas):
            if kind not in HEAD_KINDS:
                raise SpecError(f"unknown head kind {kind!r}; known: {', '.join(HEAD_KINDS)}")
            if delta is None:
                if kind == "score-class":
                    raise SpecError("a score-class head needs its class width delta")
                continue
            if kind not in KINDS_WITH_WIDTH:
                raise SpecError(f"a {kind} head takes no width delta (got {delta!r})")
            if (isinstance(delta, bool) or not isinstance(delta, numbers.Real)
                    or not (math.isfinite(delta) and delta >= 0)):
                raise SpecError(f"a head's width delta must be a finite number >= 0, "
                                f"got {delta!r}")
        if not isinstance(self.delta, tuple) and self.delta is not None:
            object.__setattr__(self, "delta", float(self.delta))
        elif isinstance(self.delta, tuple):
            object.__setattr__(self, "delta", tuple(None if d is None else float(d)
                                                    for d in self.delta))

    @property
    def head_kinds(self) -> tuple[str, ...]:
        """Each head's attention kind (HEAD_KINDS)."""
        return (self.kind,) * self.n_heads if isinstance(self.kind, str) else self.kind

    @property
    def head_deltas(self) -> tuple[float | None, ...]:
        """Each head's width δ (None: none, or tolerant-hard's default tolerance)."""
        return self.delta if isinstance(self.delta, tuple) else (self.delta,) * self.n_heads

    @property
    def fixed_kinds(self) -> bool:
        """Whether some head fixes its own attention kind (not "run")."""
        return any(kind != "run" for kind in self.head_kinds)

    @property
    def head_masks(self) -> tuple[str, ...]:
        """Each head's mask (:mod:`satsim.model.masks`)."""
        return (self.mask,) * self.n_heads if isinstance(self.mask, str) else self.mask

    @property
    def mask_text(self) -> str:
        """The mask for a reader: one name, or the heads' names joined by '/'."""
        return self.mask if isinstance(self.mask, str) else "/".join(self.mask)

    @property
    def n_heads(self) -> int:
        """Number of heads."""
        return self.W_Q.shape[0]

    @property
    def d_head(self) -> int:
        """Query/key dimension per head."""
        return self.W_Q.shape[2]

    @property
    def d_v(self) -> int:
        """Value dimension per head."""
        return self.W_V.shape[2]

    @property
    def score_scale(self) -> float:
        """The factor of q·k in the scores: ``scale``, or 1/√d_head by default."""
        return self.scale if self.scale is not None else default_scale(self.d_head)


@dataclass(frozen=True)
class FeedForwardSpec:
    """Position-wise feed-forward: act(x W_in + b_in) W_out + b_out, ``act`` in ACTIVATIONS."""

    W_in: Array = tensor()
    W_out: Array = tensor()
    b_in: Array | None = tensor(optional=True)
    b_out: Array | None = tensor(optional=True)
    activation: str = "relu"

    def __post_init__(self) -> None:
        _freeze_fields(self, "mlp.")
        if self.activation not in ACTIVATIONS:
            raise SpecError(f"unknown activation {self.activation!r}; known: {ACTIVATIONS}")
        if self.W_in.ndim != 2:
            raise SpecError(f"mlp.W_in must be [d_model, d_mlp], got {self.W_in.shape}")
        d_model, d_mlp = self.W_in.shape
        _check_shape("mlp.W_out", self.W_out, (d_mlp, d_model))
        _check_shape("mlp.b_in", self.b_in, (d_mlp,))
        _check_shape("mlp.b_out", self.b_out, (d_model,))


@dataclass(frozen=True)
class BlockSpec:
    """One layer: an attention sublayer, a feed-forward sublayer, and their LayerNorms."""

    attn: AttentionSpec | None = None
    mlp: FeedForwardSpec | None = None
    ln1: LayerNormSpec | None = None
    ln2: LayerNormSpec | None = None


@dataclass(frozen=True)
class PositionalSpec:
    """Positional information added to the token embedding."""

    kind: str = "none"
    W_pos: Array | None = tensor(optional=True)
    features: tuple[str, ...] = ()
    W_feat: Array | None = tensor(optional=True)

    def __post_init__(self) -> None:
        _freeze_fields(self, "pos_embed.")
        object.__setattr__(self, "features", tuple(self.features))
        if self.kind not in POSITION_KINDS:
            raise SpecError(f"unknown positional kind {self.kind!r}; known: {POSITION_KINDS}")
        if (self.kind == "learned") != (self.W_pos is not None):
            raise SpecError("a learned positional table W_pos goes with kind 'learned' only")
        if (self.kind == "features") != (self.W_feat is not None):
            raise SpecError("a feature projection W_feat goes with kind 'features' only")
        unknown = [name for name in self.features if name not in FEATURES]
        if unknown:
            raise SpecError(f"unknown positional features {unknown}; known: {list(FEATURES)}")
        if self.W_feat is not None and self.W_feat.shape[0] != len(self.features):
            raise SpecError(
                f"pos_embed.W_feat has {self.W_feat.shape[0]} rows "
                f"for {len(self.features)} features"
            )

    @property
    def depends_on_length(self) -> bool:
        """Whether position i's vector depends on the string's length n (features of (i, n))."""
        return self.kind == "features"


@dataclass(frozen=True)
class OutputSpec:
    """The unembedding and how it is read (:mod:`satsim.model.readout` decodes it).

    recognition: one 'accept' logit (accept iff > 0); next-symbol: one logit per symbol (the
    symbols whose logit is > 0); categorical: one logit per label (the label of the largest
    logit, ties reported); numerical: one logit, its value. The per-position tasks read every
    position (readout "per-position").
    """

    W_U: Array = tensor()
    b_U: Array | None = tensor(optional=True)
    labels: tuple[str, ...] = ("accept",)
    task: str = "recognition"
    readout: str = "last"

    def __post_init__(self) -> None:
        _freeze_fields(self, "unembed.")
        object.__setattr__(self, "labels", tuple(self.labels))
        if self.task not in TASKS:
            raise SpecError(f"unknown task {self.task!r}; known: {TASKS}")
        if self.readout not in READOUTS:
            raise SpecError(f"unknown readout {self.readout!r}; known: {READOUTS}")
        if self.W_U.ndim != 2 or self.W_U.shape[1] != len(self.labels):
            raise SpecError(
                f"unembed.W_U has shape {self.W_U.shape}; expected (d_model, {len(self.labels)})"
                f" for labels {self.labels}"
            )
        _check_shape("unembed.b_U", self.b_U, (len(self.labels),))
        if self.task == "recognition" and len(self.labels) != 1:
            raise SpecError("a recognition output has exactly one logit (accept iff > 0)")
        if self.task == "numerical" and len(self.labels) != 1:
            raise SpecError("a numerical output has exactly one logit (its value)")
        if self.task in PER_POSITION_TASKS + ("next-symbol",) and self.readout != "per-position":
            raise SpecError(f"a {self.task} output is read at every position "
                            "(readout 'per-position')")
        if len(set(self.labels)) != len(self.labels):
            raise SpecError(f"output labels must be distinct, got {self.labels}")


@dataclass(frozen=True)
class ModelSpec:
    """A transformer encoder or causal decoder, fully described and validated.

    Forward pass (``norm`` sets LayerNorm placement, ``residual`` the skip connections):
    ``post``: x = LN(x + f(x)); ``pre``: x = x + f(LN(x)); ``none``: x = x + f(x).
    ``residual`` is one flag for all sublayers or one per present sublayer, in order (a limit
    network may keep the skip connection at some sublayers only). With ``parallel``, a block's
    attention and feed-forward read the same stream: x + attn(LN1(x)) + mlp(LN2(x)).
    Attention scores are scale·q·k (1/√d_head by default). The output spec says how the logits
    are read (recognition, next-symbol, categorical or numerical). Input symbols are any
    distinct non-empty strings; text inputs are read by character when every symbol is one
    character, else as whitespace-separated tokens (:mod:`satsim.model.encoding`).
    :mod:`satsim.model.architecture` states this walk once for every backend.
    """

    vocab: tuple[str, ...]
    W_E: Array = tensor()
    blocks: tuple[BlockSpec, ...] = ()
    output: OutputSpec | None = None
    positional: PositionalSpec = field(default_factory=PositionalSpec)
    norm: str = "none"
    residual: bool | tuple[bool, ...] = True
    ln_final: LayerNormSpec | None = None
    parallel: bool = False
    bos: str | None = None
    eos: str | None = None
    name: str = "model"
    description: str = ""
    dim_names: tuple[str, ...] = ()
    source: str = ""
    """The program the model was compiled from (its text; :mod:`satsim.rasp`), or empty."""
    source_language: str = ""
    """The language of ``source``: "crasp" or "brasp" (empty without a source)."""
    max_tokens: int | None = None
    """The longest input, in tokens (BOS/EOS included), on which the model is known to be exact;
    longer inputs are refused (a compiled model's float64 bound). None: no bound."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "vocab", tuple(self.vocab))
        if self.max_tokens is not None and not (isinstance(self.max_tokens, int)
                                                and self.max_tokens >= 1):
            raise SpecError(f"max_tokens must be a positive integer or None, got "
                            f"{self.max_tokens!r}")
        object.__setattr__(self, "dim_names", tuple(self.dim_names))
        if self.source and self.source_language not in PROGRAM_LANGUAGES:
            raise SpecError(f"the model's program is in an unknown language "
                            f"{self.source_language!r} (known: {', '.join(PROGRAM_LANGUAGES)})")
        if not isinstance(self.name, str) or not self.name:
            raise SpecError(f"a model's name must be a non-empty string, got {self.name!r}")
        if isinstance(self.residual, (list, tuple)):
            object.__setattr__(self, "residual", tuple(bool(flag) for flag in self.residual))
        object.__setattr__(self, "blocks", tuple(self.blocks))
        _freeze_fields(self, "embed.")
        if self.output is None:
            raise SpecError("a model needs an output (unembedding) spec")
        self._check_vocab()
        self._check_dims()
        self._check_norms()
        dtypes = {array.dtype for array in self.tensors().values()}
        if len(dtypes) > 1:
            raise SpecError(f"all tensors must share one dtype, found {sorted(map(str, dtypes))}")
        if isinstance(self.residual, tuple) and len(self.residual) != len(self.sublayers()):
            raise SpecError(f"residual has {len(self.residual)} flags for "
                            f"{len(self.sublayers())} sublayers")
        if self.parallel:
            self._check_parallel()
        if self.output.task == "next-symbol" and self.bos is None:
            raise SpecError("a next-symbol model needs a BOS token (it reads the empty prefix)")

    def _check_vocab(self) -> None:
        if len(set(self.vocab)) != len(self.vocab) or not self.vocab:
            raise SpecError("vocab must be a non-empty tuple of distinct tokens")
        for token in self.vocab:
            if not isinstance(token, str) or not token:
                raise SpecError(f"every token must be a non-empty string, got {token!r}")
        for special in (self.bos, self.eos):
            if special is not None and special not in self.vocab:
                raise SpecError(f"special token {special!r} is not in the vocab")
        if self.W_E.ndim != 2 or self.W_E.shape[0] != len(self.vocab):
            raise SpecError(
                f"embed.W_E has shape {self.W_E.shape}; expected ({len(self.vocab)}, d_model)"
            )

    def _check_dims(self) -> None:
        d = self.d_model
        if self.dim_names and len(self.dim_names) != d:
            raise SpecError(f"dim_names has {len(self.dim_names)} names for d_model {d}")
        pos = self.positional
        if pos.W_pos is not None and (pos.W_pos.ndim != 2 or pos.W_pos.shape[1] != d):
            raise SpecError(f"pos_embed.W_pos has shape {pos.W_pos.shape}; expected (n_ctx, {d})")
        _check_shape("pos_embed.W_feat", pos.W_feat, (len(pos.features), d))
        for layer, block in enumerate(self.blocks):
            if block.attn is not None and block.attn.W_Q.shape[1] != d:
                width = block.attn.W_Q.shape[1]
                raise SpecError(f"blocks.{layer}.attn.W_Q has d_model {width} != {d}")
            if block.mlp is not None and block.mlp.W_in.shape[0] != d:
                width = block.mlp.W_in.shape[0]
                raise SpecError(f"blocks.{layer}.mlp.W_in has d_model {width} != {d}")
            for ln_name in ("ln1", "ln2"):
                ln = getattr(block, ln_name)
                if ln is not None and ln.affine:
                    _check_shape(f"blocks.{layer}.{ln_name}.w", ln.w, (d,))
                    _check_shape(f"blocks.{layer}.{ln_name}.b", ln.b, (d,))
        if self.ln_final is not None and self.ln_final.affine:
            _check_shape("ln_final.w", self.ln_final.w, (d,))
        if self.output.W_U.shape[0] != d:
            raise SpecError(f"unembed.W_U has d_model {self.output.W_U.shape[0]} != {d}")

    def _check_norms(self) -> None:
        if self.norm not in NORM_PLACEMENTS:
            raise SpecError(f"unknown norm placement {self.norm!r}; known: {NORM_PLACEMENTS}")
        for layer, block in enumerate(self.blocks):
            for sub, ln_name in ((block.attn, "ln1"), (block.mlp, "ln2")):
                has_ln = getattr(block, ln_name) is not None
                wants_ln = sub is not None and self.norm != "none"
                if has_ln != wants_ln:
                    need = "needs" if wants_ln else "must not have"
                    raise SpecError(f"blocks.{layer} {need} {ln_name} with norm={self.norm!r}")

    def _check_parallel(self) -> None:
        if self.norm == "post":
            raise SpecError("parallel attention and feed-forward need norm 'pre' or 'none'")
        for layer, block in enumerate(self.blocks):
            if block.attn is not None and block.mlp is not None and (
                    self.keeps_residual(layer, "attn") != self.keeps_residual(layer, "mlp")):
                raise SpecError(f"blocks.{layer} is parallel: its attention and feed-forward "
                                "share one residual flag")

    @property
    def d_model(self) -> int:
        """Width of the residual stream."""
        return self.W_E.shape[1]

    def __repr__(self) -> str:
        """The architecture in a few lines (the arrays are in ``tensors()``)."""
        residual = self.residual if isinstance(self.residual, bool) else list(self.residual)
        lines = [f"ModelSpec {self.name!r}: {self.n_layers} layers, d_model {self.d_model}, "
                 f"{self.dtype}, norm {self.norm}, residual {residual}, positional "
                 f"{self.positional.kind}",
                 f"  vocab {self.vocab}, bos {self.bos!r}, eos {self.eos!r}"]
        for layer, block in enumerate(self.blocks):
            parts = []
            if block.attn is not None:
                a = block.attn
                parts.append(f"attention {a.n_heads} heads × d_head {a.d_head} "
                             f"({a.mask_text})")
            if block.mlp is not None:
                parts.append(f"mlp {block.mlp.W_in.shape[1]}")
            lines.append(f"  layer {layer}: {', '.join(parts) or 'empty'}")
        lines.append(f"  output: {self.output.task}, readout {self.output.readout}, labels "
                     f"{self.output.labels}")
        return "\n".join(lines)

    def sublayers(self) -> list[tuple[int, str]]:
        """The (layer, "attn" | "mlp") of every sublayer present, in order."""
        return [(layer, kind) for layer, block in enumerate(self.blocks)
                for kind in ("attn", "mlp") if getattr(block, kind) is not None]

    def keeps_residual(self, layer: int, kind: str) -> bool:
        """Whether the sublayer (``layer``, ``kind``) adds its input back (the skip connection)."""
        if isinstance(self.residual, bool):
            return self.residual
        return self.residual[self.sublayers().index((layer, kind))]

    @property
    def fixed_kinds(self) -> bool:
        """Whether some head fixes its own attention kind (a hybrid; docs/semantics.md §1)."""
        return any(b.attn is not None and b.attn.fixed_kinds for b in self.blocks)

    def dim_name(self, index: int) -> str:
        """The name of residual dimension ``index`` (``d{index}`` when the spec has none)."""
        return self.dim_names[index] if self.dim_names else f"d{index}"

    @property
    def dtype(self) -> np.dtype:
        """The floating dtype shared by every tensor."""
        return self.W_E.dtype

    @property
    def n_layers(self) -> int:
        """Number of blocks."""
        return len(self.blocks)

    @property
    def alphabet(self) -> tuple[str, ...]:
        """Input symbols: the vocab without the special tokens."""
        return tuple(t for t in self.vocab if t not in (self.bos, self.eos))

    @property
    def character_symbols(self) -> bool:
        """Whether every input symbol is one character (text inputs are then read by character)."""
        return all(len(t) == 1 for t in self.alphabet)

    def require_language_task(self, what: str) -> None:
        """Raise a one-line SatsimError unless the output is recognition or next-symbol."""
        if self.output.task not in LANGUAGE_TASKS:
            raise SatsimError(f"{what} needs a recognition or next-symbol model; model "
                              f"{self.name!r} has {self.output.task} outputs")

    def tensors(self) -> dict[str, Array]:
        """Every tensor of the model by its TransformerLens-style name."""
        named: dict[str, Array] = {}

        def record(name: str, array: Array | None) -> Array | None:
            if array is not None:
                named[name] = array
            return array

        map_named_tensors(self, record)
        order = ("embed.", "pos_embed.", "blocks.", "ln_final.", "unembed.")
        ranked = sorted(named, key=lambda name: next(i for i, p in enumerate(order)
                                                     if name.startswith(p)))
        return {name: named[name] for name in ranked}

    def astype(self, dtype: Any) -> ModelSpec:
        """Return the same model with every tensor cast to ``dtype`` (float32 or float64)."""
        return map_tensors(self, lambda array: array.astype(dtype))


TOP_LEVEL_NAMES = {"W_E": "embed.W_E", "positional": "pos_embed", "output": "unembed"}
"""Where a ModelSpec field's tensors are named differently from the field (TransformerLens)."""


def tensor_name(prefix: str, field_name: str) -> str:
    """The name of field ``field_name`` of the part named ``prefix`` ("" for the ModelSpec).

    The one statement of tensor naming: ``embed.W_E``, ``pos_embed.W_pos``,
    ``blocks.{layer}.{attn|mlp|ln1|ln2}.{field}``, ``ln_final.w``, ``unembed.W_U``.
    """
    if not prefix:
        return TOP_LEVEL_NAMES.get(field_name, field_name)
    return f"{prefix}.{field_name}"


def map_named_tensors(obj: Any, fn: Any, prefix: str = "") -> Any:
    """Rebuild a spec (or its part named ``prefix``) with ``fn(name, tensor)`` on every tensor.

    ``fn`` also sees absent optional tensors (None) and may return None to drop one. Parts whose
    tensors all come back unchanged (the same objects) are kept, not rebuilt.
    """
    changes = {}
    for f in fields(obj):
        value = getattr(obj, f.name)
        name = tensor_name(prefix, f.name)
        if f.metadata.get("tensor"):
            new = fn(name, value)
        elif isinstance(value, tuple) and value and is_dataclass(value[0]):
            items = tuple(map_named_tensors(item, fn, f"{name}.{index}")
                          for index, item in enumerate(value))
            new = value if all(a is b for a, b in zip(items, value)) else items
        elif is_dataclass(value):
            new = map_named_tensors(value, fn, name)
        else:
            continue
        if new is not value:
            changes[f.name] = new
    return replace(obj, **changes) if changes else obj


def map_tensors(obj: Any, fn: Any) -> Any:
    """Rebuild a spec (or part of one) with ``fn`` applied to every tensor present."""
    return map_named_tensors(obj, lambda name, array: None if array is None else fn(array))
