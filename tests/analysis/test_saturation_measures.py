"""Representation similarity (Figure 4), homogeneity curves (Figure 5), and their helpers."""

import numpy as np

from satsim.analysis.measures import (
    flat_cosine,
    homogeneity_curve,
    representation_similarity,
    row_cosines,
    token_cosine,
)
from satsim.papers.homogeneity import EncoderSizes, random_encoder
from tests.support.helpers import random_spec


def test_cosines_of_rows_handle_zero_rows_and_scale():
    a = np.array([[1.0, 0.0], [0.0, 0.0], [0.0, 0.0], [1e200, 1e200]])
    b = np.array([[2.0, 0.0], [0.0, 0.0], [1.0, 1.0], [1e-200, 1e-200]])
    np.testing.assert_allclose(row_cosines(a, b), [1.0, 1.0, 0.0, 1.0])
    assert token_cosine(a[None], b[None], [2]) == 1.0
    assert abs(flat_cosine([1.0, 0.0], [1.0, 1.0]) - np.sqrt(0.5)) < 1e-15


def test_representation_similarity_is_one_at_c_one_and_the_embedding_stays_linear():
    spec = random_spec(0, norm="post", d_model=16, d_head=8, d_mlp=16)
    strings = ["abab", "bba"]
    assert np.allclose(representation_similarity(spec, strings, 1.0, device="cpu"), 1.0)
    far = representation_similarity(spec, strings, 1000.0, device="cpu")
    assert abs(far[0] - 1.0) < 1e-12 and min(far[1:]) < 0.99  # only the embedding is linear


def test_a_tiny_homogeneity_experiment_rises_toward_the_reference():
    strings = ["0123456789", "9876543210", "5555512345"]
    scales = [1.0, 2.0, 5.0, 10.0, 1000.0]
    sizes = EncoderSizes(layers=2, d_model=32, heads=4, d_ff=16)
    for norm in ("post", "pre"):
        for causal in (True, False):
            spec = random_encoder(sizes, 0, norm=norm, causal=causal)
            curve = homogeneity_curve(spec, strings, scales, 1000.0, device="cpu")
            assert curve[0] < curve[3] < 1.0 and abs(curve[-1] - 1.0) < 1e-12, (norm, causal)
