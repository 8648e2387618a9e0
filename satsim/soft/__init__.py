"""The soft twin of a spec in PyTorch: the only part of satsim (with training) that imports torch.

``SoftTransformer.from_spec(spec)`` holds exactly the spec's weights; ``.scaled(c, rates)`` is the
model at cθ; ``.run(strings, beta=...)`` attends with softmax(β) and caches activations under
TransformerLens hook names. ``check_construction(name)`` is the soft-twin test of a construction.
"""

from satsim.soft.check import ConstructionCheck, check_construction, construction_strings
from satsim.soft.device import resolve_device, resolve_dtype
from satsim.soft.model import SoftRun, SoftTransformer
from satsim.soft.transformer_lens import from_transformer_lens, load_state_dict

__all__ = [
    "ConstructionCheck",
    "SoftRun",
    "SoftTransformer",
    "check_construction",
    "construction_strings",
    "from_transformer_lens",
    "load_state_dict",
    "resolve_device",
    "resolve_dtype",
]
