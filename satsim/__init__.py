"""satsim: exact, compiled saturated-attention transformers on formal languages."""

from satsim import constructions  # noqa: E402  (after the names it uses)
from satsim.attention import (
    attention,
    saturated_attention,
    softmax_attention,
    unique_hard_attention,
)
from satsim.errors import SatsimError, SpecError, WeightsFileError
from satsim.reference.forward import ATTENTION_KINDS, AttentionSettings
from satsim.simulator import Simulator, Trace
from satsim.spec import (
    AttentionSpec,
    BlockSpec,
    FeedForwardSpec,
    LayerNormSpec,
    ModelSpec,
    OutputSpec,
    PositionalSpec,
)

__all__ = [
    "ATTENTION_KINDS",
    "AttentionSettings",
    "AttentionSpec",
    "BlockSpec",
    "FeedForwardSpec",
    "LayerNormSpec",
    "ModelSpec",
    "OutputSpec",
    "PositionalSpec",
    "SatsimError",
    "Simulator",
    "SpecError",
    "Trace",
    "WeightsFileError",
    "attention",
    "constructions",
    "saturated_attention",
    "softmax_attention",
    "unique_hard_attention",
]

__version__ = "0.1.0"
