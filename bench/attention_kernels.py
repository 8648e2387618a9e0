"""Causal attention kernels side by side: satsim saturated vs torch SDPA (soft) and NumPy/BLAS.

Run: python bench/attention_kernels.py [--threads 2] [--repeats 7]. Each backend runs in its own
process with Numba, OpenMP and BLAS threads set to ``--threads`` (satsim also with 1 thread);
float32, B = 8, H = 4, causal, median of ``--repeats`` runs. "satsim" is what
``saturated_attention`` runs by default (its path, "tiles" or "fused", is recorded);
"satsim-fused" forces the fused per-query kernel (no BLAS tiles) for comparison. GFLOP/s counts
the useful causal work, 2·B·H·T²·d (QKᵀ and PV, each half a T×T×d product), against the
machine's float32 matmul rate: a batched (T, d) @ (d, T) product of the same shape ("matched")
and a 2048³ square one ("peak"). Prints a table and writes bench/results/attention_kernels.json
(attention_kernels_<n>thread.json for ``--threads`` n other than 2).
"""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np
from _common import machine, median_time, run_child, write

SHAPES = [(8, 4, 512, 16), (8, 4, 2048, 64)]
BACKENDS = ["satsim", "satsim-1thread", "satsim-fused", "satsim-fused-1thread", "torch-sdpa",
            "torch-saturated", "numpy-saturated", "matmul"]


def inputs(B, H, T, d, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((B, H, T, d)).astype(np.float32) for _ in range(3)]


def numpy_saturated(q, k, v, atol, rtol):
    """Saturated causal attention with BLAS: scores matrix, max, mask, tie weights, matmul."""
    T, d = q.shape[-2:]
    scores = (q @ np.swapaxes(k, -1, -2)) * np.float32(1 / np.sqrt(d))
    causal = np.tril(np.ones((T, T), dtype=bool))
    scores = np.where(causal, scores, -np.inf)
    best = scores.max(axis=-1, keepdims=True)
    ties = scores >= best - (atol + rtol * np.abs(best))
    weights = ties / ties.sum(axis=-1, keepdims=True, dtype=np.float32)
    return weights.astype(np.float32) @ v


def child(backend: str, B, H, T, d, threads, repeats) -> dict:
    q, k, v = inputs(B, H, T, d)
    if backend.startswith("satsim"):
        import numba

        from satsim.engine.attend import saturated_attention
        from satsim.engine.kernels import tiles

        numba.set_num_threads(threads)
        if backend.startswith("satsim-fused"):
            tiles.TILE_SCORES = 1 << 62
        seconds = median_time(lambda: saturated_attention(q, k, v, causal=True), repeats)
        return {"seconds": seconds, "path": "tiles" if T * T >= tiles.TILE_SCORES else "fused"}
    elif backend.startswith("torch"):
        import torch

        torch.set_num_threads(threads)
        tq, tk, tv = (torch.from_numpy(x) for x in (q, k, v))
        if backend == "torch-sdpa":
            fn = lambda: torch.nn.functional.scaled_dot_product_attention(  # noqa: E731
                tq, tk, tv, is_causal=True)
        else:
            causal = torch.ones(T, T, dtype=torch.bool).tril()

            def fn():
                s = (tq @ tk.transpose(-1, -2)) / d**0.5
                s = s.masked_fill(~causal, float("-inf"))
                best = s.amax(dim=-1, keepdim=True)
                ties = (s >= best - (1e-5 + 1e-5 * best.abs())).float()
                return (ties / ties.sum(-1, keepdim=True)) @ tv
        with torch.inference_mode():
            seconds = median_time(fn, repeats)
    elif backend == "numpy-saturated":
        seconds = median_time(lambda: numpy_saturated(q, k, v, 1e-5, 1e-5), repeats)
    else:  # matmul rates
        kt = np.ascontiguousarray(np.swapaxes(k, -1, -2))
        matched = median_time(lambda: q @ kt, repeats)
        a = np.random.default_rng(1).standard_normal((2048, 2048)).astype(np.float32)
        square = median_time(lambda: a @ a, repeats)
        return {"matched_gflops": 2 * B * H * T * T * d / matched / 1e9,
                "peak_gflops": 2 * 2048**3 / square / 1e9}
    return {"seconds": seconds}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--child", nargs=5, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        backend, *shape = args.child
        print(json.dumps(child(backend, *map(int, shape), args.threads, args.repeats)))
        return
    rows = []
    for B, H, T, d in SHAPES:
        row = {"B": B, "H": H, "T": T, "d": d}
        for backend in BACKENDS:
            threads = 1 if backend.endswith("-1thread") else args.threads
            result = run_child(__file__, ["--child", backend, str(B), str(H), str(T), str(d),
                                          "--threads", str(threads), "--repeats",
                                          str(args.repeats)], threads)
            row[backend] = result
        flops = 2 * B * H * T * T * d
        row["satsim_gflops"] = flops / row["satsim"]["seconds"] / 1e9
        rows.append(row)
        ms = {b: row[b]["seconds"] * 1e3 for b in BACKENDS if b != "matmul"}
        print(f"T={T:5} d={d:3}  " + "  ".join(f"{b} {t:.2f} ms" for b, t in ms.items()))
        print(f"  satsim path: {row['satsim']['path']}; tiles vs fused "
              f"{ms['satsim-fused'] / ms['satsim']:.2f}× ({args.threads} threads), "
              f"{ms['satsim-fused-1thread'] / ms['satsim-1thread']:.2f}× (1 thread)")
        print(f"  satsim {row['satsim_gflops']:.1f} GFLOP/s; matmul matched "
              f"{row['matmul']['matched_gflops']:.1f}, peak {row['matmul']['peak_gflops']:.1f}; "
              f"speed-up vs SDPA {ms['torch-sdpa'] / ms['satsim']:.2f}×, vs NumPy "
              f"{ms['numpy-saturated'] / ms['satsim']:.2f}×")
    name = "attention_kernels" if args.threads == 2 else f"attention_kernels_{args.threads}thread"
    path = write(name, {"machine": machine(), "threads": args.threads,
                                       "repeats": args.repeats, "rows": rows})
    print(f"wrote {path}", file=sys.stderr)


if __name__ == "__main__":
    main()
