"""``satsim harden MODEL -o OUT``: each head hard or a counter where it keeps the decisions.

The hybrid is written as a spec; :mod:`satsim.analysis.harden` does the work.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import click

from satsim.cli.options import NonEmptyPath, OutputPath, count, get_language, load_model
from satsim.errors import SatsimError

ZOO_BINS = "0-50,51-100,101-150"


def _strings(spec, model: str, lang_name: str | None, bins, n: int, seed: int
             ) -> tuple[list[list], Callable[[object], int] | None, str]:
    """Each bin's strings, where their scored positions start, and what they are.

    The language's strings (positives for a next-symbol model); else a zoo checkpoint's own
    task (satsim.interop.zoo_tasks: examples read with teacher forcing, scored from ``<sep>``
    on); else random strings.
    """
    from satsim.analysis.strings import bin_seed, sample_strings, test_set
    from satsim.interop import zoo_tasks

    task = zoo_tasks.task_of(Path(model).name) if lang_name is None else None
    if task is not None:
        return [[zoo_tasks.model_input(whole) for whole in zoo_tasks.draw_examples(
            task, n, low, high, bin_seed(seed, index))] for index, (low, high) in enumerate(bins)
        ], lambda read: list(read).index(zoo_tasks.SEP), f"zoo task {task.name}, scored from <sep>"
    language = None if lang_name is None else get_language(lang_name)
    groups = []
    for index, (low, high) in enumerate(bins):
        if language is None:
            groups.append(sample_strings(spec, None, n, high, bin_seed(seed, index), low))
        else:
            groups.append(test_set(language, n, low, high, bin_seed(seed, index),
                                   negatives=spec.output.task == "recognition")[0])
    return groups, None, "random strings" if language is None else f"language {lang_name}"


def _delta_text(delta, default: str = "-") -> str:
    """A width for the table; ``default`` where there is none (τ: the default tolerance)."""
    return default if delta is None else f"{delta:g}"


def _print(result) -> None:
    bins = [f"{low}-{high}" for low, high in result.bins]
    click.echo(f"{'head':<6} {'role':<9} {'kind':<14} {'δ':>6}  "
               + "  ".join(f"{b:>9}" for b in bins[:result.searched])
               + "  classes   tolerant-hard δ / score-class δ")
    for r in result.heads:
        widths = (",".join(_delta_text(w, "τ") for w in r.tolerant_widths) or "-") + " / " + (
            ",".join(map(_delta_text, r.class_widths)) or "-")
        click.echo(f"{r.layer}.{r.head:<4} {r.role:<9} {r.kind:<14} {_delta_text(r.delta):>6}  "
                   + "  ".join(f"{a:>9.3f}" for a in r.agreement)
                   + f"  {'/'.join(map(str, r.classes)) or '-':<9} {widths}")
    shares = [f"{b} {a:.3f}" + (" (held out)" if index >= result.searched else "")
              for index, (b, a) in enumerate(zip(bins, result.agreement))]
    click.echo(f"hybrid: {result.hardened} of {len(result.heads)} heads hardened; agreement with "
               "the soft model per bin " + ", ".join(shares))


@click.command("harden")
@click.argument("model", type=NonEmptyPath())
@click.option("-o", "--output", "out", type=OutputPath(), required=True,
              help="Where to write the hybrid model (.safetensors).")
@click.option("--lang", "lang_name", default=None,
              help="Draw each bin's strings from this language (default: a zoo checkpoint's "
                   "own task, else random strings).")
@click.option("--bins", default=ZOO_BINS, show_default=True, help="Length bins, low-high,...")
@click.option("-n", "n", type=count(1), default=40, show_default=True,
              help="Strings per bin.")
@click.option("--held-out", "held_out", type=count(), default=0, show_default=True,
              help="How many of the longest bins the search leaves out: the hybrid must agree on "
                   "the others; its agreement on these is only measured.")
@click.option("--prefer", type=click.Choice(("selector", "counter")), default="selector",
              show_default=True,
              help="For a head that keeps the decisions both as tolerant-hard and as score-class, "
                   "which the search tries first.")
@click.option("--seed", type=count(), default=0, show_default=True, help="Sampling seed.")
@click.option("--json", "as_json", is_flag=True, help="Print the tables as JSON.")
def command(model: str, out: str, lang_name: str | None, bins: str, n: int, held_out: int,
            prefer: str, seed: int, as_json: bool) -> None:
    """Harden MODEL (a satsim model file or a Hugging Face GPT-2 checkpoint folder) head by head.

    Each head is tried alone as tolerant-hard (from saturated up) and score-class over a grid
    of widths; then heads are kept together greedily while every bin keeps at least 99 % of
    the strings' answers equal to the soft model's. Writes the hybrid, each head's kind fixed.
    """
    from dataclasses import asdict

    from satsim.analysis.evaluation import parse_bins
    from satsim.analysis.harden import harden
    from satsim.analysis.strings import check_test_set_memory
    from satsim.model.io import save_spec

    bin_list = parse_bins(bins)
    if held_out >= len(bin_list):
        raise SatsimError(f"--held-out {held_out} leaves none of the {len(bin_list)} bins to "
                          "search; give a smaller number or more --bins")
    check_test_set_memory(bin_list, n, "lower -n or the lengths of --bins")
    spec = load_model(None, model)
    if spec.fixed_kinds:
        raise SatsimError(f"{model} already fixes attention kinds per head; harden its soft model")
    strings, scored_from, source = _strings(spec, model, lang_name, bin_list, n, seed)
    result = harden(spec, strings, bin_list, scored_from, held_out=held_out, prefer=prefer)
    save_spec(result.spec, out)
    if as_json:
        click.echo(json.dumps({"model": spec.name, "output": out, "strings": source,
                               "bins": bin_list,
                               "agreement": result.agreement, "searched": result.searched,
                               "hardened": result.hardened,
                               "heads": [asdict(r) for r in result.heads]}))
    else:
        click.echo(f"strings: {source}")
        _print(result)
        click.echo(f"wrote {out}")
