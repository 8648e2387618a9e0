"""satsim: exact, compiled saturated-attention transformers on formal languages."""

from satsim import constructions  # noqa: E402  (after the names it uses)
from satsim.engine.attend import (
    attention,
    saturated_attention,
    softmax_attention,
    unique_hard_attention,
)
from satsim.engine.simulator import Simulator, Trace
from satsim.errors import SatsimError, SpecError, WeightsFileError
from satsim.model.io import load_spec, save_spec
from satsim.model.settings import ATTENTION_KINDS, AttentionSettings
from satsim.model.spec import (
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
    "load_spec",
    "save_spec",
    "saturated_attention",
    "softmax_attention",
    "unique_hard_attention",
]

__version__ = "0.1.0"
