"""The soft twin of a spec in PyTorch (torch never reaches the simulator or ``satsim eval``).

``SoftTransformer.from_spec(spec)`` holds exactly the spec's weights; ``.scaled(c, rates)`` is the
model at cθ; ``.run(strings, beta=...)`` attends with softmax(β) and caches activations under
TransformerLens hook names.
"""

from satsim.soft.device import resolve_device, resolve_dtype
from satsim.soft.model import SoftRun, SoftTransformer

__all__ = [
    "SoftRun",
    "SoftTransformer",
    "resolve_device",
    "resolve_dtype",
]
