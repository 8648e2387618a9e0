"""Compile tracr library programs and write weight fixtures for satsim's tracr importer.

Runs in an environment with tracr-pypi (not satsim's). For each program and max_seq_len it writes
NAME_nMAXLEN.npz (every parameter array, as tracr stores it) and NAME_nMAXLEN.json (config,
vocabularies, encodings, residual labels, sampled inputs with rasp.evaluate's and tracr's outputs).

    python scripts/tracr_fixtures.py --max-seq-len 5 10 --out tests/data/tracr
"""

import argparse
import json
import random
import sys
import time
from pathlib import Path

import numpy as np
from tracr.compiler import compiling, lib
from tracr.craft import bases
from tracr.rasp import rasp

BOS = "BOS"


def frac_prevs(max_seq_len: int):
    """Fraction of previous tokens equal to "("; numerical output."""
    return lib.make_frac_prevs(rasp.tokens == "("), ["a", "b", "c", "(", ")"]


def pair_balance(max_seq_len: int):
    """Running balance of "(" minus ")"; numerical output."""
    return lib.make_pair_balance(rasp.tokens, "(", ")"), ["a", "b", "c", "(", ")"]


def length(max_seq_len: int):
    """Sequence length at every position; categorical output."""
    return lib.make_length(), ["a", "b", "c", "d"]


def hist(max_seq_len: int):
    """Count of each token's value in the sequence; categorical output."""
    return lib.make_hist(), ["a", "b", "c", "d"]


def sort_unique(max_seq_len: int):
    """Sort distinct integer tokens; max_seq_len token values, so inputs can be distinct."""
    program = lib.make_sort_unique(vals=rasp.tokens, keys=rasp.tokens)
    return program, list(range(1, max_seq_len + 1))


def reverse(max_seq_len: int):
    """Reverse the sequence; categorical output."""
    return lib.make_reverse(rasp.tokens), ["a", "b", "c", "d"]


def sort_freq(max_seq_len: int):
    """Tokens sorted by descending frequency; categorical output.

    Its MLPs turn 1/(w + 1) into counts with slopes mlp_exactness, so float32's rounding reaches
    the one-hot directions that later queries read.
    """
    return lib.make_sort_freq(max_seq_len=max_seq_len), ["a", "b", "c", "d"]


PROGRAMS = {f.__name__: f for f in (frac_prevs, pair_balance, length, hist, sort_unique, reverse,
                                     sort_freq)}
DISTINCT_TOKENS = {"sort_unique"}


def sample_inputs(name: str, vocab: list, max_seq_len: int, count: int, rng: random.Random):
    """Seeded inputs, lengths evenly from 1 to max_seq_len (distinct tokens where needed)."""
    inputs = []
    for i in range(count):
        n = max(1, round((i + 1) * max_seq_len / count))
        if name in DISTINCT_TOKENS:
            inputs.append(rng.sample(vocab, n))
        else:
            inputs.append([rng.choice(vocab) for _ in range(n)])
    return inputs


def jsonable(value):
    """A program value as JSON (numbers stay numbers, None stays null)."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, (int, np.integer)):
        return int(value)
    return float(value)


def model_description(assembled, program, max_seq_len: int, mlp_exactness: int) -> dict:
    """The structure facts an importer needs, read from the assembled model."""
    config = assembled.model_config
    input_encoder = assembled.input_encoder
    token_ids = sorted(input_encoder.encoding_map.items(), key=lambda item: item[1])
    description = {
        "num_layers": config.num_layers,
        "layer_order": ["attn", "mlp"],
        "num_heads": config.num_heads,
        "key_size": config.key_size,
        "mlp_hidden_size": config.mlp_hidden_size,
        "causal": bool(config.causal),
        "layer_norm": bool(config.layer_norm),
        "activation": config.activation_function.__name__,
        "max_seq_len": max_seq_len,
        "mlp_exactness": mlp_exactness,
        "input_vocab": [str(token) for token, _ in token_ids],
        "bos_token": input_encoder.bos_token,
        "pad_token": input_encoder.pad_token,
        "residual_labels": list(assembled.residual_labels),
    }
    if assembled.output_encoder is not None and hasattr(assembled.output_encoder, "encoding_map"):
        outputs = sorted(assembled.output_encoder.encoding_map.items(), key=lambda item: item[1])
        description["output"] = {"kind": "categorical", "values": [jsonable(v) for v, _ in outputs]}
        directions = [bases.BasisDirection(program.label, value) for value, _ in outputs]
    else:
        description["output"] = {"kind": "numerical", "dimension": 1}
        directions = [bases.BasisDirection(program.label)]
    description["output_labels"] = [str(direction) for direction in directions]
    missing = set(description["output_labels"]) - set(description["residual_labels"])
    if missing:
        raise RuntimeError(f"output directions {sorted(missing)} are not in the residual stream")
    return description


def write_fixture(
    name: str, max_seq_len: int, mlp_exactness: int, samples: int, out: Path
) -> float:
    """Compile one program, write its .npz and .json, and return the compile seconds."""
    program, vocab = PROGRAMS[name](max_seq_len)
    start = time.perf_counter()
    assembled = compiling.compile_rasp_to_model(
        program,
        vocab=set(vocab),
        max_seq_len=max_seq_len,
        compiler_bos=BOS,
        mlp_exactness=mlp_exactness,
    )
    seconds = time.perf_counter() - start
    arrays = {
        f"{module}/{param}": np.asarray(value)
        for module, params in assembled.params.items()
        for param, value in params.items()
    }
    rng = random.Random(f"{name}-{max_seq_len}")
    cases = []
    apply_seconds = 0.0
    for tokens in sample_inputs(name, vocab, max_seq_len, samples, rng):
        expected = rasp.evaluate(program, tokens)
        start = time.perf_counter()
        tracr_out = assembled.apply([BOS, *tokens]).decoded[1:]
        apply_seconds += time.perf_counter() - start
        cases.append(
            {
                "tokens": [str(t) for t in tokens],
                "rasp": [jsonable(v) for v in expected],
                "tracr": [jsonable(v) for v in tracr_out],
            }
        )
    description = model_description(assembled, program, max_seq_len, mlp_exactness)
    description.update(
        program=name,
        compile_seconds=round(seconds, 3),
        tracr_apply_seconds=round(apply_seconds, 3),
        cases=cases,
    )
    stem = out / f"{name}_n{max_seq_len}"
    np.savez_compressed(stem.with_suffix(".npz"), **arrays)
    stem.with_suffix(".json").write_text(json.dumps(description, indent=1) + "\n")
    return seconds


def main(argv=None) -> int:
    """Write fixtures for the chosen programs and lengths, printing compile times."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-seq-len", type=int, nargs="+", required=True)
    parser.add_argument("--programs", nargs="+", choices=sorted(PROGRAMS), default=list(PROGRAMS))
    parser.add_argument("--mlp-exactness", type=int, default=100)
    parser.add_argument("--samples", type=int, default=20)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    for max_seq_len in args.max_seq_len:
        for name in args.programs:
            seconds = write_fixture(name, max_seq_len, args.mlp_exactness, args.samples, args.out)
            print(f"{name:13s} max_seq_len={max_seq_len:4d} compile {seconds:8.2f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
