"""Models researchers already have, as specs: TransformerLens models and tracr programs.

``from_transformer_lens(model)`` imports a TransformerLens 3.x HookedTransformer;
``from_tracr(assembled, program)`` imports a tracr-compiled program (its saturated run gives
``rasp.evaluate``'s outputs). Each refuses what satsim cannot represent in one line, and each
proves the import by running the source model beside satsim's softmax equivalent before it
returns (docs/interop.md). Neither imports torch, TransformerLens or tracr until it is called.
"""

from satsim.interop.tracr import from_tracr
from satsim.interop.transformer_lens import from_transformer_lens

__all__ = ["from_tracr", "from_transformer_lens"]
