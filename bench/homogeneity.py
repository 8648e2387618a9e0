"""Homogeneity curves of randomly initialised encoders (seed 001, appendix B.1, Figure 5).

Run: python bench/homogeneity.py [--device auto|cpu|cuda] [--layers 12] [--d-model 768]
Writes bench/results/homogeneity.json and bench/results/homogeneity.png and prints the table.

Setup, as in the paper: encoders of 12 layers, d_model 768, 12 heads, feed-forward 512,
vocabulary 10; 10 random sequences of length 10; post-norm LN(x + f(x)) and pre-norm
x + f(LN x) (with a final LayerNorm), each with and without linear biases. The measure is the
cosine of the flattened final output at c against c = 1000, for 20 values of c in [1, 10], averaged
over the sequences. Initialisation follows PyTorch's defaults: token embedding N(0, 1), every
linear map and its bias U(-1/√fan_in, 1/√fan_in), LayerNorm γ = 1 and β = 0; bidirectional
attention, no positional information (the paper does not say which it used). float64 throughout.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import numpy as np

from satsim.spec import (
    AttentionSpec,
    BlockSpec,
    FeedForwardSpec,
    LayerNormSpec,
    ModelSpec,
    OutputSpec,
)

RESULTS = Path(__file__).parent / "results"
VOCAB = tuple("0123456789")


def random_encoder(norm: str, biases: bool, *, layers: int, d_model: int, heads: int,
                   d_mlp: int, seed: int) -> ModelSpec:
    """A randomly initialised encoder spec with PyTorch's default initialisation."""
    rng = np.random.default_rng(seed)
    d_head = d_model // heads

    def uniform(fan_in, *shape):
        bound = 1 / np.sqrt(fan_in)
        return rng.uniform(-bound, bound, shape)

    def bias(fan_in, *shape):
        return uniform(fan_in, *shape) if biases else None

    def ln():
        return LayerNormSpec(w=np.ones(d_model), b=np.zeros(d_model))

    blocks = []
    for _ in range(layers):
        qkv = [uniform(d_model, heads, d_model, d_head) for _ in range(3)]
        attn = AttentionSpec(
            W_Q=qkv[0], W_K=qkv[1], W_V=qkv[2], W_O=uniform(d_model, heads, d_head, d_model),
            b_Q=bias(d_model, heads, d_head), b_K=bias(d_model, heads, d_head),
            b_V=bias(d_model, heads, d_head), b_O=bias(d_model, d_model), causal=False)
        mlp = FeedForwardSpec(W_in=uniform(d_model, d_model, d_mlp),
                              W_out=uniform(d_mlp, d_mlp, d_model),
                              b_in=bias(d_model, d_mlp), b_out=bias(d_mlp, d_model))
        blocks.append(BlockSpec(attn=attn, mlp=mlp, ln1=ln(), ln2=ln()))
    return ModelSpec(
        vocab=VOCAB, W_E=rng.standard_normal((len(VOCAB), d_model)), blocks=tuple(blocks),
        output=OutputSpec(W_U=uniform(d_model, d_model, 1)), norm=norm,
        ln_final=ln() if norm == "pre" else None,
        name=f"{norm}-norm {'with' if biases else 'without'} biases")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="auto")
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--d-model", type=int, default=768)
    parser.add_argument("--heads", type=int, default=12)
    parser.add_argument("--d-mlp", type=int, default=512)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=str(RESULTS / "homogeneity"))
    args = parser.parse_args()

    import torch

    from satsim.saturation.measures import homogeneity_curve
    from satsim.soft import resolve_device

    device = resolve_device(args.device)
    where = torch.cuda.get_device_name(device) if device.type == "cuda" else platform.machine()
    rng = np.random.default_rng(args.seed)
    strings = ["".join(rng.choice(list(VOCAB), 10)) for _ in range(10)]
    scales = [float(c) for c in np.linspace(1, 10, 20)]
    curves, seconds = {}, {}
    for norm in ("post", "pre"):
        for biases in (True, False):
            spec = random_encoder(norm, biases, layers=args.layers, d_model=args.d_model,
                                  heads=args.heads, d_mlp=args.d_mlp, seed=args.seed)
            start = time.perf_counter()
            curves[spec.name] = homogeneity_curve(spec, strings, scales, 1000.0,
                                                  device=str(device), dtype="float64")
            seconds[spec.name] = time.perf_counter() - start
    print(f"cosine of the final output at c vs c = 1000 ({args.layers} layers, d_model "
          f"{args.d_model}, {args.heads} heads, d_mlp {args.d_mlp}; device {device} {where})")
    print(f"{'c':>6} " + " ".join(f"{name:>26}" for name in curves))
    for index, c in enumerate(scales):
        print(f"{c:>6.2f} " + " ".join(f"{curve[index]:>26.4f}" for curve in curves.values()))
    report = {"setup": {"layers": args.layers, "d_model": args.d_model, "heads": args.heads,
                        "d_mlp": args.d_mlp, "vocab": len(VOCAB), "sequences": len(strings),
                        "length": 10, "reference_c": 1000.0, "seed": args.seed,
                        "dtype": "float64", "device": f"{device} {where}",
                        "torch_threads": torch.get_num_threads()},
              "scales": scales, "curves": curves, "seconds": seconds}
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(report, indent=2))
    _plot(scales, curves, out.with_suffix(".png"))
    print(f"wrote {out.with_suffix('.json')} and {out.with_suffix('.png')}")


def _plot(scales, curves, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for name, curve in curves.items():
        ax.plot(scales, curve, marker="o", markersize=3, label=name)
    ax.set(xlabel="c", ylabel="cosine with the model at c = 1000",
           title="Homogeneity curves of random encoders (seed 001, Fig. 5)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    main()
