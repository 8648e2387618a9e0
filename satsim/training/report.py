"""The analysis of a finished run (``satsim report RUN``): norm growth, direction, bins, roles.

A run directory holds config.json, metrics.jsonl (a resumed run may repeat steps: the last row
of a step wins), checkpoints/step-XXXXXXXX.safetensors and final.safetensors. The report fits
‖θ_t‖ (and every layer's norm) against t, √t and t^¼ (:mod:`satsim.training.fits`), follows the
direction of θ, scores the soft model and its saturated limit per length bin
(:mod:`satsim.training.evaluate`) and gives the limit's head roles
(:mod:`satsim.analysis.head_roles`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from satsim.errors import SatsimError, first_line
from satsim.model.io import load_spec
from satsim.model.spec import ModelSpec
from satsim.training.checkpoint import spec_path, spec_steps
from satsim.training.evaluate import BinPair, default_bins, evaluate_bins, max_string_length
from satsim.training.fits import GrowthFits, fit_growth

MIN_ROWS = 3
"""Logged steps a report needs (a fit of two parameters needs more points than that)."""


@dataclass(frozen=True)
class Run:
    """What a run directory holds: its config, its metrics (one row per step) and its specs."""

    path: Path
    config: dict
    rows: list[dict]
    final: ModelSpec
    final_note: str
    checkpoints: list[tuple[int, Path]]

    def series(self, key: str) -> tuple[np.ndarray, np.ndarray]:
        """Steps and values of a scalar metric, leaving out rows where it is missing or null."""
        pairs = [(r["step"], r[key]) for r in self.rows if isinstance(r.get(key), (int, float))]
        steps, values = zip(*pairs) if pairs else ((), ())
        return np.array(steps, dtype=np.float64), np.array(values, dtype=np.float64)

    def named_series(self, key: str) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """Per name in the dict-valued metric ``key`` (norm_layers, norm_groups): steps, values."""
        out: dict[str, list[tuple[int, float]]] = {}
        for row in self.rows:
            for name, value in (row.get(key) or {}).items():
                if isinstance(value, (int, float)):
                    out.setdefault(name, []).append((row["step"], value))
        return {name: (np.array([s for s, _ in pts], dtype=np.float64),
                       np.array([v for _, v in pts], dtype=np.float64))
                for name, pts in out.items()}

    def similarity(self) -> tuple[np.ndarray, np.ndarray]:
        """Steps and representation similarity per stream (rows × streams) where logged."""
        rows = [(r["step"], r["representation_similarity"]) for r in self.rows
                if isinstance(r.get("representation_similarity"), list)
                and r["representation_similarity"]]
        width = min((len(v) for _, v in rows), default=0)
        return (np.array([s for s, _ in rows], dtype=np.float64),
                np.array([v[:width] for _, v in rows], dtype=np.float64).reshape(len(rows), width))


def _read_json(path: Path, what: str):
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        raise SatsimError(f"no {what} at {path}") from None
    except (OSError, ValueError) as error:
        raise SatsimError(f"cannot read {what} {path}: {first_line(error)}") from None


def read_metrics(path: Path) -> list[dict]:
    """The rows of metrics.jsonl, one per step (the last row of a repeated step), by step."""
    try:
        lines = path.read_text().splitlines()
    except FileNotFoundError:
        raise SatsimError(f"no metrics at {path}") from None
    except OSError as error:
        raise SatsimError(f"cannot read metrics {path}: {error}") from None
    by_step: dict[int, dict] = {}
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError:
            raise SatsimError(f"{path} line {number} is not JSON") from None
        if not isinstance(row, dict) or not isinstance(row.get("step"), int):
            raise SatsimError(f"{path} line {number} has no integer 'step'")
        if not isinstance(row.get("norm"), (int, float)) or not np.isfinite(row["norm"]):
            raise SatsimError(f"{path} line {number} has no finite 'norm'")
        by_step[row["step"]] = row
    return [by_step[step] for step in sorted(by_step)]


def load_run(path: str | Path) -> Run:
    """Read a run directory; anything missing or damaged is a one-line SatsimError."""
    path = Path(path)
    if not path.is_dir():
        raise SatsimError(f"no run directory at {path}")
    config = _read_json(path / "config.json", "training config")
    if not isinstance(config, dict) or not all(k in config for k in ("lang", "task")):
        raise SatsimError(f"{path / 'config.json'} is not a training config (needs lang, task)")
    rows = read_metrics(path / "metrics.jsonl")
    if len(rows) < MIN_ROWS:
        raise SatsimError(f"{path / 'metrics.jsonl'} has {len(rows)} logged steps; a report "
                          f"needs at least {MIN_ROWS}")
    checkpoints = [(step, spec_path(path, step)) for step in spec_steps(path)]
    if (path / "final.safetensors").exists():
        final, note = load_spec(str(path / "final.safetensors")), ""
    elif checkpoints:
        step, latest = checkpoints[-1]
        final, note = load_spec(str(latest)), f"no final.safetensors: using step {step}"
    else:
        raise SatsimError(f"no final.safetensors and no checkpoints in {path}")
    return Run(path, config, rows, final, note, checkpoints)


def flat_parameters(spec: ModelSpec) -> np.ndarray:
    """Every tensor of ``spec`` flattened into one float64 vector, in sorted name order."""
    tensors = spec.tensors()
    return np.concatenate([np.ravel(tensors[name]).astype(np.float64) for name in sorted(tensors)])


def vector_cosine(ab: float, aa: float, bb: float) -> float | None:
    """Cos from ⟨a, b⟩, ‖a‖² and ‖b‖²: None where either vector is zero (it has no direction)."""
    denominator = math.sqrt(aa * bb)
    return ab / denominator if denominator > 0 else None


def cosine(a: np.ndarray, b: np.ndarray) -> float | None:
    """cos(a, b) of two vectors (None if either is zero or their shapes differ)."""
    if a.shape != b.shape:
        return None
    return vector_cosine(float(a @ b), float(a @ a), float(b @ b))


def direction_to_final(run: Run) -> list[dict]:
    """Per checkpoint: its step, ‖θ‖, cos(θ_checkpoint, θ_final) and cos to the one before."""
    final = flat_parameters(run.final)
    out = []
    before = None
    for step, path in run.checkpoints:
        theta = flat_parameters(load_spec(str(path)))
        out.append({"step": step, "norm": float(np.linalg.norm(theta)),
                    "cosine_to_final": cosine(theta, final),
                    "cosine_to_previous": None if before is None else cosine(theta, before)})
        before = theta
    return out


def _second_half_mean(steps: np.ndarray, values: np.ndarray) -> float | None:
    if len(values) == 0:
        return None
    return float(values[steps >= steps[-1] / 2].mean())


@dataclass(frozen=True)
class Report:
    """Everything ``satsim report`` says about a run."""

    run: Run
    norm: GrowthFits
    layers: dict[str, GrowthFits]
    groups: dict[str, GrowthFits]
    checkpoint_direction: list[dict]
    bins: list[BinPair]
    roles: list
    roles_strings: tuple[int, int, int]  # n, min_len, max_len
    limit_name: str
    n: int
    seed: int
    device: str = ""
    notes: list[str] = field(default_factory=list)

    def direction_summary(self) -> dict:
        """The logged direction cosine: its last value and its mean over the second half."""
        steps, values = self.run.series("direction_cosine")
        return {"last": float(values[-1]) if len(values) else None,
                "second_half_mean": _second_half_mean(steps, values)}

    def last_eval(self) -> tuple[int, dict] | None:
        """The final held-out evaluation (summary.json), else the last logged one."""
        summary = self.run.path / "summary.json"
        if summary.exists():
            final = _read_json(summary, "run summary")
            if isinstance(final, dict) and isinstance(final.get("eval"), dict):
                return final.get("steps"), final["eval"]
        rows = [r for r in self.run.rows if isinstance(r.get("eval"), dict) and r["eval"]]
        return (rows[-1]["step"], rows[-1]["eval"]) if rows else None

    def to_dict(self) -> dict:
        """A JSON-ready dict (the ``--json`` output of ``satsim report``)."""
        last = self.run.rows[-1]
        steps, similarity = self.run.similarity()
        evaluation = self.last_eval()
        return {
            "run": str(self.run.path), "config": self.run.config,
            "steps_logged": len(self.run.rows), "last_step": last["step"],
            "loss": last.get("loss"), "accuracy": last.get("accuracy"),
            "eval": None if evaluation is None else {"step": evaluation[0],
                                                     "accuracy": evaluation[1]},
            "norm": self.norm.to_dict(),
            "layers": {k: v.to_dict() for k, v in self.layers.items()},
            "groups": {k: v.to_dict() for k, v in self.groups.items()},
            "direction": {**self.direction_summary(), "checkpoints": self.checkpoint_direction},
            "representation_similarity": {
                "step": float(steps[-1]) if len(steps) else None,
                "streams": similarity[-1].tolist() if len(steps) else []},
            "bins": [b.to_dict() for b in self.bins], "limit_model": self.limit_name,
            "n": self.n, "seed": self.seed, "device": self.device,
            "head_roles": [r.to_dict() for r in self.roles],
            "head_roles_strings": dict(zip(("n", "min_len", "max_len"), self.roles_strings)),
            "notes": self.notes,
        }


def _fits(series: dict[str, tuple[np.ndarray, np.ndarray]]) -> dict[str, GrowthFits]:
    return {name: fit_growth(t, y) for name, (t, y) in series.items() if len(t) >= 2}


def build_report(path: str | Path, bins: Sequence[tuple[int, int]] | None = None, n: int = 100,
                 seed: int = 0, *, device: str = "auto", soft_max_len: int = 2048,
                 roles_n: int = 50, progress: Callable[[str], None] | None = None,
                 on_strings: Callable[[str, tuple[int, int], int, int], None] | None = None
                 ) -> Report:
    """Read the run at ``path`` and compute every part of its report.

    ``progress`` hears a line as each bin of each model and the head roles are done;
    ``on_strings`` (model, bin, strings done, strings in the bin) as each tenth of a bin is.
    """
    import languages
    from satsim.analysis.head_roles import roles_from_tie_sizes
    from satsim.analysis.strings import test_set
    from satsim.engine.kernels.second_process import wait_beside
    from satsim.engine.resources import check_memory, strings_bytes
    from satsim.saturation import limit
    from satsim.saturation.exact import BESIDE
    from satsim.saturation.kernels_beside import limit_kernels_beside
    from satsim.saturation.signs import LimitPredictor, limit_tie_sizes

    if n < 1 or roles_n < 1:
        raise SatsimError("-n and the number of head-role strings must be at least 1")
    run = load_run(path)
    language = languages.get(run.config["lang"])
    if run.final.output.task != run.config["task"]:
        raise SatsimError(f"the final model is a {run.final.output.task} model, but the run's "
                          f"task is {run.config['task']}")
    bins = tuple(bins) if bins else default_bins(run.config.get("split"))
    check_limit_memory(run.final, bins)
    check_memory(strings_bytes(roles_n, sum(bins[0]) / 2),
                 f"--roles-n {roles_n:,} strings of up to {bins[0][1]:,} symbols",
                 "lower --roles-n")
    # the limit's kernels compile in a second process meanwhile, where they are cold
    limit_kernels_beside(f"from {__name__} import load_run\n"
                          f"model = load_run({str(run.path)!r}).final", language.alphabet[0] * 2)
    limit_spec = limit(run.final)
    saturated = LimitPredictor(run.final)
    tell = progress or (lambda line: None)
    pairs = evaluate_bins(run.final, saturated, language, bins, n, seed, device=device,
                          soft_max_len=soft_max_len,
                          on_bin=lambda model, b: tell(f"{model}, bin {b.min_len}–{b.max_len}: "
                                                       f"accuracy {b.accuracy:.4f}"),
                          on_strings=on_strings)
    low, high = bins[0]
    cap = max_string_length(limit_spec)
    high = high if cap is None else min(high, cap)
    low = max(low, int(limit_spec.bos is None and limit_spec.eos is None))
    notes = [run.final_note] if run.final_note else []
    strings: list[str] = []
    if low <= high:
        strings, _ = test_set(language, roles_n, low, high, seed)
    else:
        notes.append(f"no head roles: the first bin is longer than the model reads ({high})")
    roles = roles_from_tie_sizes(limit_tie_sizes(run.final, strings)) if strings else []
    wait_beside(BESIDE)  # where no string needed it: no process outlives the report
    tell(f"head roles from {len(strings)} strings")
    notes.append(saturated.note())
    return Report(run, fit_growth(*run.series("norm")), _fits(run.named_series("norm_layers")),
                  _fits(run.named_series("norm_groups")), direction_to_final(run), pairs, roles,
                  (len(strings), low, high), limit_spec.name, n, seed, device, notes)


def check_limit_memory(spec: ModelSpec, bins: Sequence[tuple[int, int]]) -> None:
    """Refuse bins whose longest string the saturated limit could not expand in free memory.

    A string the leading-order network cannot answer takes the exact expansion, whose memory
    grows with its length: checked for the longest string before any work.
    """
    from satsim.engine.resources import check_memory
    from satsim.saturation.exact import exact_limit_bytes

    cap = max_string_length(spec)
    longest = max(high for _, high in bins)
    longest = longest if cap is None else min(longest, cap)
    tokens = longest + (spec.bos is not None) + (spec.eos is not None)
    check_memory(exact_limit_bytes(spec, tokens),
                 f"the saturated limit of strings of {longest:,} symbols (its exact expansion "
                 "keeps every residual stream as a series)", "lower the longest of --bins")


def _num(value, spec: str = ".4f") -> str:
    return "–" if value is None else format(value, spec)


def _fit_lines(growth: GrowthFits) -> list[str]:
    lines = [f"  {'fit ‖θ_t‖ = a·f(t) + b':<24} {'a':>11} {'b':>11} {'R²':>9} {'RMSE':>10}"]
    for fit in growth.fits:
        mark = "  ← best" if fit.form == growth.best else ""
        lines.append(f"  {'f = ' + fit.form:<24} {fit.a:>11.4g} {fit.b:>11.4g} "
                     f"{_num(fit.r2, '9.6f')} {fit.rmse:>10.4g}{mark}")
    if growth.power is not None:
        p = growth.power
        lines.append(f"  {f'free power: k = {p.exponent:.3f}':<24} {p.a:>11.4g} {p.b:>11.4g} "
                     f"{_num(p.r2, '9.6f')} {p.rmse:>10.4g}  (one parameter more; not ranked)")
    return lines


def _layer_lines(layers: dict[str, GrowthFits]) -> list[str]:
    lines = [f"  {'':<14} {'start':>10} {'end':>10} {'2nd-half growth':>16}  best fit (R²)"]
    for name, g in layers.items():
        growth = "–" if g.growth_rate is None else f"{100 * g.growth_rate:+.1f}%"
        best = "–" if g.best is None else f"{g.best} ({g.fit(g.best).r2:.4f})"
        lines.append(f"  {name:<14} {g.start:>10.4g} {g.end:>10.4g} {growth:>16}  {best}")
    return lines


def _bin_lines(report: Report) -> list[str]:
    lines = [f"  {'length':<13} {'strings':>7} {'soft':>8} {'limit':>8}  note"]
    for pair in report.bins:
        count = (pair.limit or pair.soft).n if (pair.limit or pair.soft) else 0
        soft = _num(pair.soft.accuracy if pair.soft else None)
        limit_accuracy = _num(pair.limit.accuracy if pair.limit else None)
        lines.append(f"  {f'{pair.min_len}–{pair.max_len}':<13} {count:>7} {soft:>8} "
                     f"{limit_accuracy:>8}  {pair.note}".rstrip())
    return lines


def render(report: Report) -> str:
    """The report as text, one section per question."""
    run, config = report.run, report.run.config
    last = run.rows[-1]
    out = [f"run {run.path} · {config['lang']} · {config['task']} · split "
           f"{config.get('split', '?')} · {config.get('optimizer', '?')} lr "
           f"{config.get('lr', '?')} wd {config.get('weight_decay', '?')} · "
           f"{config.get('steps', '?')} steps"]
    out.append(f"last logged step {last['step']}: loss {_num(last.get('loss'), '.4g')}, "
               f"batch accuracy {_num(last.get('accuracy'))}")
    evaluation = report.last_eval()
    if evaluation is not None:
        listed = ", ".join(f"{k} {_num(v)}" for k, v in evaluation[1].items())
        out.append(f"held-out accuracy at step {evaluation[0]}: {listed}")
    out.extend(f"note: {note}" for note in report.notes)
    g = report.norm
    growth = "–" if g.growth_rate is None else f"{100 * g.growth_rate:+.1f}%"
    out.append(f"\nparameter norm ‖θ‖: {g.start:.4g} at step {run.rows[0]['step']} → {g.end:.4g} "
               f"at step {last['step']} (second-half growth {growth}); best fit: {g.best or '–'}")
    out.extend(_fit_lines(g))
    if report.layers:
        out.append("\nper-layer norms")
        out.extend(_layer_lines(report.layers))
    direction = report.direction_summary()
    out.append(f"\ndirection: cos(θ_t, θ at the previous logged step) last "
               f"{_num(direction['last'], '.6f')}, second-half mean "
               f"{_num(direction['second_half_mean'], '.6f')}")
    if report.checkpoint_direction:
        out.append("  cos(θ_checkpoint, θ_final): " + ", ".join(
            f"step {c['step']} {_num(c['cosine_to_final'])}" for c in report.checkpoint_direction))
        out.append("  cos(θ_checkpoint, θ_previous checkpoint): " + ", ".join(
            f"step {c['step']} {_num(c['cosine_to_previous'], '.6f')}"
            for c in report.checkpoint_direction[1:]))
    steps, similarity = run.similarity()
    if len(steps):
        out.append(f"representation similarity cos(f(x;θ), f(x;1000θ)) per stream at step "
                   f"{int(steps[-1])}: " + " ".join(f"{v:.4f}" for v in similarity[-1]))
    out.append(f"\naccuracy per length bin ({report.n} strings each, seed {report.seed}): soft = "
               f"the trained model, limit = {report.limit_name} in the simulator")
    out.extend(_bin_lines(report))
    n, low, high = report.roles_strings
    out.append(f"\nhead roles of the saturated limit ({n} strings of length {low}–{high})")
    out.append(f"  {'layer':>5} {'head':>4}  {'role':<12} {'median |S|':>10} "
               f"{'median |S|/|J|':>15}")
    for r in report.roles:
        out.append(f"  {r.layer:>5} {r.head:>4}  {r.role:<12} {r.median_tie_size:>10.1f} "
                   f"{r.median_fraction:>15.3f}")
    return "\n".join(out)
