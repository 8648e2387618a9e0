"""Independent numpy forward pass of a tracr fixture, with hard and with tracr's softmax attention.

Needs only numpy: no tracr, no satsim. It checks the structure written in docs/notes_tracr.md:
saturated (mean over the argmax tie set) attention on the compiled weights should give
rasp.evaluate's outputs, and softmax at tracr's own scale should give tracr's compiled outputs.

    python scripts/tracr_numpy_check.py tests/data/tracr/*.json
"""

import argparse
import json
import sys
from pathlib import Path

import numpy as np

TIE_ATOL = 1e-6
TIE_RTOL = 1e-9
EXACT_ATOL = 1e-9  # float64 hard attention against rasp.evaluate
FLOAT32_ATOL = 1e-5  # anything involving tracr's float32 outputs


def load_fixture(json_path: Path) -> tuple[dict, dict]:
    """The fixture's description (.json) and its parameters (.npz beside it) in float64."""
    description = json.loads(json_path.read_text())
    with np.load(json_path.with_suffix(".npz")) as arrays:
        params = {name: arrays[name].astype(np.float64) for name in arrays.files}
    return description, params


def output_directions(description: dict) -> list[int]:
    """Residual indices of the program's output space, in unembedding order."""
    labels = description["residual_labels"]
    return [labels.index(label) for label in description["output_labels"]]


def attention_weights(scores: np.ndarray, allowed: np.ndarray, hard: bool) -> np.ndarray:
    """Per head [H, T, T] weights: uniform over the near-maximal scores (hard) or softmax."""
    masked = np.where(allowed, scores, -np.inf)
    best = masked.max(axis=-1, keepdims=True)
    if hard:
        chosen = allowed & (masked >= best - (TIE_ATOL + TIE_RTOL * np.abs(best)))
        return chosen / chosen.sum(axis=-1, keepdims=True)
    weights = np.exp(masked - best)
    return weights / weights.sum(axis=-1, keepdims=True)


def forward(description: dict, params: dict, token_ids: list[int], hard: bool) -> np.ndarray:
    """Final residual stream [T, d_model] for one input that starts with BOS."""
    heads, key_size = description["num_heads"], description["key_size"]
    length = len(token_ids)
    positions = np.arange(length)
    x = params["token_embed/embeddings"][token_ids] + params["pos_embed/embeddings"][positions]
    allowed = np.ones((length, length), bool)
    if description["causal"]:
        allowed = np.tril(allowed)
    for layer in range(description["num_layers"]):
        attn = f"transformer/layer_{layer}/attn"
        q, k, v = (
            (x @ params[f"{attn}/{name}/w"] + params[f"{attn}/{name}/b"]).reshape(
                length, heads, key_size
            )
            for name in ("query", "key", "value")
        )
        scores = np.einsum("thd,shd->hts", q, k) / np.sqrt(key_size)
        weights = attention_weights(scores, allowed, hard)
        mixed = np.einsum("hts,shd->thd", weights, v).reshape(length, -1)
        x = x + mixed @ params[f"{attn}/linear/w"] + params[f"{attn}/linear/b"]
        mlp = f"transformer/layer_{layer}/mlp"
        hidden = np.maximum(x @ params[f"{mlp}/linear_1/w"] + params[f"{mlp}/linear_1/b"], 0.0)
        x = x + hidden @ params[f"{mlp}/linear_2/w"] + params[f"{mlp}/linear_2/b"]
    return x


def decode(description: dict, residual: np.ndarray, first_on_tie: bool) -> list:
    """Outputs per position after BOS: the argmax label or the numerical value.

    A categorical tie gives None, or the first tied label where first_on_tie (tracr's rule).
    """
    readout = residual[1:, output_directions(description)]
    output = description["output"]
    if output["kind"] == "numerical":
        return [float(value) for value in readout[:, 0]]
    decoded = []
    for row in readout:
        winners = np.flatnonzero(row >= row.max() - TIE_ATOL)
        if first_on_tie:
            decoded.append(output["values"][int(np.argmax(row))])
        else:
            decoded.append(output["values"][winners[0]] if len(winners) == 1 else None)
    return decoded


def same(left: list, right: list, atol: float) -> bool:
    """Equal outputs: exact for labels, within atol for numbers."""
    return len(left) == len(right) and all(
        a == b
        if isinstance(a, (str, type(None))) or isinstance(b, (str, type(None)))
        else abs(a - b) <= atol
        for a, b in zip(left, right)
    )


def check(json_path: Path) -> dict:
    """Fractions of sampled inputs where each pair of forward passes agrees."""
    description, params = load_fixture(json_path)
    token_id = {token: i for i, token in enumerate(description["input_vocab"])}
    bos_id = token_id[description["bos_token"]]
    counts = {"hard=rasp": 0, "tracr=rasp": 0, "softmax=tracr": 0}
    cases = description["cases"]
    for case in cases:
        ids = [bos_id] + [token_id[token] for token in case["tokens"]]
        hard = decode(description, forward(description, params, ids, hard=True), first_on_tie=False)
        soft = decode(description, forward(description, params, ids, hard=False), first_on_tie=True)
        counts["hard=rasp"] += same(hard, case["rasp"], EXACT_ATOL)
        counts["tracr=rasp"] += same(case["tracr"], case["rasp"], FLOAT32_ATOL)
        counts["softmax=tracr"] += same(soft, case["tracr"], FLOAT32_ATOL)
    return {name: count / len(cases) for name, count in counts.items()} | {"inputs": len(cases)}


def main(argv=None) -> int:
    """Print the agreement table for the given fixtures; exit 1 if hard attention ever differs."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("fixtures", nargs="+", type=Path, help="fixture .json files")
    args = parser.parse_args(argv)
    columns = ("inputs", "hard=rasp", "tracr=rasp", "softmax=tracr")
    print(f"{'fixture':24s} " + " ".join(f"{name:>13s}" for name in columns))
    all_exact = True
    for path in sorted(args.fixtures):
        result = check(path)
        all_exact &= result["hard=rasp"] == 1.0
        values = [f"{result['inputs']:13d}"] + [f"{result[name]:13.3f}" for name in columns[1:]]
        print(f"{path.stem:24s} " + " ".join(values))
    return 0 if all_exact else 1


if __name__ == "__main__":
    sys.exit(main())
