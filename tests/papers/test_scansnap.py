"""Scan and Snap: the data, the model, batched SGD, the measures and the published claims."""

import json
import math
import subprocess
import sys

import numpy as np
import pytest

from satsim.papers.scan_snap import measures
from satsim.papers.scan_snap.data import DISTINCT_WEIGHTS, Task, sample_batch
from satsim.papers.scan_snap.saturation import sequence_ties, token_ties
from satsim.papers.scan_snap.snap import NOT_SNAPPED, composition_change, snap_point

torch = pytest.importorskip("torch")

from satsim.papers.scan_snap.grid import GRIDS, run_grid  # noqa: E402
from satsim.papers.scan_snap.model import next_token_logits, position_logits  # noqa: E402
from satsim.papers.scan_snap.trace import FIG4, fig4_task, run_trace  # noqa: E402
from satsim.papers.scan_snap.train import (  # noqa: E402
    Setting,
    initial_parameters,
    seed_batches,
    train,
)
from tests.support.paths import BENCH, DATA  # noqa: E402

AUTHORS_LOGS = json.loads((DATA / "scan_snap_authors_logs.json")
                          .read_text())["runs"]

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
    assert (task.n_next, task.n_context, task.n_slots, task.n_vocab) == (6, 70, 20, 79)
    assert task.query_token(2) == 72 and task.next_token_id(0) == 73
    assert task.slot_tokens[4].tolist() == list(range(10)) + list(range(50, 60))
    np.testing.assert_allclose(task.conditional.sum(axis=1), 1.0)
    np.testing.assert_allclose(task.conditional[4, 50:60] * 15.5, DISTINCT_WEIGHTS)
    np.testing.assert_allclose(task.conditional[:, :10] * 15.5, 1.0)
    assert task.query_of(np.arange(6)).tolist() == [0, 0, 1, 1, 2, 2]
    # the vocabulary of the paper's Figure 6: M = 10 + 23K
    assert [Task(k).n_vocab for k in (1, 3, 5, 10)] == [33, 79, 125, 240]


def test_layouts_match_the_authors_logged_facts():
    # figure_4.log and figure_6.log print each fact's tokens, query ("last") and next token
    fig4 = fig4_task()
    assert fig4.n_vocab == 34 and fig4.query_of(np.arange(2)).tolist() == [0, 1]
    assert fig4.slot_tokens.tolist() == [list(range(20)), list(range(10)) + list(range(20, 30))]
    assert fig4.query_token(np.arange(2)).tolist() == [30, 31]
    assert fig4.next_token_id(np.arange(2)).tolist() == [32, 33]
    fig6 = Task(1)
    assert fig6.query_token(0) == 30 and fig6.next_token_id(np.arange(2)).tolist() == [31, 32]
    np.testing.assert_allclose(fig6.slot_probabilities[[0, 10, 19]],
                               [0.0645, 0.0065, 0.0645], atol=5e-5)
    # per-query common tokens sit between the global commons and the distinct tokens
    task = Task(2, common_per_query=3, n_common=4)
    assert task.n_context == 4 + 6 + 40 and task.n_vocab == 50 + 2 + 4
    assert task.slot_tokens[3].tolist() == [0, 1, 2, 3, 7, 8, 9] + list(range(40, 50))


def test_context_tokens_follow_the_conditional_distribution():
    task = Task(2)
    batch = sample_batch(np.random.default_rng(123), task, 4000)
    assert batch.context.shape == (4000, 127)
    assert (batch.queries == batch.next_tokens // 2).all()
    sequences = batch.sequences(task)
    assert sequences.shape == (4000, 128)
    assert (sequences[:, -1] == task.query_token(batch.queries)).all()
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
    with pytest.raises(SatsimError):
        Task(2, next_per_query=0)
    with pytest.raises(SatsimError, match="loss"):
        initial_parameters(Task(1), 0, loss="two-way")


# ---------------------------------------------------------------- model and SGD


def _authors_layout_run(task, setting, seed, iters, batch):
    """One run as the authors' Model2 is written: M×M matrices Z and Y over one-hot sequences.

    The query (last token) attends to the 127 context positions with logit Z[query, token]; the
    output is Y f over the whole vocabulary; two torch.optim.SGD. Entries of Z and Y that the
    compact trainer does not store start at other random values, to show they never matter.
    """
    M, L = task.n_vocab, task.n_context
    z0, y0 = initial_parameters(task, seed)
    rng = np.random.default_rng(99)
    z_full, y_full = rng.uniform(-1, 1, (M, M)), rng.uniform(-1, 1, (M, M))
    queries = task.query_token(np.arange(task.n_queries))
    z_full[queries, :L], y_full[:, :L] = z0, y0
    z = torch.nn.Parameter(torch.tensor(z_full))
    y = torch.nn.Parameter(torch.tensor(y_full))
    opt_z = torch.optim.SGD([z], lr=setting.eta_z, momentum=0.9)
    opt_y = torch.optim.SGD([y], lr=setting.eta_y, momentum=0.9)
    history = [z.detach()[queries, :L].clone().numpy()]
    for b in seed_batches(task, seed, iters, batch)[:iters]:
        x = torch.nn.functional.one_hot(torch.tensor(b.sequences(task)), M).double()
        keys, last = x[:, :-1], x[:, -1]
        scores = torch.einsum("btm,qm,bq->bt", keys, z, last)
        mixed = torch.einsum("bt,btm->bm", torch.softmax(scores, dim=-1), keys)
        logits = (mixed / mixed.norm(dim=-1, keepdim=True)) @ y.T
        target = torch.tensor(task.next_token_id(b.next_tokens))
        loss = torch.nn.functional.cross_entropy(logits, target)
        opt_z.zero_grad()
        opt_y.zero_grad()
        loss.backward()
        opt_z.step()
        opt_y.step()
        history.append(z.detach()[queries, :L].clone().numpy())
    untouched = np.delete(z.detach().numpy(), queries, axis=0)
    np.testing.assert_array_equal(untouched, np.delete(z_full, queries, axis=0))
    np.testing.assert_array_equal(y.detach().numpy()[:, L:], y_full[:, L:])
    return np.stack(history), y.detach().numpy()[:, :L]


def test_count_forward_equals_position_forward():
    task = Task(2)
    rng = np.random.default_rng(5)
    z = torch.tensor(rng.normal(size=(task.n_queries, task.n_context)))
    y = torch.tensor(rng.normal(size=(task.n_vocab, task.n_context)))
    b = sample_batch(rng, task, 32)
    by_position = position_logits(z, y, torch.tensor(b.queries), torch.tensor(b.context))
    tokens = torch.tensor(task.slot_tokens[b.next_tokens])
    counts = torch.tensor(b.slot_counts(task), dtype=torch.float64)
    by_count = next_token_logits(z[None, None], y[None, None], torch.tensor(b.queries)[None],
                                 tokens[None], counts[None])
    torch.testing.assert_close(by_count[0, 0], by_position, rtol=1e-12, atol=1e-12)


def test_batched_training_equals_the_authors_model_run_by_torch_sgd():
    task, iters, batch = Task(2), 6, 16
    settings = [Setting(0.5, 1.0), Setting(3.0, 10.0)]
    runs = train(task, settings, [0, 7], iters=iters, batch=batch, keep_z=True)
    assert runs.y.shape[2] == task.n_vocab
    for i, setting in enumerate(settings):
        for j, seed in enumerate([0, 7]):
            z_history, y_final = _authors_layout_run(task, setting, seed, iters, batch)
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


# ---------------------------------------------------------------- Figure 4 and the authors' logs


@pytest.fixture(scope="module")
def fig4_runs():
    """Figure 4's setting, 10 seeds, 30 iterations, with both losses."""
    return {loss: run_trace(fig4_task(), seeds=10, iters=30, loss=loss, name="fig4", **FIG4)
            for loss in ("vocab", "next-token")}


@pytest.mark.parametrize("n_common, per_query", [(10, 0), (3, 2)])
def test_fig4_initial_loss_is_ln_m_and_attention_waits(n_common, per_query):
    task = fig4_task(n_common, per_query)
    runs = run_trace(task, seeds=3, iters=3, **FIG4).runs
    np.testing.assert_allclose(runs.loss[0, :, 0], math.log(task.n_vocab), rtol=1e-14)
    z = runs.z_history[0]
    assert (z[:, :2] == 0).all()            # Y starts at 0, so no gradient reaches Z in step 1
    assert (z[:, 2] != 0).any()
    np.testing.assert_array_equal(runs.distinct_share[0, :, 1], runs.distinct_share[0, :, 0])


def test_fig4_attention_moves_only_after_the_loss_has_fallen(fig4_runs):
    rows = fig4_runs["vocab"].rows()
    start = rows[0]["distinct_share"]
    assert start == pytest.approx(5.5 / 15.5, rel=1e-14)
    assert all(abs(r["distinct_share"] - start) < 0.005 for r in rows[:5])   # t ≤ 4
    assert rows[4]["loss"] < 0.25 * rows[0]["loss"]
    changes = [r["change"] for r in rows[1:]]
    assert max(changes[:3]) < 0.1 * max(changes)          # the scan comes later
    assert rows[-1]["distinct_share"] > start + 0.2       # ... toward the distinct tokens
    comp = np.array(rows[-1]["composition"])
    assert (np.diff(comp[10:]) > 0).all()                 # ordered by co-occurrence


def test_fig4_next_token_only_loss_moves_attention_sooner_and_further(fig4_runs):
    vocab, ablation = fig4_runs["vocab"].runs, fig4_runs["next-token"].runs
    np.testing.assert_allclose(ablation.loss[0, :, 0], math.log(2), rtol=1e-14)
    for t in (4, 10, 30):
        assert (ablation.distinct_share[0, :, t] > vocab.distinct_share[0, :, t]).all()


def _log_distance(ours: np.ndarray, theirs: float) -> float:
    """Return how many seed standard deviations log(theirs) lies from the mean of log(ours)."""
    logs = np.log(ours)
    return abs(math.log(theirs) - logs.mean()) / logs.std(ddof=1)


def test_fig4_loss_curve_matches_the_authors_log(fig4_runs):
    log = AUTHORS_LOGS["figure_4"]
    loss = fig4_runs["vocab"].runs.loss[0]
    assert loss[:, 0] == pytest.approx(log["loss"][0], rel=1e-6)   # ln 34 in float32
    for t, theirs in zip(log["t"][1:], log["loss"][1:]):
        if t <= 30:
            assert _log_distance(loss[:, t], theirs) < 3.0, (t, theirs, loss[:, t])
    ablation = fig4_runs["next-token"].runs.loss[0]
    assert max(_log_distance(ablation[:, t], log["loss"][t // 2]) for t in (2, 4)) > 20


def test_fig6_first_run_matches_the_authors_log():
    log = AUTHORS_LOGS["figure_6"]
    task = Task(log["K"])
    assert task.n_vocab == log["vocab"]
    setting = [Setting(log["eta_z"], log["ratio"])]
    loss = train(task, setting, list(range(10)), iters=99).loss[0]
    # their single seed is a slow draw: from t = 8 on it sits at the top of (or just above) the
    # spread of our seeds, so it is held to our 10 seeds' range widened by a factor 1.5; after
    # t = 20 single batch losses jump, so the plateau is compared as a mean over t = 50..98
    t_log, theirs = np.array(log["t"]), np.array(log["loss"])
    for t, value in zip(t_log[t_log <= 20], theirs[t_log <= 20]):
        assert loss[:, t].min() / 1.5 < value < 1.5 * loss[:, t].max(), (t, value)
    plateau = loss[:, t_log[t_log >= 50]].mean(axis=1)
    assert plateau.min() / 1.5 < theirs[t_log >= 50].mean() < 1.5 * plateau.max()
    for t in (0, 2):
        assert _log_distance(loss[:, t], log["loss"][t // 2]) < 3.0
    ablation = train(task, setting, list(range(10)), iters=1, loss="next-token").loss[0]
    assert 1.5 * ablation[:, 0].max() < log["loss"][0]            # about ln 2, not ln 33


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
        assert np.corrcoef(cell.z_distinct, DISTINCT_WEIGHTS)[0, 1] > 0.9
        if cell.n_queries >= 3:
            assert (np.diff(cell.z_distinct) > 0).all() and cell.z_order.mean() > 0.8
        else:                                          # K = 1 keeps visible initial noise
            assert cell.z_order.mean() > 0.4, cell.z_order
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


def test_grid_agrees_with_an_independent_run_of_the_authors_protocol(small_grid):
    # bench/scan_snap_authors_protocol.py: full M×M nn.Linear matrices, float32, torch's RNG,
    # torch.optim.SGD, 10 seeds per cell. All cells of one K share their seeds in both runs, so
    # one lucky seed set moves a whole K together (here our 6 seeds put K = 3 up to 3.3 standard
    # errors low); hence 4. The next-token-only loss misses the K = 3, r = 1 cells by 10 and 20.
    bench = BENCH / "results" / "scan_snap_authors_protocol.json"
    theirs = {(c["K"], c["eta_z"], c["r"]): np.asarray(c["entropy"])
              for c in json.loads(bench.read_text())["cells"]}
    for cell in small_grid.cells:
        other = theirs[(cell.n_queries, cell.eta_z, cell.ratio)]
        se = math.hypot(cell.entropy.std(ddof=1) / math.sqrt(len(cell.entropy)),
                        other.std(ddof=1) / math.sqrt(len(other)))
        assert abs(cell.entropy.mean() - other.mean()) < 4 * se, (cell.to_dict()["K"], se)


def test_larger_eta_z_gives_lower_entropy(small_grid):
    grid = small_grid.grid
    for k in grid.n_queries:
        for r in grid.ratio:
            means = [small_grid.cell(k, e, r).entropy.mean() for e in grid.eta_z]
            assert means == sorted(means, reverse=True) and means[0] > means[-1], (k, r, means)


# ---------------------------------------------------------------- command line


def _main(args, capsys):
    from satsim.cli.main import main

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
    (["--trace", "1,1,1", "--setting", "fig4"], "either"),
    (["--common", "3"], "--common"),
    (["--loss", "two-way"], "loss"),
    (["--setting", "fig5"], "setting"),
])
def test_bad_input_is_a_one_line_error_with_exit_2(args, message, capsys):
    code, out = _main(["scan-snap", *args], capsys)
    assert code == 2
    assert message in out.err and out.out == ""


def test_cli_json_grid_and_plots(tmp_path, capsys):
    from satsim.cli.main import cli

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
    from satsim.cli.main import cli

    with pytest.raises(SystemExit) as stop:
        cli.main(["scan-snap", "--trace", "2,1,5", "--seeds", "2", "--iters", "20", "--threads",
                  "1", "--plot", str(tmp_path)], standalone_mode=True)
    assert stop.value.code == 0
    out = capsys.readouterr().out
    assert "snap point" in out and "saturation view" in out
    arrays = np.load(tmp_path / "scan_snap_trace.npz")
    assert arrays["z_history"].shape == (2, 21, 2, 50)
    assert (tmp_path / "scan_snap_trace.png").stat().st_size > 1000


def test_cli_fig4_json(capsys):
    from satsim.cli.main import cli

    with pytest.raises(SystemExit) as stop:
        cli.main(["scan-snap", "--setting", "fig4", "--common", "4", "--seeds", "2", "--iters",
                  "6", "--threads", "1", "--json"], standalone_mode=True)
    assert stop.value.code == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["setting"], report["K"], report["next_per_query"]) == ("fig4", 2, 1)
    assert report["vocab"] == 4 + 20 + 2 + 2 and report["zero_init"] is True
    assert (report["eta_z"], report["r"], report["loss_kind"]) == (1.0, 1.0, "vocab")
    first = report["iterations"][0]
    assert first["loss"] == pytest.approx(math.log(28), rel=1e-14)
    assert first["common_share"] == pytest.approx(4 / 9.5)
    assert first["composition"] == pytest.approx(list(fig4_task(4).slot_probabilities))


def test_cli_trace_table_names_the_loss(capsys):
    from satsim.cli.main import cli

    with pytest.raises(SystemExit) as stop:
        cli.main(["scan-snap", "--trace", "1,1,2", "--loss", "next-token", "--seeds", "2",
                  "--iters", "4", "--threads", "1"], standalone_mode=True)
    assert stop.value.code == 0
    out = capsys.readouterr().out
    assert "next tokens only (ablation)" in out and "common" in out


@pytest.mark.slow  # a fresh process
def test_command_module_imports_neither_torch_nor_matplotlib():
    code = ("import sys, satsim.cli.scan_snap, satsim.papers.scan_snap.saturation\n"
            "assert 'torch' not in sys.modules and 'matplotlib' not in sys.modules\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
