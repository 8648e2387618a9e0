"""``satsim report``: norm fits, per-bin accuracy of a soft model and its limit, the CLI."""

import json
import subprocess
import sys

import numpy as np
import pytest

import languages
from satsim import constructions
from satsim.analysis.scoring import predict
from satsim.cli.main import main
from satsim.engine.simulator import Simulator
from satsim.errors import SatsimError
from satsim.model.io import save_spec
from satsim.model.respec import map_named
from satsim.saturation import limit, scale_spec
from satsim.training import evaluate as evaluate_module
from satsim.training.evaluate import default_bins, evaluate_bins, soft_predictor
from satsim.training.fits import FORMS, fit_growth, growth_rate
from satsim.training.report import build_report, load_run, render
from tests.support.helpers import invoke_satsim, random_spec

STEPS = list(range(0, 201, 20))


def norm_of(form: str, t: float, a: float = 3.0, b: float = 10.0) -> float:
    """Exactly a·f(t) + b."""
    return a * t ** FORMS[form] + b


def row(step: int, form: str) -> dict:
    """One metrics row whose norms follow ``form`` exactly."""
    return {
        "step": step, "loss": 1.0 / (1 + step), "accuracy": min(1.0, step / 100),
        "norm": norm_of(form, step),
        "norm_layers": {"embed": norm_of("t", step, 0.01, 1.0),
                        "blocks.0": norm_of(form, step, 2.0, 5.0), "unembed": 2.0},
        "norm_groups": {"blocks.0.attn.W_Q": norm_of(form, step, 1.0, 1.0)},
        "grad_projection": -0.1, "update_norm": 0.01, "update_projection": 0.001,
        "direction_cosine": None if step == 0 else 1 - 1 / (1 + step),
        "representation_similarity": [0.5, 0.6 + step / 1000], "lr": 0.01, "elapsed": step / 10,
        **({"eval": {"train": 0.9, "test": 0.5}} if step % 100 == 0 else {}),
    }


def make_run(folder, form: str = "sqrt(t)", spec=None, lang: str = "majority",
             task: str = "recognition"):
    """A finished run: config, metrics with a resumed (repeated) stretch, checkpoints, final."""
    folder.mkdir()
    config = {"lang": lang, "task": task, "split": "bhattamishra", "steps": 200, "batch_size": 8,
              "optimizer": "sgd", "lr": 0.01, "weight_decay": 0.0, "layers": 1, "d_model": 8,
              "heads": 1, "d_head": 4, "d_mlp": 8, "norm": "none", "positional": "none",
              "seed": 0, "checkpoint_every": 100, "log_every": 20, "device": "cpu",
              "dtype": "float64", "train_size": 100}
    (folder / "config.json").write_text(json.dumps(config))
    first = [row(s, form) for s in STEPS if s <= 120]
    for stale in first[-2:]:  # the run died after step 120; these rows are redone on resume
        stale["norm"] = 999.0
    resumed = [row(s, form) for s in STEPS if s >= 100]
    lines = [json.dumps(r) for r in first + resumed]
    (folder / "metrics.jsonl").write_text("\n".join(lines) + "\n")
    spec = spec if spec is not None else constructions.build("majority")
    (folder / "checkpoints").mkdir()
    save_spec(map_named(spec, lambda _, x: -x),
              str(folder / "checkpoints" / "step-00000100.safetensors"))
    save_spec(scale_spec(spec, 2.0), str(folder / "checkpoints" / "step-00000200.safetensors"))
    save_spec(spec, str(folder / "final.safetensors"))
    return folder


@pytest.mark.parametrize("form", list(FORMS))
def test_the_true_form_wins_with_r2_one(form):
    t = np.array(STEPS, dtype=float)
    growth = fit_growth(t, [norm_of(form, s) for s in t])
    assert growth.best == form
    best = growth.fit(form)
    assert best.r2 == pytest.approx(1.0, abs=1e-12)
    assert (best.a, best.b) == (pytest.approx(3.0), pytest.approx(10.0))
    assert all(f.r2 < 1 - 1e-4 for f in growth.fits if f.form != form)
    assert growth.power.exponent == pytest.approx(FORMS[form], rel=1e-3)


def test_a_constant_series_has_no_best_fit_and_growth_is_relative():
    growth = fit_growth([0, 10, 20], [5.0, 5.0, 5.0])
    assert growth.best is None and growth.power is None and growth.growth_rate == 0.0
    assert growth_rate([0, 50, 100], [1.0, 2.0, 3.0]) == pytest.approx(0.5)


@pytest.mark.parametrize("form", list(FORMS))
def test_run_metrics_keep_the_last_row_of_a_repeated_step(tmp_path, form):
    run = load_run(make_run(tmp_path / "run", form))
    assert [r["step"] for r in run.rows] == STEPS
    assert max(r["norm"] for r in run.rows) < 999
    assert [step for step, _ in run.checkpoints] == [100, 200]


def test_default_bins_follow_the_split_then_double_to_1000():
    assert default_bins("bhattamishra") == ((2, 50), (52, 100), (102, 150), (151, 300),
                                            (301, 1000))
    assert default_bins("satsim")[0] == (0, 40) and default_bins("satsim")[-1] == (513, 2048)


@pytest.mark.parametrize("task,seed,norm", [("recognition", 0, "pre"), ("next-symbol", 2, "none")])
def test_soft_predictions_match_softmax_attention_in_the_simulator(task, seed, norm, monkeypatch):
    monkeypatch.setattr(evaluate_module, "SOFT_BATCH_SCORES", 600)  # many small batches
    spec = random_spec(seed, task=task, norm=norm, positional="sinusoidal")
    majority = languages.get("majority")
    strings = (majority.sample_positive(6, 1, 12, seed=1) + ["ab", "bbba", "a"]
               + majority.sample_negative(6, 1, 12, seed=1))
    soft = soft_predictor(spec, device="cpu")(strings)
    assert soft == predict(Simulator(spec, "softmax", beta=1.0), strings)
    answers = soft if task == "recognition" else [a for sets in soft for a in sets]
    assert len(set(answers)) > 1  # the answers differ, so their order is checked too


def test_the_limit_of_a_construction_is_right_on_every_bin():
    spec = constructions.build("majority")
    pairs = evaluate_bins(spec, Simulator(limit(spec)), languages.get("majority"),
                          [(0, 16), (17, 60)], n=20, seed=0, device="cpu")
    assert [p.limit.accuracy for p in pairs] == [1.0, 1.0]
    assert [p.soft.n for p in pairs] == [p.limit.n for p in pairs] == [20, 20]
    assert all(0 <= p.soft.accuracy <= 1 for p in pairs)


@pytest.mark.parametrize("chunk_symbols", [1 << 22, 64])
def test_progress_within_a_bin_counts_up_to_the_bin_and_names_it(monkeypatch, chunk_symbols):
    from satsim.analysis import evaluation

    monkeypatch.setattr(evaluation, "CHUNK_SYMBOLS", chunk_symbols)  # 64: chunks of a few strings
    spec = constructions.build("majority")
    heard = []
    evaluate_bins(spec, Simulator(limit(spec)), languages.get("majority"), [(0, 16), (17, 60)],
                  n=20, device="cpu", on_strings=lambda *told: heard.append(told))
    for model in ("saturated limit", "soft model"):
        for bin_ in [(0, 16), (17, 60)]:
            done = [d for m, b, d, total in heard if (m, b) == (model, bin_) and total == 20]
            assert len(done) == len([t for t in heard if t[:2] == (model, bin_)]) >= 10
            assert done == sorted(set(done)) and done[-1] == 20, (model, bin_, done)


def test_a_learned_table_cuts_and_skips_bins_and_long_bins_skip_the_soft_model():
    spec = random_spec(0, positional="learned", n_ctx=20)
    pairs = evaluate_bins(spec, Simulator(limit(spec)), languages.get("majority"),
                          [(0, 5), (6, 30), (40, 60)], n=6, device="cpu", soft_max_len=5)
    assert pairs[0].soft is not None and pairs[0].limit.max_len == 5
    assert pairs[1].limit.max_len == 19 and pairs[1].soft is None and "cut at 19" in pairs[1].note
    assert pairs[2].limit is None and pairs[2].soft is None and "skipped" in pairs[2].note


def test_report_on_a_run(tmp_path):
    report = build_report(make_run(tmp_path / "run"), [(0, 12), (13, 40)], n=10, device="cpu",
                          roles_n=8)
    assert report.norm.best == "sqrt(t)" and report.layers["embed"].best == "t"
    assert report.layers["unembed"].best is None
    cosines = [c["cosine_to_final"] for c in report.checkpoint_direction]
    assert cosines == [pytest.approx(-1.0), pytest.approx(1.0)]
    assert [p.limit.accuracy for p in report.bins] == [1.0, 1.0]
    assert {r.role for r in report.roles} <= {"global", "local", "mixed", "undetermined"}
    text = render(report)
    assert "f = sqrt(t)" in text and "← best" in text and "soft" in text
    data = report.to_dict()
    assert data["direction"]["last"] == pytest.approx(1 - 1 / 201)
    assert data["eval"] == {"step": 200, "accuracy": {"train": 0.9, "test": 0.5}}
    json.dumps(data)


def test_a_report_beyond_a_learned_table_skips_bins_and_roles(tmp_path):
    run = make_run(tmp_path / "run", spec=random_spec(0, positional="learned", n_ctx=8))
    report = build_report(run, [(20, 30)], n=4, device="cpu")
    assert report.bins[0].soft is None and report.bins[0].limit is None
    assert report.roles == [] and "no head roles" in report.notes[0]
    assert "skipped: longer than the learned table (7)" in render(report)


def test_a_model_of_the_wrong_task_is_an_error(tmp_path):
    run = make_run(tmp_path / "run", task="next-symbol")
    with pytest.raises(SatsimError, match="recognition model"):
        build_report(run, [(0, 8)], n=4, device="cpu")


satsim = invoke_satsim  # the entry point, in this process


def test_cli_json_and_plots(tmp_path):
    run = make_run(tmp_path / "run", "t")
    plots = tmp_path / "plots"
    result = satsim("report", str(run), "--json", "--plot", str(plots), "--bins", "0-10,11-20",
                    "-n", "6", "--device", "cpu", "--roles-n", "6")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert {"norm", "layers", "groups", "direction", "bins", "head_roles",
            "representation_similarity", "config", "plots"} <= set(data)
    assert data["norm"]["best"] == "t"
    assert [b["limit"]["accuracy"] for b in data["bins"]] == [1.0, 1.0]
    assert {"soft", "limit", "min_len", "max_len", "note"} <= set(data["bins"][0])
    names = sorted(p.name for p in plots.iterdir())
    assert names == sorted(f"{n}.png" for n in
                           ("norm", "layers", "projections", "direction", "similarity",
                            "accuracy", "training"))
    assert all(p.read_bytes()[:4] == b"\x89PNG" for p in plots.iterdir())


@pytest.mark.parametrize("setup,args,message", [
    (None, [], "no run directory"),
    ("no-metrics", [], "no metrics"),
    ("bad-metrics", [], "line 2 is not JSON"),
    ("ok", ["--bins", "5-1"], "bad length bin"),
    # A bin too long for memory ran for minutes and then ran out of it: refused before any work.
    ("ok", ["--bins", "2-10,1000000000-1000000000", "-n", "2"],
     "the saturated limit of strings of 1,000,000,000 symbols (its exact expansion keeps every "
     "residual stream as a series) needs about"),
])
def test_cli_bad_input_is_one_line_and_exit_code_2(tmp_path, setup, args, message, monkeypatch,
                                                   capsys):
    run = tmp_path / "run"
    if setup is not None:
        make_run(run)
    if setup == "no-metrics":
        (run / "metrics.jsonl").unlink()
    if setup == "bad-metrics":
        (run / "metrics.jsonl").write_text('{"step": 0, "norm": 1}\n{"step": 1,\n')
    monkeypatch.setattr(sys, "argv", ["satsim", "report", str(run), *args])
    with pytest.raises(SystemExit) as exit_info:
        main()
    stderr = capsys.readouterr().err
    assert exit_info.value.code == 2 and message in stderr, stderr
    assert len(stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(("layers", "heads", "d_model", "length"),
                         [(1, 2, 8, 800), (2, 3, 8, 200), (2, 2, 32, 1600)])
def test_the_exact_expansion_memory_estimate_covers_what_it_holds(layers, heads, d_model,
                                                                   length):
    import tracemalloc

    from satsim.saturation import leading_order
    from satsim.saturation.exact import exact_limit, exact_limit_bytes

    spec = random_spec(1, n_layers=layers, n_heads=heads, d_model=d_model, d_head=4,
                       positional="learned", n_ctx=length + 1)
    source = leading_order(spec).source
    string = "".join(np.random.default_rng(1).choice(["a", "b"], length))
    exact_limit(source, string[:20])  # compiled before the measure
    tracemalloc.start()
    try:
        exact_limit(source, string)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    estimate = exact_limit_bytes(spec, length + 1)
    assert peak <= estimate <= max(3 * peak, peak + 64e6)


@pytest.mark.slow  # a fresh process
def test_the_report_command_does_not_import_torch_until_it_runs():
    code = ("import sys; import satsim.cli.main, satsim.cli.report, satsim.training.report, "
            "satsim.training.evaluate, satsim.training.fits; "
            "print('torch' in sys.modules, 'matplotlib' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.stdout.split() == ["False", "False"], result.stderr


def test_next_symbol_models_are_scored_on_positives_and_recognisers_on_both():
    import languages
    from satsim import constructions
    from satsim.analysis.strings import test_set as draw
    from satsim.training.evaluate import evaluate_bins

    language = languages.get("dyck1")
    strings, labels = draw(language, 20, 2, 30, seed=3, negatives=False)
    assert len(strings) == 20 and labels.all() and all(map(language.contains, strings))
    spec = constructions.build("dyck1", task="next-symbol")
    pairs = evaluate_bins(spec, Simulator(spec), language, [(2, 30)], n=20, device="cpu")
    assert pairs[0].limit.negatives == 0 and pairs[0].soft.negatives == 0
    recogniser = constructions.build("dyck1")
    pairs = evaluate_bins(recogniser, Simulator(recogniser), language, [(2, 30)], n=20,
                          device="cpu")
    assert pairs[0].limit.negatives == 10 and pairs[0].limit.accuracy == 1.0


def test_report_plots_show_signs_log_loss_and_hook_names(tmp_path):
    from satsim.model.architecture import stream_names
    from satsim.training import plots

    report = build_report(make_run(tmp_path / "run"), [(0, 12)], n=4, device="cpu", roles_n=4)
    names = stream_names(report.run.final)
    assert names[0] == "blocks.0.hook_resid_pre" and names[-1].endswith("hook_resid_post")
    for r in report.run.rows:
        r["representation_similarity"] = [0.5] * len(names)
    plt = plots._pyplot()
    fig, (projections, training, similarity) = plt.subplots(1, 3)
    plots._projections(projections, report)
    plots._training(training, report)
    plots._similarity(similarity, report)
    assert projections.get_yscale() == "symlog"  # θᵀ∇L = -0.1 in these rows: its sign shows
    assert training.get_yscale() == "log" and "loss" in training.get_ylabel()
    assert [line.get_label() for line in similarity.get_lines()] == names
    plt.close(fig)
