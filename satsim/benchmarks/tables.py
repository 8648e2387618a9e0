"""The FLaRe benchmark's rows as text: a line per model, tables per bin, markdown for docs."""

from __future__ import annotations

from collections.abc import Sequence

from satsim.benchmarks.flare import columns

HEADINGS = {"soft": "soft", "limit": "limit", "limit_init": "limit at init"}


def heading(column: str) -> str:
    """A column's heading: soft, c = 10, c = 100, limit."""
    return HEADINGS.get(column) or f"c = {column.removeprefix('soft_c')}"


def bin_label(low: int, high: int) -> str:
    """A bin as 0–40."""
    return f"{low}–{high}"


def _accuracy(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"


def model_line(row: dict, evaluation: dict) -> str:
    """One finished model in a line: per bin soft / scaled twins / limit, then ‖θ‖."""
    if "error" in row:
        return f"{row['name']:<32} failed: {row['error']}"
    cells = []
    for cell in row["bins"]:
        values = "/".join(_accuracy(cell[c]) for c in columns(evaluation))
        undetermined = f" ({cell['undetermined']} undet.)" if cell["undetermined"] else ""
        cells.append(f"{bin_label(cell['min_len'], cell['max_len'])} {values}{undetermined}")
    test = row.get("flare_test")
    if test:
        values = "/".join(_accuracy(test[c]) for c in columns(evaluation))
        cells.append(f"FLaRe test {values}")
    norm = row["norm_growth"]
    return (f"{row['name']:<32} " + " · ".join(cells)
            + f" · ‖θ‖ {norm['start']:.1f}→{norm['end']:.1f} ({norm['best'] or '–'})"
            + f" · step {row['selected_step']}")


def _stat(entry: dict | None) -> str:
    if entry is None:
        return "–"
    return f"{entry['mean']:.2f} ± {entry['std']:.2f} ({entry['max']:.2f})"


def _construction_cell(constructions: Sequence[dict], language: str, index: int) -> str:
    for row in constructions:
        if row["language"] and row["language"] == language:
            return f"{row['bins'][index]['accuracy']:.2f} ({row['construction']})"
    return ""


def bin_tables(languages: Sequence[dict], constructions: Sequence[dict], evaluation: dict,
               markdown: bool = False) -> str:
    """One table per length bin: each column's mean ± std (max) per language.

    Beside them, the model–limit agreement (mean over trials, 95% interval) and the share of
    trials whose limit is constant, as in the controls tables.
    """
    names = columns(evaluation)
    head = ["language", *(heading(c) for c in names), "agreement [95% CI]", "constant limits",
            "undetermined", "construction"]
    out = []
    for index, (low, high) in enumerate(evaluation["bins"]):
        rows = []
        for entry in languages:
            cell = entry["bins"][index]
            rows.append([entry["language"], *(_stat(cell[c]) for c in names),
                         *_agreement_cells(cell), f"{cell['undetermined']}/{cell['strings']}",
                         _construction_cell(constructions, entry["language"], index)])
        title = f"length {bin_label(low, high)}"
        out.append(_render(title, head, rows, markdown))
    return "\n\n".join(out)


def flare_test_table(languages: Sequence[dict], evaluation: dict, markdown: bool = False) -> str:
    """FLaRe's test split (0–500), one accuracy per column as FLaRe reports it."""
    names = columns(evaluation)
    head = ["language", *(heading(c) for c in names), "undetermined", "relabelled"]
    rows = []
    for entry in languages:
        test = entry["flare_test"]
        rows.append([entry["language"], *(_stat(test[c]) for c in names),
                     f"{test['undetermined']}/{test['strings']}",
                     f"{test['relabelled']} (oracle labels: "
                     f"{_stat(test['oracle']['soft'])} soft, {_stat(test['oracle']['limit'])} "
                     "limit)" if test["relabelled"] else "0"])
    return _render("FLaRe's test split (0–500, FLaRe's labels)", head, rows, markdown)


def _interval(ci: list[float] | None) -> str:
    return "–" if ci is None else f"[{ci[0]:.2f}, {ci[1]:.2f}]"


def _agreement_cells(cell: dict) -> list[str]:
    """Model–limit agreement with its interval, and the share of constant limits."""
    agreement = "–" if cell["agreement"] is None else f"{cell['agreement']:.2f}"
    constant = "–" if cell["constant_limits"] is None else f"{cell['constant_limits']:.2f}"
    return [f"{agreement} {_interval(cell['agreement_ci'])}", constant]


def _controls_row(language: str, cell: dict) -> list[str]:
    test = cell["mcnemar"]
    agreement, constant = _agreement_cells(cell)
    return [language, _interval(cell["ci"]["soft"]), _interval(cell["ci"]["limit"]),
            _interval(cell["ci"]["limit_init"]), agreement,
            f"{test['soft_only']}/{test['limit_only']}",
            f"{_p(test['p'])} ({_p(test.get('p_holm', test['p']))})", constant]


def _p(value: float) -> str:
    """A p-value; one below a float's range (stored as 0.0) as < 1e-300."""
    return "< 1e-300" if value == 0 else f"{value:.2g}"


def controls_tables(languages: Sequence[dict], evaluation: dict, markdown: bool = False) -> str:
    """Per test set, the controls of the limit column, language by language.

    95% bootstrap intervals of the mean accuracy (test strings resampled) of the model, its
    limit and the limit at initialisation; model–limit agreement string by string with its
    interval; McNemar's discordant pairs (model only / limit only) and exact p (Holm-adjusted
    over the table); the share of trials whose limit answers one way throughout.
    """
    head = ["language", "soft 95% CI", "limit 95% CI", "limit at init 95% CI",
            "agreement [95% CI]", "model only/limit only", "McNemar p (Holm)",
            "constant limits"]
    sets = [(f"controls, length {bin_label(low, high)}", index)
            for index, (low, high) in enumerate(evaluation["bins"])]
    if evaluation.get("flare_test"):
        sets.append(("controls, FLaRe's test split", None))
    out = []
    for title, index in sets:
        rows = [_controls_row(entry["language"], entry["flare_test"] if index is None
                              else entry["bins"][index]) for entry in languages]
        out.append(_render(title, head, rows, markdown))
    return "\n\n".join(out)


def norm_table(languages: Sequence[dict], markdown: bool = False) -> str:
    """‖θ‖ at the first and last logged step, its second-half growth and the best fits."""
    head = ["language", "‖θ‖ start", "‖θ‖ end", "2nd-half growth", "best fit (trials)"]
    rows = []
    for entry in languages:
        norm = entry["norm_growth"]
        growth = norm["growth_rate"]
        rows.append([entry["language"], _stat(norm["start"]), _stat(norm["end"]),
                     "–" if growth is None else f"{100 * growth['mean']:+.1f}%",
                     ", ".join(f"{form} ×{k}" for form, k in norm["best"].items()) or "–"])
    return _render("parameter norm over training", head, rows, markdown)


def construction_table(constructions: Sequence[dict], evaluation: dict,
                       markdown: bool = False) -> str:
    """The constructions of languages outside the benchmark, saturated, per bin."""
    head = ["construction", *(bin_label(*b) for b in evaluation["bins"])]
    rows = [[row["construction"], *(f"{b['accuracy']:.2f}" for b in row["bins"])]
            for row in constructions if not row["language"]]
    return _render("hand-built constructions of other languages, saturated", head, rows,
                   markdown)


def _render(title: str, head: list[str], rows: list[list[str]], markdown: bool) -> str:
    if markdown:
        lines = [f"**{title}**", "", "| " + " | ".join(head) + " |",
                 "|" + "|".join(" --- " for _ in head) + "|"]
        lines += ["| " + " | ".join(row) + " |" for row in rows]
        return "\n".join(lines)
    widths = [max(len(str(x)) for x in column) for column in zip(head, *rows)]
    lines = [title, "  ".join(h.ljust(w) for h, w in zip(head, widths)).rstrip()]
    lines += ["  ".join(x.ljust(w) for x, w in zip(row, widths)).rstrip() for row in rows]
    return "\n".join(lines)


def summary(manifest: dict, languages: Sequence[dict], constructions: Sequence[dict],
            markdown: bool = False) -> str:
    """Every table of a benchmark, with the line that says how to read them."""
    evaluation = manifest["evaluation"]
    intro = (f"FLaRe benchmark, scale {manifest['scale']}: {len(manifest['languages'])} "
             f"languages × {manifest['trials']} trials, {evaluation['n']} test strings per bin "
             "(half positives, half hard negatives). Cells: accuracy mean ± std (max) over "
             "trials. soft: the trained model (float64); c = 10, c = 100: its twin at cθ; "
             "limit: its exact saturated limit (limit_signs), undetermined strings counted "
             "wrong; construction: satsim's hand-built model, saturated.")
    if manifest.get("data"):
        intro += (f" Trained on FLaRe's data ({manifest['data']}); the bins are satsim's "
                  "test sets, FLaRe's test split is scored against FLaRe's labels (relabelled: "
                  "strings whose FLaRe label is not the oracle's).")
    parts = [intro, bin_tables(languages, constructions, evaluation, markdown)]
    if evaluation.get("flare_test"):
        parts.append(flare_test_table(languages, evaluation, markdown))
    parts.append(controls_tables(languages, evaluation, markdown))
    parts.append(norm_table(languages, markdown))
    if any(not row["language"] for row in constructions):
        parts.append(construction_table(constructions, evaluation, markdown))
    return "\n\n".join(parts)
