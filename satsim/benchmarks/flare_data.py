"""FLaRe's published data as the benchmark's input: one folder per language, split as FLaRe does.

FLaRe's code (rycolab/neural-network-recognizers: ``prepare_language.bash``,
``neural_networks/{data,train,evaluate}.py``) trains on a language folder's root split
(main.tok, labels.txt), validates on ``datasets/validation-short`` or
``datasets/validation-long`` and reports the micro-averaged recognition accuracy on the whole of
``datasets/test``. A token is a whitespace-separated word of main.tok; a label is
``int(line.strip())``, 0 or 1. :func:`check_data_root` finds the languages a folder holds and
refuses a folder that lacks what the benchmark reads, before any work.

Labels: the benchmark scores FLaRe's test split against FLaRe's own labels, as FLaRe reports
it. Where those are not the oracle's (compute-sqrt: FLaRe's ``floor(math.sqrt(x))`` rounds
through a float and mislabels long strings), the row also gives the accuracy against the exact
labels and how many strings differ.
"""

from __future__ import annotations

from pathlib import Path

from languages.base import LanguageError
from languages.flare import FLARE, SPLITS, FlareSplit, read_split
from satsim.errors import SatsimError

VALIDATION = "validation-long"
"""The split FLaRe's "expressivity" setting selects checkpoints on."""
TEST = "test"
"""The split FLaRe reports: lengths 0–500, one accuracy."""
NEEDED = tuple(f"{where}{name}" for where in ("", f"{SPLITS}/{VALIDATION}/", f"{SPLITS}/{TEST}/")
               for name in ("main.tok", "labels.txt"))
"""The files of a language folder the benchmark reads."""


def data_languages(root: str | Path) -> list[str]:
    """The FLaRe languages a data folder holds a folder for, in FLaRe's order."""
    root = Path(root)
    if not root.is_dir():
        raise SatsimError(f"--data {root} is not a folder; give a folder laid out as FLaRe's "
                          "data (one folder per language, e.g. a checkout of "
                          "github.com/rycolab/flare)")
    found = [name for name in FLARE if (root / name).is_dir()]
    if not found:
        raise SatsimError(f"--data {root} holds no folder named after a FLaRe language "
                          f"({', '.join(FLARE)}); give the folder that holds them")
    return found


def check_language_folder(folder: Path) -> None:
    """Refuse a language folder that lacks a file the benchmark reads (one line, naming it)."""
    for name in NEEDED:
        if not (folder / name).is_file():
            raise SatsimError(f"--data: {folder / name} is missing; a FLaRe language folder "
                              "holds main.tok and labels.txt, and datasets/validation-long and "
                              "datasets/test with theirs (restore it from FLaRe's data)")


def check_data_root(root: str | Path, languages: list[str]) -> Path:
    """The resolved data folder, once every named language's folder has FLaRe's files."""
    held = data_languages(root)
    root = Path(root).resolve()
    missing = [name for name in languages if name not in held]
    if missing:
        raise SatsimError(f"--data {root} has no folder for {', '.join(missing)}; it holds "
                          f"{', '.join(held)}: name those with --lang")
    for name in languages:
        check_language_folder(root / name)
    return root


def read_test_split(folder: str | Path, language) -> FlareSplit:
    """A language folder's test split, as FLaRe's files give it (one-line SatsimError if bad)."""
    try:
        return read_split(Path(folder) / SPLITS / TEST, language)
    except LanguageError as error:
        raise SatsimError(str(error)) from None
    except OSError as error:
        raise SatsimError(f"cannot read {folder}: {error.strerror or error}") from None
