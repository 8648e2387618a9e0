"""Hugging Face GPT-2 checkpoints (a folder with config.json and model.safetensors) as specs.

Read from the tensors, no hub and no torch: GPT-2 is pre-LN (ln_1 before attention, ln_2 before
the MLP, ln_f at the end), with learned positions, GELU in its tanh form (``gelu_new``), biases
everywhere, and Conv1D layers, whose weight is [in, out] (y = x W + b), so that ``c_attn``'s
[d, 3d] splits into W_Q, W_K, W_V by columns and each into heads. The unembedding is
``lm_head.weight`` transposed, or the token embedding when the checkpoint ties them (no
``lm_head`` tensor). The readout is next-symbol with one label per vocabulary entry: after each
prefix, the tokens whose logit is > 0, for the multi-label BCE head of the formal-language models
of lacoco-lab/decompiling_transformers (architecture ``GPT2BCELMHeadModel``); categorical (the
token of the largest logit at each position) for an ordinary ``GPT2LMHeadModel``. Anything else
in the configuration is refused by name.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from satsim.errors import SatsimError
from satsim.interop.zoo_tasks import EOS, PAD, SEP, SPECIALS, task_of
from satsim.model.spec import (
    BOS,
    AttentionSpec,
    BlockSpec,
    FeedForwardSpec,
    LayerNormSpec,
    ModelSpec,
    OutputSpec,
    PositionalSpec,
)

ZOO_ALPHABETS = {"tomita": "01", "aaaastar": "a", "aastar": "a", "ababstar": "ab",
                 "abcde": "abcde", "ab_d_bc": "abcd", "012_0_2": "012", "d": "ab"}
"""The input symbols of the zoo's formal languages (lacoco-lab/decompiling_transformers), by
the task name in the folder's name (``bce_D2-@1l1h16d3lr00drop``: Dyck-style D_n over a, b)."""
OUTPUT_ONLY = (SEP, EOS, PAD)
"""The zoo's special tokens that are never inputs of a formal-language model."""
"""Tokens a next-symbol model predicts but never reads: the spec's vocabulary leaves them out
(their embedding rows unused), its labels keep them."""
SUPPORTED = {"model_type": "gpt2", "activation_function": "gelu_new",
             "scale_attn_by_inverse_layer_idx": False}
"""Configuration values the import implements; a checkpoint with another value is refused."""


def is_checkpoint(path: str | Path) -> bool:
    """Whether ``path`` is a folder holding a Hugging Face checkpoint (config.json)."""
    return Path(path).is_dir() and (Path(path) / "config.json").is_file()


def _config(folder: Path) -> dict[str, Any]:
    """The checkpoint's configuration, checked against what the import implements."""
    try:
        config = json.loads((folder / "config.json").read_text())
    except (OSError, json.JSONDecodeError) as error:
        raise SatsimError(f"{folder}/config.json is not readable JSON ({error})") from None
    for key, value in SUPPORTED.items():
        if config.get(key, value) != value:
            raise SatsimError(f"{folder}: {key} is {config.get(key)!r}; satsim imports GPT-2 "
                              f"checkpoints with {key} {value!r}")
    return config


def _tensors(folder: Path) -> dict[str, np.ndarray]:
    """The checkpoint's tensors by name, without the ``transformer.`` prefix."""
    from safetensors.numpy import load_file

    path = folder / "model.safetensors"
    if not path.is_file():
        raise SatsimError(f"{folder} has no model.safetensors (only safetensors checkpoints "
                          "are read)")
    try:
        tensors = load_file(str(path))
    except Exception as error:  # safetensors raises several unrelated types on corrupt input
        raise SatsimError(f"{path} is not a readable safetensors file ({error})") from None
    return {name.removeprefix("transformer."): np.asarray(t, dtype=np.float32)
            for name, t in tensors.items()}


def _heads(matrix: np.ndarray, n_heads: int) -> np.ndarray:
    """Columns [d, H·e] of a Conv1D weight as per-head [H, d, e]."""
    d, width = matrix.shape
    return matrix.reshape(d, n_heads, width // n_heads).transpose(1, 0, 2)


def _task(config: dict[str, Any]) -> str:
    """Next-symbol for a multi-label (BCE) head, categorical for a language-model head."""
    return "next-symbol" if "GPT2BCELMHeadModel" in config.get("architectures", ()) \
        else "categorical"


def default_vocab(config: dict[str, Any], size: int) -> list[str]:
    """Token names when none are given: ``t0``, ``t1``, … and ``<bos>``, ``<eos>``, ``<pad>``."""
    names = [f"t{i}" for i in range(size)]
    for key, name in (("bos_token_id", BOS), ("eos_token_id", EOS), ("pad_token_id", PAD)):
        index = config.get(key)
        if isinstance(index, int) and 0 <= index < size:
            names[index] = name
    return names


def zoo_vocab(folder_name: str, size: int) -> list[str] | None:
    """The zoo's vocabulary for a model named ``folder_name``, if it is a zoo task.

    A formal language, or an algorithmic task of :mod:`satsim.interop.zoo_tasks`.
    """
    algorithmic = task_of(folder_name)
    if algorithmic is not None:
        return list(algorithmic.vocab) if len(algorithmic.vocab) == size else None
    task = folder_name.split("-")[0].lower().removeprefix("bce_")
    for key, symbols in ZOO_ALPHABETS.items():
        if (task.startswith(key) if key != "d" else task[:1] == "d" and task[1:].isdigit()):
            vocab = [*sorted(symbols), *SPECIALS]
            return vocab if len(vocab) == size else None
    return None


def check_against_transformers(folder: Path, spec: ModelSpec, probes: int = 4) -> float:
    """Run the checkpoint in transformers beside the spec (softmax, float64) on random strings.

    Return the largest logit difference; refuse the import when it exceeds 1e-6 of the largest
    logit (rounding of float64 sums is about 1e-14 of it).
    """
    import torch
    from transformers import GPT2LMHeadModel
    from transformers.utils import logging as transformers_logging

    from satsim.model.settings import AttentionSettings
    from satsim.reference.forward import forward

    transformers_logging.disable_progress_bar()
    wide = spec.astype(np.float64)
    model = GPT2LMHeadModel.from_pretrained(str(folder)).double().eval()
    rng = np.random.default_rng(0)
    symbols = [token for token in spec.vocab if token != spec.bos]
    worst = 0.0
    for length in np.linspace(0, min(40, spec.positional.W_pos.shape[0] - 1), probes).astype(int):
        body = [str(token) for token in rng.choice(symbols, length)]
        ids = [spec.output.labels.index(token) for token in [spec.bos, *body]]
        with torch.no_grad():
            expected = model(torch.tensor([ids])).logits[0].numpy()
        got = forward(wide, body, AttentionSettings("softmax")).logits
        worst = max(worst, float(np.abs(got - expected).max()))
        if worst > 1e-6 * max(1.0, float(np.abs(expected).max())):
            raise SatsimError(f"{folder}: the imported model's logits differ from transformers' "
                              f"by {worst:.3g}; the checkpoint is not a GPT-2 satsim can read")
    return worst


def from_hf_gpt2(folder: str | Path, vocab: Sequence[str] | None = None,
                 name: str | None = None, *, check: bool = True) -> ModelSpec:
    """The spec of the GPT-2 checkpoint in ``folder``; ``vocab`` names its token ids in order.

    With ``check`` (the default) the import runs the checkpoint in transformers beside the spec
    and refuses it if their logits differ beyond rounding (:func:`check_against_transformers`).
    """
    folder = Path(folder)
    if not is_checkpoint(folder):
        raise SatsimError(f"{folder} is not a Hugging Face checkpoint folder (no config.json)")
    config = _config(folder)
    tensors = _tensors(folder)
    used: set[str] = set()

    def take(key: str) -> np.ndarray:
        if key not in tensors:
            raise SatsimError(f"{folder}: the checkpoint lacks tensor {key}")
        used.add(key)
        return tensors[key]

    def norm(prefix: str) -> LayerNormSpec:
        return LayerNormSpec(w=take(f"{prefix}.weight"), b=take(f"{prefix}.bias"),
                             eps=float(config.get("layer_norm_epsilon", 1e-5)))

    n_heads = int(config["n_head"])
    d = int(config["n_embd"])
    if d % n_heads:
        raise SatsimError(f"{folder}: n_embd {d} is not a multiple of n_head {n_heads}")
    scale = None if config.get("scale_attn_weights", True) else 1.0
    blocks = []
    for layer in range(int(config["n_layer"])):
        p = f"h.{layer}"
        qkv, bias = take(f"{p}.attn.c_attn.weight"), take(f"{p}.attn.c_attn.bias")
        w_q, w_k, w_v = (_heads(part, n_heads) for part in np.split(qkv, 3, axis=1))
        b_q, b_k, b_v = (part.reshape(n_heads, -1) for part in np.split(bias, 3))
        attn = AttentionSpec(W_Q=w_q, W_K=w_k, W_V=w_v,
                             W_O=take(f"{p}.attn.c_proj.weight").reshape(n_heads, d // n_heads, d),
                             b_Q=b_q, b_K=b_k, b_V=b_v, b_O=take(f"{p}.attn.c_proj.bias"),
                             mask="causal", scale=scale)
        mlp = FeedForwardSpec(W_in=take(f"{p}.mlp.c_fc.weight"), b_in=take(f"{p}.mlp.c_fc.bias"),
                              W_out=take(f"{p}.mlp.c_proj.weight"),
                              b_out=take(f"{p}.mlp.c_proj.bias"), activation="gelu_tanh")
        blocks.append(BlockSpec(attn=attn, mlp=mlp, ln1=norm(f"{p}.ln_1"), ln2=norm(f"{p}.ln_2")))
    embedding = take("wte.weight")
    unembedding = take("lm_head.weight") if "lm_head.weight" in tensors else embedding
    size = embedding.shape[0]
    if vocab is None:
        vocab = zoo_vocab(folder.name, size) or default_vocab(config, size)
    vocab = list(vocab)
    if len(vocab) != size:
        raise SatsimError(f"{folder}: the vocabulary has {len(vocab)} tokens for the "
                          f"checkpoint's {size} embeddings")
    task = _task(config)
    inputs = [i for i, token in enumerate(vocab)
              if task != "next-symbol" or token not in OUTPUT_ONLY]
    bos_id = config.get("bos_token_id")
    spec = ModelSpec(
        vocab=tuple(vocab[i] for i in inputs), W_E=embedding[inputs], blocks=tuple(blocks),
        positional=PositionalSpec("learned", W_pos=take("wpe.weight")),
        norm="pre", ln_final=norm("ln_f"),
        output=OutputSpec(W_U=np.ascontiguousarray(unembedding.T), labels=tuple(vocab),
                          task=task, readout="per-position"),
        bos=vocab[bos_id] if isinstance(bos_id, int) and 0 <= bos_id < size else None,
        name=name or folder.name, description=f"Hugging Face GPT-2 checkpoint {folder.name}")
    if check:
        check_against_transformers(folder, spec)
    left = sorted(set(tensors) - used - {"lm_head.weight"}
                  - {key for key in tensors if key.endswith((".attn.bias", ".masked_bias"))})
    if left:
        raise SatsimError(f"{folder}: the checkpoint has tensors a GPT-2 import does not place "
                          f"({', '.join(left[:4])})")
    return spec
