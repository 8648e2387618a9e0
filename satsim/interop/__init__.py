"""Models researchers already have, as specs: TransformerLens HookedTransformers."""

from satsim.interop.transformer_lens import from_transformer_lens

__all__ = ["from_transformer_lens"]
