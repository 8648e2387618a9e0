"""Homogeneity curves under the authors' protocol and under standard models, over seeds.

Per seed: one random weight draw and one batch of random sequences, shared by every model of
that seed; per model, the cosine of the encoder output (every sequence, position and dimension
flattened into one vector, as the authors' script does) at cθ against 1000θ, for c on the
authors' grid. Over seeds: the mean, the minimum and the maximum at each c.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

import numpy as np

from satsim.papers.homogeneity.encoders import EncoderSizes, arranged, random_encoder

if TYPE_CHECKING:
    from satsim.model.spec import ModelSpec
    from satsim.soft import SoftTransformer

SCALES = tuple(float(c) for c in np.linspace(1, 10, 20))
"""The authors' grid of c (``np.linspace(1, 10, 20)``)."""
REFERENCE_C = 1000.0
"""The scale standing in for saturation (their ``saturate`` default)."""


@dataclass(frozen=True)
class Variant:
    """One curve's model: its arrangement and attention mask."""

    arrangement: str  # post: LN(x + f(x)); pre: x + f(LN x), final LN; ln-of-branch: LN(f(x)) + x
    mask: str  # multiplicative (future scores × 0), causal, bidirectional


PROTOCOLS: dict[str, tuple[Variant, ...]] = {
    "authors": (Variant("post", "multiplicative"), Variant("ln-of-branch", "multiplicative")),
    "standard": tuple(Variant(arrangement, mask) for arrangement in ("post", "pre")
                      for mask in ("causal", "bidirectional")),
}


@dataclass(frozen=True)
class Curve:
    """One model's homogeneity curve over seeds: per c, the mean, least and largest cosine."""

    arrangement: str
    mask: str
    c: list[float]
    cosine_mean: list[float]
    cosine_min: list[float]
    cosine_max: list[float]
    per_seed: list[list[float]]

    def to_dict(self) -> dict:
        """The JSON form (the contract's keys, plus every seed's curve)."""
        return asdict(self)


def build_twin(variant: Variant, encoder: ModelSpec, seed: int, device: str,
               dtype: str) -> SoftTransformer:
    """The soft twin (or the authors' variant of it) of seed ``seed``'s random ``encoder``."""
    from satsim.papers.homogeneity.authors import AuthorsTwin
    from satsim.soft import SoftTransformer

    norm = "pre" if variant.arrangement == "pre" else "post"
    spec = arranged(encoder, seed, norm=norm, causal=variant.mask != "bidirectional")
    if variant.mask == "multiplicative" or variant.arrangement == "ln-of-branch":
        return AuthorsTwin(spec, arrangement=variant.arrangement, device=device, dtype=dtype,
                           multiplicative_mask=variant.mask == "multiplicative")
    return SoftTransformer(spec, device=device, dtype=dtype)


def random_sequences(sizes: EncoderSizes, seed: int) -> list[str]:
    """The seed's batch: ``sequences`` strings of ``length`` uniform random tokens."""
    rng = np.random.default_rng([seed, 1])  # a stream apart from the weights'
    tokens = rng.integers(0, sizes.vocab, (sizes.sequences, sizes.length))
    return ["".join(str(t) for t in row) for row in tokens]


def seed_curve(variant: Variant, sizes: EncoderSizes, seed: int,
               scales: Sequence[float] = SCALES,
               reference: float = REFERENCE_C, *, device: str = "auto",
               dtype: str = "float64", encoder: ModelSpec | None = None) -> list[float]:
    """One seed's curve: pooled output cosine at each c against ``reference``.

    ``encoder`` is the seed's random encoder when the caller has drawn it already.
    """
    from satsim.analysis.measures import final_output, flat_cosine

    if encoder is None:
        encoder = random_encoder(sizes, seed, norm="post", causal=True)
    twin = build_twin(variant, encoder, seed, device, dtype)
    strings = random_sequences(sizes, seed)

    def output(c: float) -> np.ndarray:
        return final_output(twin.scaled(c).run(strings))

    target = output(reference)
    return [flat_cosine(output(c), target) for c in scales]  # pooled over the whole batch


def homogeneity_curves(protocol: str, seeds: int, sizes: EncoderSizes | None = None, *,
                       first_seed: int = 0, device: str = "auto", dtype: str = "float64",
                       on_curve: Callable[[], None] | None = None) -> list[Curve]:
    """The protocol's curves over seeds ``first_seed`` .. ``first_seed + seeds - 1``."""
    sizes = sizes or EncoderSizes()
    if protocol not in PROTOCOLS:
        raise ValueError(f"unknown protocol {protocol!r}; known: {list(PROTOCOLS)}")
    if seeds < 1:
        raise ValueError("give at least one seed")
    variants = PROTOCOLS[protocol]
    runs: dict[Variant, list[list[float]]] = {variant: [] for variant in variants}
    for seed in range(first_seed, first_seed + seeds):
        encoder = random_encoder(sizes, seed, norm="post", causal=True)  # one draw per seed
        for variant in variants:
            runs[variant].append(seed_curve(variant, sizes, seed, device=device, dtype=dtype,
                                            encoder=encoder))
            if on_curve is not None:
                on_curve()
    curves = []
    for variant in variants:
        table = np.array(runs[variant])
        curves.append(Curve(variant.arrangement, variant.mask, list(SCALES),
                            table.mean(axis=0).tolist(), table.min(axis=0).tolist(),
                            table.max(axis=0).tolist(), runs[variant]))
    return curves
