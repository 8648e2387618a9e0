"""satsim projection: the gradient projection cθᵀ∇L of sublayers at forced accuracy (seed 001 §4.2).

Small sizes (n = 64 inputs, a short scale grid) keep this file fast; bench/projection.py runs the
paper's grid.
"""

import json
import math
import subprocess
import sys

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from satsim.papers.projection import VARIANTS, LabelNoise, build_probe, mistakes, projection_grid
from satsim.papers.projection.experiment import draw_inputs, first_positive
from satsim.papers.projection.gradient import (
    SignedValue,
    loss_at,
    projection_autograd,
    projection_terms,
    scaled_parameters,
)
from tests.support.helpers import invoke_satsim

SCALES = [1, 2, 3, 5, 8, 13, 21, 34, 55, 1000]
N = 64


pytestmark = pytest.mark.usefixtures("one_torch_thread")


ACCURACIES = [0.75, 0.8, 0.85, 0.9, 0.95, 1.0]


@pytest.fixture(scope="module")
def grids():
    """Seed 0, every variant, the default (fixed affine head): a short scale and accuracy grid."""
    return {v: projection_grid(v, SCALES, ACCURACIES, seed=0, n=N) for v in VARIANTS}


@pytest.fixture(scope="module")
def scaled_head_grids():
    """The same with the head in θ (scaled with the sublayer)."""
    return {v: projection_grid(v, SCALES, ACCURACIES, seed=0, n=N, scale_head=True)
            for v in VARIANTS}


@pytest.mark.parametrize("variant", list(VARIANTS))
@pytest.mark.parametrize("c", [1.0, 3.0])
@pytest.mark.parametrize("scale_head", [True, False])
def test_projection_is_the_derivative_of_the_loss_along_theta(variant, c, scale_head):
    probe = build_probe(variant, hidden=6, classes=5, seed=3)
    inputs = draw_inputs(24, 6, seed=3)
    noise = LabelNoise.draw(24, 5, seed=3)
    terms = projection_terms(probe, inputs, c, scale_head)
    labels = noise.labels(terms.argmax, 0.75)
    x = torch.as_tensor(inputs) * c

    def loss(t):
        return float(loss_at(probe, scaled_parameters(probe, c * t, scale_head), x, labels))

    eps = 1e-6
    finite_difference = (loss(1 + eps) - loss(1 - eps)) / (2 * eps)
    forward_mode = terms.projection(labels).value
    reverse_mode = projection_autograd(probe, inputs, c, labels, scale_head)
    assert forward_mode == pytest.approx(reverse_mode, rel=1e-9, abs=1e-12)
    assert forward_mode == pytest.approx(finite_difference, rel=1e-5, abs=1e-8)


def test_the_head_is_fixed_and_outside_theta_by_default():
    probe = build_probe("ffn", seed=0)
    params = scaled_parameters(probe, 7.0)
    assert torch.equal(params["head.weight"], probe.head.weight.detach())
    assert torch.allclose(params["sublayer.first.weight"], 7 * probe.sublayer.first.weight)


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_at_full_accuracy_negative_at_every_c_and_tending_to_zero(grids, variant):
    run = grids[variant]
    curve, signs = run.curve(1.0), run.curve_signs(1.0)
    peak = np.abs(curve).max()
    assert (signs < 0).all()
    assert math.isinf(run.c_star(1.0))
    after_peak = np.abs(curve[np.abs(curve).argmax():])
    assert (np.diff(after_peak) <= 0).all()            # shrinks from its peak on
    assert abs(curve[SCALES.index(55)]) < 0.25 * peak
    assert abs(curve[-1]) < 0.01 * peak                # c = 1000


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_head_in_theta_negative_at_small_c_with_only_small_positive_blips(scaled_head_grids,
                                                                           variant):
    run = scaled_head_grids[variant]
    curve, signs = run.curve(1.0), run.curve_signs(1.0)
    peak = np.abs(curve).max()
    assert (signs[:3] < 0).all()                       # c = 1, 2, 3
    assert abs(curve[SCALES.index(55)]) < 1e-2 * peak
    assert run.log10_abs[-1, -1] < np.log10(peak) - 5  # c = 1000: below 1e-5 of the peak
    assert curve.max() < 0.1 * peak                    # any positive blip stays small


def test_homogeneous_control_is_negative_at_every_scale():
    """Linear head, no biases, no residual: logits 2-homogeneous in θ (Theorem 2's setting)."""
    scales = list(range(1, 50)) + [1000]
    for seed in range(3):
        run = projection_grid("ffn-no-bias-no-residual", scales, [1.0], seed=seed, n=512,
                              scale_head=True, head_bias=False)
        assert (run.curve_signs(1.0) < 0).all(), seed
        assert abs(run.curve(1.0)[48]) < 0.05 * np.abs(run.curve(1.0)).max()
        assert math.isinf(run.c_star(1.0))


def test_homogeneous_control_projection_falls_as_accuracy_rises():
    """Nested mistake sets: for homogeneous logits each extra mistake adds k·margin ≥ 0."""
    accuracies = [0.75, 0.8, 0.85, 0.9, 0.95, 1.0]
    run = projection_grid("ffn-no-bias-no-residual", SCALES, accuracies, seed=1, n=N,
                          scale_head=True, head_bias=False)
    assert (np.diff(run.values, axis=0) <= 1e-12).all()
    c_star = [run.c_star(a) for a in accuracies]
    assert c_star == sorted(c_star) and math.isinf(c_star[-1])


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_at_80_percent_positive_from_a_small_scale_on_and_growing(grids, variant):
    run = grids[variant]
    c_star = run.c_star(0.8)
    assert c_star <= 5
    curve = run.curve(0.8)
    after = np.array(SCALES) >= c_star
    assert (curve[after] > 0).all()
    assert curve[SCALES.index(55)] > 2 * curve[SCALES.index(13)] > 0


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_equilibrium_norm_does_not_fall_as_accuracy_rises(grids, variant):
    run = grids[variant]
    rho = [run.rho_star(a) for a in ACCURACIES]
    assert all(np.isfinite(rho[:-1])) and math.isinf(rho[-1])
    assert rho == sorted(rho)
    assert rho[-2] > rho[0]


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 300), classes=st.integers(2, 12), seed=st.integers(0, 2**16),
       accuracy=st.floats(0, 1))
def test_labels_differ_from_the_argmax_exactly_round_n_times(n, classes, seed, accuracy):
    noise = LabelNoise.draw(n, classes, seed)
    predicted = np.random.default_rng(seed).integers(0, classes, size=n)
    labels = noise.labels(predicted, accuracy)
    wrong = labels != predicted
    assert wrong.sum() == mistakes(n, accuracy) == math.floor(n * (1 - accuracy) + 0.5 + 1e-9)
    assert ((labels >= 0) & (labels < classes)).all()
    # nested: every sample wrong at this accuracy is wrong at any lower one
    assert (noise.labels(predicted, accuracy / 2) != predicted)[wrong].all()


def test_mistake_counts_on_the_paper_grid():
    assert [mistakes(512, a) for a in (1.0, 0.975, 0.9, 0.8, 0.75)] == [0, 13, 51, 102, 128]


def test_signed_value_and_first_positive():
    assert SignedValue.difference(math.log(5), math.log(2), math.log(3)).value == pytest.approx(1)
    v = SignedValue.difference(-2000.0, -1999.0)
    assert v.sign == -1 and v.value == 0.0 and v.log10_abs < -800
    assert first_positive([1, 2, 3], [-1, 0, 2]) == 3 and math.isinf(first_positive([1], [-1]))


satsim = invoke_satsim  # the entry point, in this process


def test_cli_json_and_plot(tmp_path):
    plot = tmp_path / "fig.png"
    result = satsim("projection", "--variants", "ffn,attention-no-bias", "--n", "16",
                    "--seeds", "2", "--scales", "1-3,10", "--accuracies", "0.75,0.9",
                    "--json", "--plot", str(plot))
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["settings"]["accuracies"] == [0.75, 0.8, 0.9, 1.0]
    assert report["settings"]["scales"] == [1.0, 2.0, 3.0, 10.0]
    assert set(report["variants"]) == {"ffn", "attention-no-bias"}
    summary = report["variants"]["ffn"]["summary"]
    assert {"rho0", "equilibrium", "accuracy_1.0", "accuracy_0.8"} <= set(summary)
    seed = report["variants"]["ffn"]["seeds"][1]
    assert seed["seed"] == 1 and len(seed["rho_star"]) == 4 and len(seed["projection"]["1"]) == 4
    assert report["plots"] == [str(plot)] and plot.stat().st_size > 10_000


@pytest.mark.slow  # a fresh process
def test_the_figure_leaves_pyplot_and_the_backend_alone(tmp_path):
    # the raw rcParams entry: get_backend() would resolve it, importing pyplot
    code = ("import sys, matplotlib\n"
            "def backend(): return dict.__getitem__(matplotlib.rcParams, 'backend')\n"
            "before = backend()\n"
            "from satsim.papers.projection import projection_grid\n"
            "from satsim.papers.projection.experiment import ProjectionRun\n"
            "from satsim.papers.projection.plots import write_figure\n"
            "runs = {'ffn': [projection_grid('ffn', [1, 10], [0.8, 1.0], seed=0, n=16)]}\n"
            f"write_figure(ProjectionRun({{'n': 16}}, runs), {str(tmp_path / 'f.png')!r})\n"
            "assert 'matplotlib.pyplot' not in sys.modules, 'pyplot was imported'\n"
            "assert backend() == before, (before, backend())\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "f.png").stat().st_size > 10_000


@pytest.mark.parametrize("args, message", [
    (["--variants", "mlp"], "unknown variant 'mlp'"),
    (["--scales", "0,1"], "scales must be"),
    (["--accuracies", "0.5:x:1"], "bad accuracies"),
])
def test_cli_bad_input_is_one_line_and_exit_code_2(args, message):
    result = satsim("projection", "--n", "4", "--seeds", "1", *args)
    assert result.returncode == 2
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1
