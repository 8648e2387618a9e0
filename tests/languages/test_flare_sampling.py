"""FLaRe's binary-multiplication sampler (languages.flare_sampling) against FLaRe's own data.

tests/data/flare_binary_multiplication holds the first 1,000 lines of main.tok and labels.txt of
FLaRe's binary-multiplication training split (github.com/rycolab/flare at 6d8ac3c, cut with
``head -n 1000``): 485 positives drawn by FLaRe's sampler.
"""

import re

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import languages
from languages.flare_sampling import flare_product, sample_flare_products
from tests.support.paths import DATA

PUBLISHED = DATA / "flare_binary_multiplication"
SHAPE = re.compile(r"([01]+)\*([01]+)=([01]+)")
LANGUAGE = languages.get("binary-multiplication")


def published_positives() -> list[str]:
    lines = (PUBLISHED / "main.tok").read_text().splitlines()
    labels = (PUBLISHED / "labels.txt").read_text().split()
    return [line.replace(" ", "").replace("×", "*") for line, y in zip(lines, labels) if y == "1"]


def zero_operand(s: str) -> bool:
    x, y, _ = SHAPE.fullmatch(s).groups()
    return "1" not in x or "1" not in y


def answer_share(s: str) -> float:
    return len(SHAPE.fullmatch(s).group(3)) / (len(s) - 2)


def z_score(a: np.ndarray, b: np.ndarray) -> float:
    """Two-sample z statistic of the difference of the means of a and b."""
    spread = np.sqrt(a.var(ddof=1) / len(a) + b.var(ddof=1) / len(b))
    return float((a.mean() - b.mean()) / spread)


@settings(max_examples=200)
@given(st.integers(5, 80), st.integers(0, 2**32 - 1))
def test_flare_products_are_members_of_the_length_asked_for(length, seed):
    s = flare_product(length, np.random.default_rng(seed))
    assert len(s) == length and LANGUAGE.contains(s)


def test_flare_products_look_like_flares_data_and_uniform_positives_do_not():
    published = published_positives()
    assert len(published) == 485 and all(LANGUAGE.contains(s) for s in published)
    ours = sample_flare_products(4000, 0, 40, seed=3)
    uniform = LANGUAGE.sample_positive(4000, 0, 40, seed=3)
    assert all(LANGUAGE.contains(s) for s in ours) and {len(s) for s in ours} == set(range(5, 41))
    for statistic in (zero_operand, answer_share, len):
        theirs = np.array([statistic(s) for s in published], dtype=float)
        assert abs(z_score(np.array([statistic(s) for s in ours], dtype=float), theirs)) < 3.3
    zeros = np.array([zero_operand(s) for s in uniform], dtype=float)
    theirs = np.array([zero_operand(s) for s in published], dtype=float)
    assert zeros.mean() > 0.9 and z_score(zeros, theirs) > 10  # the uniform sampler's share
