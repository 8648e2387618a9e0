"""Training soft transformers on formal languages, with norm-growth measures (Merrill et al. 2021).

A run directory holds ``config.json``, ``metrics.jsonl`` (one JSON object per logged step),
``checkpoints/step-XXXXXXXX.safetensors`` (specs) beside their optimiser state, and
``final.safetensors``. This package imports torch; ``satsim eval`` never imports it.
"""
