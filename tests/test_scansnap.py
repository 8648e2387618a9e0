"""Scan and Snap: the data, the model, batched SGD, the measures and the published claims."""

import json
import subprocess
import sys

import numpy as np
import pytest

from satsim.scansnap import measures
from satsim.scansnap.data import DISTINCT_WEIGHTS, Task, sample_batch
from satsim.scansnap.saturation import sequence_ties, token_ties
from satsim.scansnap.snap import NOT_SNAPPED, composition_change, snap_point

torch = pytest.importorskip("torch")

from satsim.scansnap.grid import GRIDS, run_grid  # noqa: E402
from satsim.scansnap.model import next_token_logits, position_logits  # noqa: E402
from satsim.scansnap.train import (  # noqa: E402
    Setting,
    initial_parameters,
    seed_batches,
    train,
)

# 0.999 quantiles of chi-square for the degrees of freedom used below
CHI2_999 = {3: 16.266, 19: 43.820}


pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def small_grid():
    """The small grid (K 1 and 3, η_Z 0.5 and 2, r 1 and 5), 6 seeds, 100 iterations."""
    return run_grid(GRIDS["small"], seeds=6)


@pytest.fixture(scope="module")
def small_grid_zero():
    """The small grid from zero initialisation, 4 seeds: no initial noise in z."""
    return run_grid(GRIDS["small"], seeds=4, zero_init=True)


# ---------------------------------------------------------------- data


def test_task_layout():
    task = Task(3)
    assert (task.n_next, task.n_context, task.n_slots) == (6, 70, 20)
    assert task.slot_tokens[4].tolist() == list(range(10)) + list(range(50, 60))
    np.testing.assert_allclose(task.conditional.sum(axis=1), 1.0)
    np.testing.assert_allclose(task.conditional[4, 50:60] * 15.5, DISTINCT_WEIGHTS)
    np.testing.assert_allclose(task.conditional[:, :10] * 15.5, 1.0)
    assert task.query_of(np.arange(6)).tolist() == [0, 0, 1, 1, 2, 2]


def test_context_tokens_follow_the_conditional_distribution():
    task = Task(2)
    batch = sample_batch(np.random.default_rng(123), task, 4000)
    assert batch.context.shape == (4000, 127)
    assert (batch.queries == batch.next_tokens // 2).all()
    sequences = batch.sequences(task)
    assert sequences.shape == (4000, 128)
    assert (sequences[:, -1] == task.n_context + batch.queries).all()
    assert (batch.context < task.n_context).all()       # the query never attends to itself
    labels = np.bincount(batch.next_tokens, minlength=task.n_next)
    expected = np.full(task.n_next, 4000 / task.n_next)
    assert ((labels - expected) ** 2 / expected).sum() < CHI2_999[task.n_next - 1]
    counts = batch.token_counts(task)
    for n in range(task.n_next):
        observed = counts[batch.next_tokens == n].sum(axis=0)
        p = task.conditional[n]
        assert observed[p == 0].sum() == 0               # nothing outside n's 20 tokens
        expected = observed.sum() * p[p > 0]
        chi2 = ((observed[p > 0] - expected) ** 2 / expected).sum()
        assert chi2 < CHI2_999[19], (n, chi2)
    np.testing.assert_array_equal(batch.slot_counts(task).sum(axis=1), 127)


def test_bad_task_and_batch_are_rejected():
    from satsim.errors import SatsimError

    with pytest.raises(SatsimError):
        Task(0)
    with pytest.raises(SatsimError):
        sample_batch(np.random.default_rng(0), Task(1), 0)


# ---------------------------------------------------------------- model and SGD


def _reference_run(task, setting, seed, iters, batch):
    """One run the plain way: nn.Parameters, a position-wise forward, two torch.optim.SGD."""
    z0, y0 = initial_parameters(task, seed)
    z = torch.nn.Parameter(torch.tensor(z0))
    y = torch.nn.Parameter(torch.tensor(y0))
    opt_z = torch.optim.SGD([z], lr=setting.eta_z, momentum=0.9)
    opt_y = torch.optim.SGD([y], lr=setting.eta_y, momentum=0.9)
    history = [z.detach().clone().numpy()]
    for b in seed_batches(task, seed, iters, batch)[:iters]:
        logits = position_logits(z, y, torch.tensor(b.queries), torch.tensor(b.context))
        loss = torch.nn.functional.cross_entropy(logits, torch.tensor(b.next_tokens))
        opt_z.zero_grad()
        opt_y.zero_grad()
        loss.backward()
        opt_z.step()
        opt_y.step()
        history.append(z.detach().clone().numpy())
    return np.stack(history), y.detach().numpy()


def test_count_forward_equals_position_forward():
    task = Task(2)
    rng = np.random.default_rng(5)
    z = torch.tensor(rng.normal(size=(task.n_queries, task.n_context)))
    y = torch.tensor(rng.normal(size=(task.n_next, task.n_context)))
    b = sample_batch(rng, task, 32)
    by_position = position_logits(z, y, torch.tensor(b.queries), torch.tensor(b.context))
    tokens = torch.tensor(task.slot_tokens[b.next_tokens])
    counts = torch.tensor(b.slot_counts(task), dtype=torch.float64)
    by_count = next_token_logits(z[None, None], y[None, None], torch.tensor(b.queries)[None],
                                 tokens[None], counts[None])
    torch.testing.assert_close(by_count[0, 0], by_position, rtol=1e-12, atol=1e-12)


def test_batched_training_equals_independent_torch_sgd_runs():
    task, iters, batch = Task(2), 6, 16
    settings = [Setting(0.5, 1.0), Setting(3.0, 10.0)]
    runs = train(task, settings, [0, 7], iters=iters, batch=batch, keep_z=True)
    for i, setting in enumerate(settings):
        for j, seed in enumerate([0, 7]):
            z_history, y_final = _reference_run(task, setting, seed, iters, batch)
            np.testing.assert_allclose(runs.z_history[i, j], z_history, rtol=1e-10, atol=1e-12)
            np.testing.assert_allclose(runs.y[i, j], y_final, rtol=1e-10, atol=1e-12)
    assert not np.allclose(runs.z[0, 0], runs.z[1, 0])   # the settings really differ
    # the recorded per-iteration change is the TV change of the composition history
    comp = measures.composition(measures.token_logits(runs.z_history, task),
                                task.slot_weights)
    np.testing.assert_allclose(runs.change, composition_change(comp), atol=1e-14)


def test_zero_init_entropy_at_iteration_zero_is_analytic():
    p = np.arange(1, 11) / 55.0
    analytic = float(-(p * np.log(p)).sum())
    assert measures.uniform_distinct_entropy() == pytest.approx(analytic, abs=1e-15)
    for k in (1, 3):
        runs = train(Task(k), [Setting(1.0, 2.0)], [0, 1], iters=1, batch=8, zero_init=True)
        assert np.abs(runs.distinct_entropy[..., 0] - analytic).max() <= 1e-15
        np.testing.assert_allclose(runs.distinct_share[..., 0], 5.5 / 15.5, rtol=1e-15)


# ---------------------------------------------------------------- measures


def test_snap_point_definition():
    changes = np.array([[0.1, 0.01, 1e-4, 1e-4],      # last change >= ε at t = 2
                        [0.1, 0.1, 0.1, 0.1],          # still moving at the end
                        [0.0, 0.0, 0.0, 0.0],          # never moved
                        [0.1, 0.0, 0.1, 0.0]])         # a late kick counts
    assert snap_point(changes, 1e-3).tolist() == [2, NOT_SNAPPED, 0, 3]
    with pytest.raises(ValueError):
        snap_point(changes, 0.0)


def test_saturation_view_on_known_logits():
    gaps, sizes = token_ties(np.zeros((3, 20)))
    assert gaps.tolist() == [0.0] * 3 and sizes.tolist() == [20] * 3
    z = np.zeros(20)
    z[19], z[18] = 2.0, 1.5
    gaps, sizes = token_ties(z)
    assert gaps == pytest.approx(0.5) and sizes == 1
    counts = np.full(20, 6)
    counts[19], counts[:9] = 4, 7                      # 127 positions
    seq = sequence_ties(z, counts)
    assert seq["support"] == 4
    soft = measures.position_weights(z, counts)
    assert (counts * soft).sum() == pytest.approx(1.0)
    assert seq["tv"] == pytest.approx(1.0 - 4 * soft[19])
    uniform = sequence_ties(np.zeros(20), counts)
    assert uniform["support"] == 127 and uniform["tv"] == pytest.approx(0.0, abs=1e-15)
    assert uniform["soft_support"] == pytest.approx(127.0)


# ---------------------------------------------------------------- the published claims


def test_attention_moves_from_common_to_distinct_tokens(small_grid):
    for cell in small_grid.cells:
        assert (cell.initial_distinct_share < 0.40).all()
        assert (cell.distinct_share > cell.initial_distinct_share + 0.1).all(), cell.to_dict()


def test_distinct_tokens_are_ordered_by_co_occurrence(small_grid, small_grid_zero):
    for cell in small_grid_zero.cells:                 # mean final z strictly increasing
        assert (np.diff(cell.z_distinct) > 0).all(), (cell.n_queries, cell.eta_z, cell.ratio)
        assert (cell.z_order > 0.9).all()              # and nearly so in every run
    for cell in small_grid.cells:                      # the random init blurs single runs
        assert cell.z_order.mean() > 0.7, cell.z_order
        assert np.corrcoef(cell.z_distinct, DISTINCT_WEIGHTS)[0, 1] > 0.9
    for cell in small_grid.cells + small_grid_zero.cells:
        assert (cell.z_distinct > cell.z_common).all()


def test_attention_does_not_become_one_hot(small_grid):
    for cell in small_grid.cells:
        assert (cell.entropy > 1.0).all()              # uniform over distinct tokens: 2.15
        sat = cell.saturation
        assert sat["max_weight"] < 0.1                 # no position carries most of the weight
        assert sat["soft_support"] > 4 * sat["support"]
        assert sat["tv"] > 0.3                         # far from argmax-uniform attention
        assert (cell.snap != NOT_SNAPPED).all()        # ... because it froze ("snapped")


def test_larger_eta_z_gives_lower_entropy(small_grid):
    grid = small_grid.grid
    for k in grid.n_queries:
        for r in grid.ratio:
            means = [small_grid.cell(k, e, r).entropy.mean() for e in grid.eta_z]
            assert means == sorted(means, reverse=True) and means[0] > means[-1], (k, r, means)


# ---------------------------------------------------------------- command line


def _main(args, capsys):
    from satsim.cli import main

    old = sys.argv
    sys.argv = ["satsim", *args]
    try:
        with pytest.raises(SystemExit) as stop:
            main()
    finally:
        sys.argv = old
    return stop.value.code, capsys.readouterr()


@pytest.mark.parametrize("args, message", [
    (["--grid", "huge"], "huge"),
    (["--seeds", "-3"], "seeds"),
    (["--device", "tpu7"], "device"),
    (["--trace", "3,one,5"], "trace"),
    (["--trace", "0,1,5"], "trace"),
])
def test_bad_input_is_a_one_line_error_with_exit_2(args, message, capsys):
    code, out = _main(["scan-snap", *args], capsys)
    assert code == 2
    assert message in out.err and out.out == ""


def test_cli_json_grid_and_plots(tmp_path, capsys):
    from satsim.cli import cli

    with pytest.raises(SystemExit) as stop:
        cli.main(["scan-snap", "--grid", "small", "--seeds", "2", "--iters", "30", "--device",
                  "cpu", "--threads", "1", "--json", "--plot", str(tmp_path)],
                 standalone_mode=True)
    assert stop.value.code == 0
    report = json.loads(capsys.readouterr().out)
    assert report["grid"] == "small" and report["seeds"] == 2 and len(report["cells"]) == 8
    cell = report["cells"][0]
    assert len(cell["entropy"]) == 2 and len(cell["entropy_curve"]) == 31
    assert {"tie_gap", "tv", "support"} <= set(cell["saturation"])
    assert len(report["plots"]) == 4
    for path in report["plots"]:
        with open(path, "rb") as f:
            assert f.read(8) == b"\x89PNG\r\n\x1a\n"


def test_cli_trace_table(tmp_path, capsys):
    from satsim.cli import cli

    with pytest.raises(SystemExit) as stop:
        cli.main(["scan-snap", "--trace", "2,1,5", "--seeds", "2", "--iters", "20", "--threads",
                  "1", "--plot", str(tmp_path)], standalone_mode=True)
    assert stop.value.code == 0
    out = capsys.readouterr().out
    assert "snap point" in out and "saturation view" in out
    arrays = np.load(tmp_path / "scan_snap_trace.npz")
    assert arrays["z_history"].shape == (2, 21, 2, 50)
    assert (tmp_path / "scan_snap_trace.png").stat().st_size > 1000


def test_command_module_imports_neither_torch_nor_matplotlib():
    code = ("import sys, satsim.commands.scan_snap, satsim.scansnap.saturation\n"
            "assert 'torch' not in sys.modules and 'matplotlib' not in sys.modules\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
