"""Models researchers already have, as specs: TransformerLens models, HF GPT-2, tracr programs.

``from_transformer_lens(model)`` imports a TransformerLens 3.x HookedTransformer;
``from_hf_gpt2(folder)`` a Hugging Face GPT-2 checkpoint folder (config.json, safetensors);
``from_tracr(assembled, program)`` imports a tracr-compiled program (its saturated run gives
``rasp.evaluate``'s outputs). Each refuses what satsim cannot represent in one line, and each
proves the import by running the source model beside satsim's softmax equivalent before it
returns (docs/interop.md). None imports torch, TransformerLens, transformers or tracr until
it is called.
"""

from satsim.interop.hf_gpt2 import from_hf_gpt2
from satsim.interop.tracr import from_tracr
from satsim.interop.transformer_lens import from_transformer_lens

__all__ = ["from_hf_gpt2", "from_tracr", "from_transformer_lens"]
