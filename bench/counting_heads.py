"""Counting heads (scores constant for every query) as prefix means vs the generic kernel.

Run: python bench/counting_heads.py [--threads 1]. B = 8, H = 4, T = 2048, d = 64, float32, causal
saturated attention whose keys are one constant row per head (a zero key map W_K, keys = b_K), as
:func:`satsim.model.architecture.counting_heads` detects from the weights. Times the prefix-mean
path promised from the weights (``same_scores=True``), the same inputs with run-time detection, and
the generic per-query kernel forced on every item; checks all three agree. Prints a table and writes
bench/results/counting_heads.json.
"""

from __future__ import annotations

import argparse

import numpy as np
from _common import machine, median_time, write


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    import numba

    from satsim.engine.attend import attention
    from satsim.engine.kernels import queries as kernels
    from satsim.model.settings import default_tolerance

    numba.set_num_threads(args.threads)
    B, H, T, d = 8, 4, 2048, 64
    rng = np.random.default_rng(0)
    q = rng.standard_normal((B, H, T, d)).astype(np.float32)
    k = np.broadcast_to(rng.standard_normal((B, H, 1, d)), (B, H, T, d)).astype(np.float32)
    v = rng.standard_normal((B, H, T, d)).astype(np.float32)
    promised = lambda: attention(q, k, v, causal=True, same_scores=True)  # noqa: E731
    detected = lambda: attention(q, k, v, causal=True)  # noqa: E731
    atol, rtol = default_tolerance(np.float32)
    flat = [np.ascontiguousarray(x.reshape(B * H, T, d)) for x in (q, k, v)]
    mask = np.ones((B * H, T), dtype=bool)
    general = np.full(B * H, kernels.GENERAL, dtype=np.int64)
    generic = lambda: kernels.attend(*flat, mask, mask, True, kernels.SATURATED, 1.0,  # noqa: E731
                                     atol, rtol, 1 / np.sqrt(d), general)
    a, b, c = promised(), detected(), generic()
    np.testing.assert_array_equal(a.tie_size.reshape(B * H, T), c[1])
    np.testing.assert_array_equal(a.tie_size, b.tie_size)
    np.testing.assert_allclose(a.output.reshape(B * H, T, d), c[0], rtol=1e-5, atol=1e-6)
    times = {"prefix_mean_from_weights": median_time(promised, args.repeats),
             "prefix_mean_detected": median_time(detected, args.repeats),
             "generic_kernel": median_time(generic, max(1, args.repeats // 2))}
    for name, seconds in times.items():
        print(f"{name:26} {seconds * 1e3:10.2f} ms")
    speedup = times["generic_kernel"] / times["prefix_mean_from_weights"]
    print(f"speed-up of the prefix mean over the generic kernel: {speedup:,.0f}×")
    write("counting_heads", {"machine": machine(), "threads": args.threads,
                             "shape": {"B": B, "H": H, "T": T, "d": d},
                             "seconds": times, "speedup": speedup})


if __name__ == "__main__":
    main()
