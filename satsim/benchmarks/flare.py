"""FLaRe's protocol with a saturated-limit column: recognisers trained on 0–40, tested to 500.

FLaRe (Butoi et al., ICLR 2025; rycolab/neural-network-recognizers) trains transformer
recognisers on strings of length 0–40, validates on lengths to 80 and tests to 500. Here every
(language, trial) is one planned training run of a :mod:`satsim.training.sweep`, run here or on
Ray by the sweep's engines; its worker, :func:`run_model`, trains the run (or resumes or finds
it), then picks the checkpoint with the best validation-long accuracy and scores it per length
bin (≤ 40, 41–100, 101–500) on the same test strings for every model of a language:

- the soft model, and its twin scaled to cθ for c = 10 and 100 (``SoftTransformer.scaled``),
  all in float64;
- its exact saturated limit, through :class:`satsim.saturation.LimitPredictor`, with the
  strings it left undetermined (counted wrong) and those that needed the exact expansion;
- the growth of ‖θ‖ over training, fitted as ``satsim report`` fits it.

The evaluation is written atomically into the run folder (``benchmark.json``) and the row is
recorded by the sweep (``results/NAME.json``), so a killed benchmark resumes where it stopped
and ends with the same tables. Per language, the trials are aggregated as FLaRe reports them:
mean, standard deviation (numpy's, ddof 0) and maximum. docs/benchmarks.md states where each
scale follows FLaRe and where it departs.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from languages.flare import FLARE
from satsim.benchmarks.flare_data import check_data_root
from satsim.benchmarks.stats import controls, holm, summed_curves
from satsim.errors import SatsimError
from satsim.output import write_text_atomically
from satsim.training.config import DEFAULTS, TrainConfig
from satsim.training.grid import comma_items
from satsim.training.runs import read_json

BINS: tuple[tuple[int, int], ...] = ((0, 40), (41, 100), (101, 500))
"""Length bins: in distribution, FLaRe's validation-long lengths beyond it, its test lengths."""

SCALES = (10.0, 100.0)
"""The c of the scaled soft twins beside the trained model."""

SELECT = "validation-long"
"""The held-out set whose accuracy picks a run's checkpoint (FLaRe's "expressivity" setting)."""
FINAL = "final"
"""``select`` that scores the model as training left it (e.g. at its largest attention β)."""
BY_LOSS = ":cross-entropy"
"""Ends ``select`` when the lowest cross-entropy on that set picks (with FLaRe's schedule)."""

FIXED = ("lang", "seed", "task", "split", "data", "data_digest")
"""Training settings the protocol fixes: ``--set`` may not change them."""

EVALUATION_FILE = "benchmark.json"
"""A run's evaluation, in its folder (runs/NAME/)."""
MANIFEST = "benchmark.json"
"""The benchmark's settings, at the root of its folder."""

LR_RANGE = (1e-4, 1e-2)
"""FLaRe's learning rates: log-uniform per trial."""
BATCH_TOKENS = (128, 4096)
"""FLaRe's tokens per batch: a uniform integer per trial."""
MEAN_TOKENS = 21
"""A training string's mean tokens (lengths uniform on 0–40, plus BOS): tokens → strings."""

MODEL_BYTES = 10_000
"""Memory a planned model holds while the benchmark runs: its plan entry (1.3 kB measured),
its JSON, its result row and table rows."""

COMMON = {"task": "recognition", "split": "flare", "norm": "pre", "positional": "sinusoidal",
          "optimizer": "adam", "weight_decay": 0.0}


@dataclass(frozen=True)
class Scale:
    """One size of the protocol: trials per language, training settings, test strings per bin."""

    name: str
    trials: int
    training: dict
    n: int
    sampled: bool  # lr and batch size drawn per trial from FLaRe's ranges


SMALL = Scale("small", 3, {
    **COMMON, "layers": 2, "d_model": 16, "heads": 2, "d_head": 8, "d_mlp": 32, "steps": 1000,
    "batch_size": 32, "lr": 3e-3, "train_size": 1000, "eval_size": 100, "checkpoint_every": 200,
    "log_every": 50, "device": "cpu"}, n=100, sampled=False)
PAPER = Scale("paper", 10, {
    **COMMON, "layers": 5, "d_model": 32, "heads": 8, "d_head": 4, "d_mlp": 128, "steps": 10000,
    "clip_norm": 5.0,
    "train_size": 10000, "eval_size": 1000, "checkpoint_every": 500, "log_every": 100,
    "device": "auto"}, n=1000, sampled=True)
SCALE_NAMES = {scale.name: scale for scale in (SMALL, PAPER)}


def scale_named(name: str) -> Scale:
    """The scale called ``name`` (small or paper)."""
    if name not in SCALE_NAMES:
        raise SatsimError(f"unknown scale {name!r}; known: {', '.join(SCALE_NAMES)}")
    return SCALE_NAMES[name]


def language_names(text: str = "") -> list[str]:
    """FLaRe's languages named in comma-separated ``text`` (all eighteen, in FLaRe's order)."""
    names = comma_items(text, "--lang") if text else list(FLARE)
    unknown = [name for name in names if name not in FLARE]
    if unknown:
        raise SatsimError(f"{unknown[0]!r} is not one of FLaRe's languages; known: "
                          f"{', '.join(FLARE)}")
    if len(set(names)) != len(names):
        raise SatsimError("a language is named twice in --lang")
    return names


def sampled_settings(language: str, trial: int) -> dict:
    """A trial's learning rate and batch size, drawn from FLaRe's ranges (fixed by both)."""
    rng = np.random.default_rng([2025, list(FLARE).index(language), trial])
    lr = float(np.exp(rng.uniform(np.log(LR_RANGE[0]), np.log(LR_RANGE[1]))))
    tokens = int(rng.integers(BATCH_TOKENS[0], BATCH_TOKENS[1], endpoint=True))
    return {"lr": lr, "batch_size": max(1, round(tokens / MEAN_TOKENS))}


def check_overrides(overrides: dict) -> None:
    """Refuse ``--set`` settings that are not training settings or that the protocol fixes."""
    for key in overrides:
        if key not in DEFAULTS:
            raise SatsimError(f"unknown training setting {key!r}; known: {', '.join(DEFAULTS)}")
        if key in FIXED:
            raise SatsimError(f"{key} is fixed by the benchmark (FLaRe's recognition protocol); "
                              "choose languages with --lang and the number of trials with "
                              "--trials")


def evaluation_settings(n: int, seed: int = 0, flare_test: bool = False) -> dict:
    """What every model of a benchmark is scored on (the same for all of them).

    With ``flare_test``, every model is scored on its data folder's test split too.
    """
    out = {"bins": [list(b) for b in BINS], "n": n, "seed": seed, "scales": list(SCALES),
           "select": SELECT, "dtype": "float64"}
    return {**out, "flare_test": True} if flare_test else out


def trial_seed(base: int, language: str, trial: int) -> int:
    """The seed of one (language, trial): its initialisation, batch order and sampled data.

    The first 31 bits of SHA-256 of the base seed, the language and the trial: the same in every
    process and Python version (unlike ``hash``), and unrelated between languages and trials.
    """
    digest = hashlib.sha256(f"satsim-flare/{base}/{language}/{trial}".encode()).digest()
    return int.from_bytes(digest[:4], "big") >> 1


def check_plan_memory(languages: int, trials: int, n: int) -> None:
    """Refuse, before planning, more models or test strings than fit in free memory."""
    from satsim.analysis.strings import check_test_set_memory
    from satsim.engine.resources import check_memory

    models = languages * trials
    check_memory(models * MODEL_BYTES, f"--trials {trials} ({models:,} models)",
                 "lower --trials or name fewer languages with --lang")
    check_test_set_memory(BINS, n, "lower -n")


def plan(scale: Scale, languages: Sequence[str], trials: int, overrides: dict | None = None,
         n: int | None = None, data: str | Path | None = None, seed: int = 0,
         final: bool = False) -> list[dict]:
    """The planned runs, language by language and trial by trial, each a sweep entry.

    Each entry holds ``name`` (``LANGUAGE-tT``), ``settings`` (a full training config, its seed
    :func:`trial_seed` of ``seed``), ``model`` (FLaRe's language, the trial and the seed) and
    ``evaluation``. With ``data`` (a folder of FLaRe's language folders), each model trains on
    its language's folder, selects on its validation-long split and is scored on its test split
    as well as on satsim's bins. With ``final``, every model is scored as it ends training
    (:data:`FINAL`) instead of at its selected checkpoint.
    """
    overrides = dict(overrides or {})
    check_overrides(overrides)
    if trials < 1:
        raise SatsimError(f"need at least one trial, got {trials}")
    root = None if data is None else check_data_root(data, list(languages))
    evaluation = evaluation_settings(scale.n if n is None else n, flare_test=root is not None)
    if overrides.get("lr_patience") or overrides.get("stop_patience"):  # FLaRe's schedule
        overrides.setdefault("monitor", SELECT)
        evaluation["select"] = f"{overrides['monitor']}{BY_LOSS}"
    if final:
        evaluation["select"] = FINAL
    if evaluation["n"] < 1:
        raise SatsimError(f"need at least one test string per bin, got -n {evaluation['n']}")
    check_plan_memory(len(languages), trials, evaluation["n"])
    configs = []
    for language in languages:
        folder = {} if root is None else data_settings(root / language, overrides)
        for trial in range(1, trials + 1):
            own = trial_seed(seed, language, trial)
            settings = {**DEFAULTS, **scale.training,
                        **(sampled_settings(language, trial) if scale.sampled else {}),
                        **overrides, "lang": FLARE[language].language, "seed": own, **folder}
            if folder and "batch_size" not in overrides:  # as satsim train --data shrinks it
                settings["batch_size"] = min(settings["batch_size"], folder["train_size"])
            config = TrainConfig.from_dict(settings)  # refuses a table shorter than the split
            configs.append({"name": f"{language}-t{trial}", "settings": config.to_dict(),
                            "model": {"language": language, "trial": trial, "seed": own},
                            "evaluation": evaluation})
    return configs


def data_settings(folder: Path, overrides: dict) -> dict:
    """The data settings of a model trained on a FLaRe language folder.

    The folder, and every string of its training split unless ``--set train_size`` says
    otherwise (as ``satsim train --data``).
    """
    from languages.flare import token_counts

    settings = {"data": str(folder)}
    if "train_size" not in overrides:
        settings["train_size"] = max(1, len(token_counts(folder)))
    return settings


# --- one model: train, pick its checkpoint, score it -----------------------------------------


def run_model(planned: dict, root: str, threads: int = 1, trained: dict | None = None) -> dict:
    """Train one planned run (or resume or find it), evaluate it once, and return its row.

    ``trained`` is the sweep's row of a run trained already (in a stack). A run that fails for
    its own reasons (a diverging loss; a checkpoint that cannot be read) gives the sweep's row
    with ``error``.
    """
    from satsim.training.runs import failed_row, run_one

    trained = trained or run_one(planned, root, threads)
    if "error" in trained:
        return {**trained, **planned["model"]}
    run = Path(root) / "runs" / planned["name"]
    path = run / EVALUATION_FILE
    try:
        held = read_json(path) if path.exists() else None
        if not (isinstance(held, dict) and held.get("evaluation") == planned["evaluation"]):
            start = time.perf_counter()
            held = {"evaluation": planned["evaluation"],
                    **evaluate_run(run, planned["evaluation"])}
            held["seconds"] = time.perf_counter() - start
            text = json.dumps(held) + "\n"
            write_text_atomically(path, text)
    except SatsimError as error:
        return {**failed_row(planned, str(error).splitlines()[0]), **planned["model"]}
    # a run trained by an earlier version lacks the settings added since: their defaults
    settings = {key: trained.get(key, DEFAULTS[key]) for key in DEFAULTS}
    return {"name": planned["name"], **planned["model"], **settings,
            **{key: held[key] for key in ("selected_step", "held_out", "bins", "curve",
                                          "norm_growth", "flare_test") if key in held},
            "seconds": {"train": trained["elapsed"], "evaluate": held["seconds"]}}


def run_models(group: list[dict], root: str, threads: int = 1) -> list[dict]:
    """Train planned runs of one architecture as one stack, then evaluate each: their rows."""
    from satsim.training.runs import run_group

    trained = run_group(group, root, threads)
    return [run_model(planned, root, threads, row) for planned, row in zip(group, trained)]


def selected_checkpoint(run: Path, select: str) -> tuple[int, dict]:
    """The step whose held-out ``select`` accuracy is best (the earliest of equals), its eval.

    The candidates are the checkpoints evaluated during training and the final model
    (:data:`FINAL` takes the final model, where training ended). A
    ``select`` ending in :data:`BY_LOSS` picks, as FLaRe saves its model, the checkpoint after
    step 0 with the lowest monitored cross-entropy (the earliest of equals), among those that
    recorded one (the schedule's checkpoints; the stop itself is never an improvement).
    """
    from satsim.training.report import read_metrics

    if select == FINAL:
        summary = read_json(run / "summary.json")
        return summary["steps"], summary["eval"]
    rows = read_metrics(run / "metrics.jsonl")
    if select.endswith(BY_LOSS):
        scored = [(row["monitor_loss"], row["step"], row["eval"]) for row in rows
                  if row["step"] > 0 and "monitor_loss" in row
                  and isinstance(row.get("eval"), dict)]
        if not scored:
            raise SatsimError(f"{run} recorded no cross-entropy after step 0 to pick its "
                              "checkpoint by; give it more steps than checkpoint_every")
        _, step, held = min(scored, key=lambda c: (c[0], c[1]))
        return step, held
    summary = read_json(run / "summary.json")
    candidates = [(row["step"], row["eval"]) for row in rows if isinstance(row.get("eval"), dict)]
    candidates.append((summary["steps"], summary["eval"]))
    if not all(select in held for _, held in candidates):
        raise SatsimError(f"{run} has no {select} accuracy to pick its checkpoint by")
    return max(candidates, key=lambda c: (c[1][select], -c[0]))


def norm_growth(run: Path) -> dict:
    """‖θ‖ over the run's logged steps, fitted against t, √t and t^¼ (as satsim report does)."""
    from satsim.training.fits import fit_growth
    from satsim.training.report import read_metrics

    rows = read_metrics(run / "metrics.jsonl")
    steps = np.array([row["step"] for row in rows], dtype=np.float64)
    norms = np.array([row["norm"] for row in rows], dtype=np.float64)
    if len(rows) < 2:  # nothing to fit (as satsim report leaves it out)
        ends = float(norms[0]) if len(rows) else None
        return {"start": ends, "end": ends, "growth_rate": None, "best": None, "best_r2": None,
                "power": None}
    growth = fit_growth(steps, norms)
    best = growth.fit(growth.best) if growth.best else None
    return {"start": growth.start, "end": growth.end, "growth_rate": growth.growth_rate,
            "best": growth.best, "best_r2": None if best is None else best.r2,
            "power": None if growth.power is None else growth.power.exponent}


def evaluate_run(run: Path, evaluation: dict) -> dict:
    """The selected checkpoint of a finished run, scored per bin, and its norm growth."""
    import languages
    from satsim.model.io import load_spec
    from satsim.training.checkpoint import spec_path

    config = TrainConfig.load(run / "config.json")
    step, held_out = selected_checkpoint(run, evaluation["select"])
    spec = load_spec(str(spec_path(run, step)))
    initial = load_spec(str(spec_path(run, 0)))
    language = languages.get(config.lang)
    bins, curve = score_bins(spec, initial, language, evaluation, config.device)
    growth = {**norm_growth(run), "selected": _norm(spec)}
    out = {"selected_step": step, "held_out": held_out, "bins": bins, "curve": curve,
           "norm_growth": growth}
    if evaluation.get("flare_test"):
        out["flare_test"] = score_flare_test(spec, initial, language, config.data, evaluation,
                                             config.device)
    return out


def _norm(spec) -> float:
    from satsim.training.report import flat_parameters

    return float(np.linalg.norm(flat_parameters(spec)))


def scale_column(c: float) -> str:
    """The column name of the soft twin scaled by ``c``."""
    return f"soft_c{c:g}"


def columns(evaluation: dict) -> list[str]:
    """The accuracy columns of a bin: soft model, scaled twins, limit, limit at initialisation.

    ``limit_init`` is the limit of the model at step 0: what the limit gives before training.
    """
    return ["soft", *(scale_column(c) for c in evaluation["scales"]), "limit", "limit_init"]


def _soft_predictors(spec, evaluation: dict, device: str) -> dict[str, Callable]:
    """The soft model and its scaled twins, each a function strings → answers."""
    from satsim.training.evaluate import soft_predictor

    dtype = evaluation["dtype"]
    soft = {"soft": soft_predictor(spec, device, dtype)}
    soft.update({scale_column(c): soft_predictor(spec, device, dtype, scale=c)
                 for c in evaluation["scales"]})
    return soft


def right_answers(language, strings: Sequence[str], labels: np.ndarray,
                  answers: list) -> np.ndarray:
    """Per string, whether its answer matches its label (an undetermined answer never does)."""
    from satsim.analysis.scoring import is_correct

    return np.array([is_correct(language, s, y, a) for s, y, a in zip(strings, labels, answers)],
                    dtype=bool)


def score_strings(spec, initial, soft: dict[str, Callable], language, strings: list[str],
                  labels: np.ndarray) -> tuple[dict, dict[str, list], dict[str, np.ndarray]]:
    """One test set scored by every column: its cell, the answers and which are right.

    The cell holds every column's accuracy and right answers (``hits``), the model beside its
    limit string by string (:func:`satsim.benchmarks.stats.pair_counts`), and how many of the
    limit's answers were undetermined or needed the exact expansion. ``initial`` is the model
    at step 0, whose limit is the ``limit_init`` column.
    """
    from satsim.benchmarks.stats import pair_counts
    from satsim.saturation import LimitPredictor

    limit = LimitPredictor(spec)
    predictors: dict[str, Callable[[list[str]], list]] = {
        **soft, "limit": limit, "limit_init": LimitPredictor(initial)}
    answers = {name: predict(strings) if strings else [] for name, predict in predictors.items()}
    rights = {name: right_answers(language, strings, labels, given)
              for name, given in answers.items()}
    cell = {"n": len(strings), "positives": int(labels.sum()), "negatives": int((~labels).sum())}
    for name, right in rights.items():
        cell[name] = float(right.mean()) if strings else None
    cell["hits"] = {name: int(right.sum()) for name, right in rights.items()}
    cell.update(pair_counts(answers["soft"], answers["limit"], rights["soft"], rights["limit"]))
    cell["undetermined"], cell["exact"] = limit.undetermined, limit.exact
    return cell, answers, rights


def score_bins(spec, initial, language, evaluation: dict,
               device: str = "cpu") -> tuple[list[dict], dict]:
    """Per bin: accuracy of the soft model, its twins and its limits; the per-length curves.

    Every column sees the bin's one test set (half positives, half hard negatives, from
    :func:`satsim.analysis.strings.test_set` with the bin's seed).
    """
    from satsim.analysis.strings import bin_seed, test_set
    from satsim.benchmarks.stats import length_curve

    soft = _soft_predictors(spec, evaluation, device)
    out, lengths, rights = [], [], []
    for index, (low, high) in enumerate(evaluation["bins"]):
        strings, labels = test_set(language, evaluation["n"], low, high,
                                   bin_seed(evaluation["seed"], index))
        cell, _, right = score_strings(spec, initial, soft, language, strings, labels)
        out.append({"min_len": low, "max_len": high, **cell})
        lengths += [len(s) for s in strings]
        rights.append(right)
    merged = {name: np.concatenate([r[name] for r in rights]) for name in rights[0]}
    return out, length_curve(np.array(lengths, dtype=np.int64), merged)


def score_flare_test(spec, initial, language, folder: str, evaluation: dict,
                     device: str = "cpu") -> dict:
    """FLaRe's whole test split scored as FLaRe reports it (its labels), and per length bin.

    ``relabelled`` counts the strings whose FLaRe label is not the oracle's; where there are
    any, ``oracle`` holds every column's accuracy against the oracle's labels.
    """
    from languages.flare import label_disagreements
    from satsim.benchmarks.flare_data import TEST, read_test_split
    from satsim.benchmarks.stats import length_curve

    split = read_test_split(folder, language)
    labels = np.array(split.labels, dtype=bool)
    soft = _soft_predictors(spec, evaluation, device)
    cell, answers, rights = score_strings(spec, initial, soft, language, split.strings, labels)
    wrong = label_disagreements(language, split)
    out = {"split": TEST, "labels": "flare", **cell, "relabelled": len(wrong)}
    if wrong:
        exact = labels.copy()
        exact[wrong] = ~exact[wrong]
        out["oracle"] = {name: float(right_answers(language, split.strings, exact, given).mean())
                         for name, given in answers.items()}
    lengths = np.array([len(s) for s in split.strings], dtype=np.int64)
    out["curve"] = length_curve(lengths, rights)
    out["bins"] = []
    for low, high in evaluation["bins"]:
        inside = (lengths >= low) & (lengths <= high)
        out["bins"].append({"min_len": low, "max_len": high, "n": int(inside.sum()),
                            **{name: float(right[inside].mean()) if inside.any() else None
                               for name, right in rights.items()}})
    return out


# --- the table: model rows, aggregates per language, constructions ----------------------------


def table_row(row: dict) -> dict:
    """A model's row without wall-clock times: what must be identical however the run went."""
    return {key: value for key, value in row.items() if key != "seconds"}


def stats(values: Sequence[float]) -> dict | None:
    """Mean, standard deviation (ddof 0, as FLaRe's tables) and maximum; None for no values."""
    if not values:
        return None
    array = np.asarray(values, dtype=np.float64)
    return {"mean": float(array.mean()), "std": float(array.std()), "max": float(array.max())}


def aggregate(rows: Sequence[dict], languages: Sequence[str], evaluation: dict) -> list[dict]:
    """Per language: every column's mean, std and max over its trials, per bin; ‖θ‖ growth."""
    out = []
    for language in languages:
        mine = [row for row in rows if row.get("language") == language]
        done = [row for row in mine if "error" not in row]
        bins = []
        for index, (low, high) in enumerate(evaluation["bins"]):
            cells = [row["bins"][index] for row in done]
            entry = {"min_len": low, "max_len": high, "strings": sum(c["n"] for c in cells),
                     "undetermined": sum(c["undetermined"] for c in cells),
                     "exact": sum(c["exact"] for c in cells)}
            for column in columns(evaluation):
                entry[column] = stats([c[column] for c in cells if c[column] is not None])
            entry.update(controls(cells, columns(evaluation)))
            bins.append(entry)
        norms = [row["norm_growth"] for row in done]
        flare_test = (flare_test_stats([row["flare_test"] for row in done], evaluation)
                      if evaluation.get("flare_test") else None)
        out.append({
            "language": language, "satsim_language": FLARE[language].language,
            "trials": len(done), "failed": len(mine) - len(done), "bins": bins,
            "curve": summed_curves([row["curve"] for row in done]),
            "norm_growth": {"start": stats([n["start"] for n in norms]),
                     "end": stats([n["end"] for n in norms]),
                     "growth_rate": stats([n["growth_rate"] for n in norms
                                           if n["growth_rate"] is not None]),
                     "best": dict(sorted(Counter(n["best"] for n in norms if n["best"])
                                         .items()))},
            **({"flare_test": flare_test} if flare_test else {})})
    return out


def flare_test_stats(cells: Sequence[dict], evaluation: dict) -> dict:
    """FLaRe's test split over a language's trials: every column's mean, std and max."""
    out = {"strings": sum(c["n"] for c in cells),
           "relabelled": cells[0]["relabelled"] if cells else 0,
           "undetermined": sum(c["undetermined"] for c in cells)}
    for column in columns(evaluation):
        out[column] = stats([c[column] for c in cells if c[column] is not None])
        if out["relabelled"]:
            out.setdefault("oracle", {})[column] = stats([c["oracle"][column] for c in cells])
    out.update(controls(cells, columns(evaluation)))
    out["curve"] = summed_curves([c["curve"] for c in cells])
    return out


def adjust_for_multiple_tests(languages: list[dict]) -> None:
    """Add Holm's adjusted p-value ``p_holm`` to every McNemar test of the table.

    The adjustment is over all of them (every language's bins and FLaRe test split): a claim
    that a limit beats its model reads this one.
    """
    tests = [cell["mcnemar"] for entry in languages
             for cell in [*entry["bins"], *([entry["flare_test"]] if "flare_test" in entry
                                             else [])]]
    for test, adjusted in zip(tests, holm([t["p"] for t in tests])):
        test["p_holm"] = adjusted


def construction_rows(languages: Sequence[str], evaluation: dict) -> list[dict]:
    """Every hand-built construction, saturated, per bin (as ``satsim eval --lang L`` scores it).

    ``language`` names the benchmark's FLaRe language the construction recognises (its models
    saw the same test strings), or is None for a language outside the benchmark.
    """
    import languages as registry
    from satsim import constructions
    from satsim.analysis.evaluation import evaluate
    from satsim.engine.simulator import Simulator

    flare_name = {FLARE[language].language: language for language in languages}
    out = []
    for name in constructions.names():
        report = evaluate(Simulator(constructions.build(name)), registry.get(name),
                          [tuple(b) for b in evaluation["bins"]], evaluation["n"],
                          evaluation["seed"])
        out.append({"language": flare_name.get(name), "construction": name,
                    "bins": [{"min_len": b.min_len, "max_len": b.max_len, "n": b.n,
                              "accuracy": b.accuracy} for b in report.bins]})
    return out


# --- the whole benchmark ----------------------------------------------------------------------


@dataclass(frozen=True)
class BenchmarkResult:
    """A finished (or partly failed) benchmark: model rows in plan order, aggregates, tables."""

    manifest: dict
    rows: list[dict]
    languages: list[dict]
    constructions: list[dict]

    @property
    def failed(self) -> list[str]:
        """Names of the models whose run failed."""
        return [row["name"] for row in self.rows if "error" in row]


def manifest_for(scale: Scale, languages: Sequence[str], configs: list[dict],
                 overrides: dict, seed: int = 0) -> dict:
    """What a benchmark folder holds: the protocol's name, scale, languages, trials, options.

    ``data`` is the FLaRe data folder the models train on (None: satsim's samplers).
    """
    data = configs[0]["settings"]["data"]
    return {"benchmark": "flare", "scale": scale.name, "languages": list(languages),
            "trials": max(c["model"]["trial"] for c in configs), "seed": seed,
            "data": str(Path(data).parent) if data else None, "overrides": dict(overrides),
            "evaluation": configs[0]["evaluation"]}


def check_manifest(root: Path, manifest: dict) -> None:
    """Refuse a folder holding another benchmark (reads only)."""
    path = root / MANIFEST
    if not path.exists():
        return
    held = read_json(path)
    if held != manifest:
        keys = [k for k in manifest if not isinstance(held, dict) or held.get(k) != manifest[k]]
        what = keys[0] if keys else "its settings"
        raise SatsimError(f"{root} holds another benchmark (its {what} differs: "
                          f"{held.get(what) if isinstance(held, dict) else held!r}); rerun it "
                          "with its own options, or choose another --out")


def check_folder(configs: list[dict], manifest: dict, root: str | Path,
                 engine: str = "local") -> None:
    """Refuse, before anything is written, a folder that holds another benchmark or sweep.

    With the local engine, a device this machine lacks (cuda without a GPU) is refused too.
    """
    from satsim.training.sweep import check_devices, check_plan

    root = Path(root).resolve()
    check_manifest(root, manifest)
    check_plan(configs, root)
    if engine == "local":
        check_devices(configs)


def _jsonl(rows: Sequence[dict]) -> str:
    return "".join(json.dumps(row) + "\n" for row in rows)


def run_benchmark(configs: list[dict], manifest: dict, root: str | Path, *, engine: str = "local",
                  jobs: int = 1, ray_options: dict | None = None,
                  on_row: Callable[[dict], None] | None = None,
                  group_size: int = 1) -> BenchmarkResult:
    """Run (or resume) every planned model and write the tables under ``root``.

    ``root`` gets ``benchmark.json`` (the manifest), the sweep's files (``plan.json``,
    ``runs/``, ``results/``, ``results.jsonl``) and the tables: ``models.jsonl`` (one row per
    model, plan order, no wall-clock times), ``languages.jsonl`` (aggregates) and
    ``constructions.jsonl``. ``on_row`` hears each model's row as it is recorded or found.
    With ``group_size`` above 1, models of one architecture train as stacks of up to that many
    (:func:`run_models`).
    """
    from satsim.training.sweep import run_sweep

    root = Path(root).resolve()
    check_folder(configs, manifest, root, engine)
    root.mkdir(parents=True, exist_ok=True)
    if not (root / MANIFEST).exists():
        write_text_atomically(root / MANIFEST, json.dumps(manifest, indent=2) + "\n")
    rows = run_sweep(configs, root, jobs=jobs, engine=engine, ray_options=ray_options,
                     on_result=on_row, worker=run_model, group_size=group_size,
                     group_worker=run_models)
    rows = [row if "language" in row else {**row, **planned["model"]}  # Ray gave up on it
            for planned, row in zip(configs, rows)]
    models = [table_row(row) for row in rows]
    evaluation = manifest["evaluation"]
    languages = aggregate(models, manifest["languages"], evaluation)
    adjust_for_multiple_tests(languages)
    built = construction_rows(manifest["languages"], evaluation)
    write_text_atomically(root / "models.jsonl", _jsonl(models))
    write_text_atomically(root / "languages.jsonl", _jsonl(languages))
    write_text_atomically(root / "constructions.jsonl", _jsonl(built))
    return BenchmarkResult(manifest, rows, languages, built)
