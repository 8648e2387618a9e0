"""``satsim sample``: datasets of a language as JSON lines or plain text."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from languages.datasets import PRESETS, SAMPLERS, TASKS
from satsim.cli.options import OutputPath, count
from satsim.cli.progress import progressbar
from satsim.errors import SatsimError
from satsim.output import replace_atomically

PROGRESS_FROM = 200_000  # show a progress bar (on stderr) from this many symbols on


def _plain(row: dict) -> str:
    """Return a record as one tab-separated line (split first when there are splits)."""
    if "input" in row:
        fields = [row["input"], row["output"]]
    elif "next" in row:
        fields = [row["string"], " ".join("".join(map(str, hot)) for hot in row["next"])]
    else:
        fields = [row["string"], "1" if row["label"] else "0", row["source"]]
    return "\t".join(([row["split"]] if row["split"] != "sample" else []) + fields)


def _write_flare(folder: str, language, names: list[str], rows: list[dict]) -> None:
    """Write the records in FLaRe's layout: strings, labels, next-symbol sets per split.

    Every split in ``names`` is written, an empty one (-n 0) as empty files.
    """
    from languages import flare

    by_split: dict[str, list[dict]] = {name: [] for name in names}
    for row in rows:
        by_split.setdefault(row["split"], []).append(row)
    splits = {name: flare.split_of_records(language, split) for name, split in by_split.items()}
    Path(folder).parent.mkdir(parents=True, exist_ok=True)
    replace_atomically(lambda partial: flare.write_dataset(partial, splits, language), folder)


@click.command("sample")
@click.option("--lang", "lang_name", required=True, help="Language (see `satsim languages`).")
@click.option("-n", "n", type=count(), default=100, show_default=True,
              help="Records (with --split: the training split; other splits are shares of it).")
@click.option("--min-len", type=count(), default=0, show_default=True, help="Shortest length.")
@click.option("--max-len", type=count(), default=40, show_default=True, help="Longest length.")
@click.option("--split", "preset", type=click.Choice(list(PRESETS)), default=None,
              help="Split preset (ignores the lengths).")
@click.option("--task", type=click.Choice(TASKS), default="recognition", show_default=True,
              help="What each record holds.")
@click.option("--negatives", default=None,
              help="mixed (half negatives, all generators; default for recognition), none, "
                   "boundary (pairs one edit apart) or one generator's label.")
@click.option("--sampler", type=click.Choice(SAMPLERS), default="uniform", show_default=True,
              help="uniform (exact), or pcfg: the critical PCFG of older suites (brackets only).")
@click.option("--max-depth", type=count(), default=None,
              help="Use the sublanguage of nesting depth <= this (bracket and counter languages).")
@click.option("--seed", type=count(), default=0, show_default=True,
              help="Seed: same seed, same bytes.")
@click.option("--json", "as_json", is_flag=True, help="Write JSON lines (one record per line).")
@click.option("--out", "out_path", type=OutputPath(), default=None,
              help="Write to this file instead of standard output.")
@click.option("--list-negatives", is_flag=True, help="List the language's negative generators.")
@click.option("--flare", "flare_dir", type=OutputPath(folder=True), default=None,
              help="Write FLaRe's dataset folder instead (main.tok, labels.txt, "
                   "next-symbols.jsonl, ...; the training split at its root, the others in "
                   "datasets/<split>/); FLaRe's tokens, recognition records.")
def command(lang_name, n, min_len, max_len, preset, task, negatives, sampler, max_depth, seed,
            as_json, out_path, list_negatives, flare_dir) -> None:
    """Sample a dataset of a language: uniform positives, oracle-checked labelled negatives."""
    import languages
    from languages import datasets
    from satsim.engine.resources import check_memory, strings_bytes

    language = languages.get(lang_name)
    if max_depth is not None:
        language = language.with_max_depth(max_depth)
    if list_negatives:
        click.echo("\n".join(language.negative_labels))
        return
    splits = datasets.splits_for(preset, min_len, max_len)
    datasets.check_options(language, task, datasets.negatives_for(task, negatives), sampler)
    total = sum(split.size(n) for split in splits)
    longest = max(max(split.max_len for split in splits), 1)
    check_memory(max(strings_bytes(split.size(n), (split.min_len + split.max_len) / 2)
                     for split in splits), f"-n {n} with lengths up to {longest}",
                 "lower -n or --max-len")
    if flare_dir is not None:
        if out_path or as_json or task == "transduction":
            raise SatsimError("--flare writes a folder of strings and labels: leave out --out, "
                              "--json and --task transduction")
        from languages.flare import check_new_folder

        check_new_folder(flare_dir)
        with progressbar(total, f"sampling {language.name}",
                         hidden=total * longest < PROGRESS_FROM) as bar:
            rows = list(datasets.build(language, n, preset=preset, min_len=min_len,
                                       max_len=max_len, task=task, negatives=negatives,
                                       sampler=sampler, seed=seed, progress=bar.update))
        _write_flare(flare_dir, language, [split.name for split in splits], rows)
        return

    def write(handle) -> None:
        with progressbar(total, f"sampling {language.name}",
                         hidden=total * longest < PROGRESS_FROM) as bar:
            for row in datasets.build(language, n, preset=preset, min_len=min_len,
                                      max_len=max_len, task=task, negatives=negatives,
                                      sampler=sampler, seed=seed, progress=bar.update):
                handle.write((datasets.dumps(row) if as_json else _plain(row)) + "\n")

    if out_path is None:
        write(sys.stdout)
        return

    def write_file(partial) -> None:
        with open(partial, "w", encoding="utf-8") as handle:
            write(handle)

    replace_atomically(write_file, out_path)  # the file appears whole, or stays as it was
