"""How long an import takes: ``from_transformer_lens`` and ``from_tracr``, this checkout beside
another (``--baseline DIR``), interleaved, each run in its own process with its thread counts set.

Run: python bench/import_time.py [--baseline DIR] [--rounds 2] [--repeats 5] [--threads 1]
[--models tiny small medium gelu-2l] [--tracr hist:10 frac_prevs:20]

TransformerLens models (random, seeded, float32 as TransformerLens builds them; shapes below):
per process, the model is built, every module the import needs is imported, and then timed are
the first import of the model ("cold": its arrays are fresh memory) and the median of
``--repeats`` more ("warm"); also timed is this checkout's import with ``check=False``, and
(after the imports) the model's own forward pass on n_ctx tokens (median of the repeats), the
least a check that runs the model can cost. tracr programs (scripts/tracr_fixtures.py's,
mlp_exactness 10⁴): per process, the compile, then the first ``from_tracr`` and the median of
the repeats, then a user's first ``assembled.apply`` on max_seq_len tokens. The import's first
call in a process also loads the modules it imports lazily (the soft twin's, 0.2 s); that time
is reported apart (``lazy_imports_seconds``). Writes bench/results/import_time.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import machine, run_in_checkout, write  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SHAPES = {
    "tiny": dict(d_model=8, d_head=4, n_heads=2, n_layers=2, n_ctx=8, d_vocab=6, d_mlp=12,
                 act_fn="relu"),
    "small": dict(d_model=64, d_head=16, n_heads=4, n_layers=2, n_ctx=64, d_vocab=64,
                  d_mlp=256, act_fn="gelu"),
    "medium": dict(d_model=256, d_head=32, n_heads=8, n_layers=4, n_ctx=256, d_vocab=1024,
                   d_mlp=1024, act_fn="gelu_new"),
    "gelu-2l": dict(d_model=512, d_head=64, n_heads=8, n_layers=2, n_ctx=1024, d_vocab=48262,
                    d_mlp=2048, act_fn="gelu"),
}
"""The TransformerLens models: tiny as the tests' fixtures; gelu-2l the shape of TransformerLens's
pretrained gelu-2l (random weights here)."""


def _timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def transformer_lens_child(shape: str, repeats: int, unchecked: bool) -> dict:
    """Build one model, then time its imports (in the child process)."""
    import warnings

    import torch
    from transformer_lens import HookedTransformer, HookedTransformerConfig

    from satsim.interop import from_transformer_lens

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        start = time.perf_counter()
        model = HookedTransformer(HookedTransformerConfig(**SHAPES[shape], seed=0)).eval()
        build = time.perf_counter() - start
    lazy = 0.0
    if unchecked:  # this checkout: the lazily imported modules, timed on their own
        lazy = _timed(lambda: __import__("satsim.soft"))
    row = {"build_seconds": build, "lazy_imports_seconds": lazy,
           "cold_seconds": _timed(lambda: from_transformer_lens(model)),
           "warm_seconds": statistics.median(
               _timed(lambda: from_transformer_lens(model)) for _ in range(repeats))}
    if unchecked:
        row["unchecked_seconds"] = statistics.median(
            _timed(lambda: from_transformer_lens(model, check=False)) for _ in range(repeats))
    tokens = torch.randint(0, model.cfg.d_vocab, (1, model.cfg.n_ctx),
                           generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        row["forward_seconds"] = statistics.median(
            _timed(lambda: model(tokens)) for _ in range(repeats))
    row["torch_threads"] = torch.get_num_threads()
    return row


def tracr_child(program: str, max_seq_len: int, repeats: int) -> dict:
    """Compile one program, then time its imports (in the child process)."""
    sys.path.insert(0, str(ROOT / "scripts"))
    from tracr.compiler import compiling
    from tracr_fixtures import BOS
    from tracr_fixtures import PROGRAMS as MAKERS

    from satsim.interop.tracr import from_tracr

    sop, vocab = MAKERS[program](max_seq_len)
    start = time.perf_counter()
    assembled = compiling.compile_rasp_to_model(sop, vocab=set(vocab), max_seq_len=max_seq_len,
                                                compiler_bos=BOS, mlp_exactness=10_000)
    compile_seconds = time.perf_counter() - start
    row = {"compile_seconds": compile_seconds,
           "cold_seconds": _timed(lambda: from_tracr(assembled, sop)),
           "warm_seconds": statistics.median(
               _timed(lambda: from_tracr(assembled, sop)) for _ in range(repeats))}
    tokens = [BOS, *(sorted(vocab, key=str)[i % len(vocab)] for i in range(max_seq_len))]
    row["first_apply_seconds"] = _timed(lambda: assembled.apply(tokens))
    return row


def main() -> None:
    """Interleave this checkout and the baseline over the models; print, write results/."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", help="checkout of the code to compare with")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--models", nargs="*", choices=list(SHAPES), default=list(SHAPES))
    parser.add_argument("--tracr", nargs="*", default=["hist:10", "frac_prevs:20"],
                        help="program:max_seq_len pairs")
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        kind, name, *rest = args.child
        if kind == "tl":
            row = transformer_lens_child(name, int(rest[0]), rest[1] == "new")
        else:
            row = tracr_child(name, int(rest[0]), int(rest[1]))
        print(json.dumps(row))
        return
    codes = {"new": str(ROOT)}
    if args.baseline:
        codes["baseline"] = str(Path(args.baseline).resolve())
    jobs = [("tl", shape, [str(args.repeats)]) for shape in args.models]
    jobs += [("tracr", pair.split(":")[0], [pair.split(":")[1], str(args.repeats)])
             for pair in args.tracr]
    rows = []
    for round_ in range(args.rounds):
        for kind, name, rest in jobs:
            for code, path in codes.items():
                extra = [code] if kind == "tl" else []
                row = {"round": round_, "kind": kind, "model": name, "code": code,
                       "load_average_1min": os.getloadavg()[0]}
                row |= run_in_checkout(__file__, path, ["--child", kind, name, *rest, *extra],
                                       args.threads)
                rows.append(row)
                print(json.dumps(row), flush=True)
    path = write("import_time", {"machine": machine(), "threads": args.threads, "rows": rows})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
