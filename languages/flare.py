"""FLaRe (Butoi et al. 2025): its eighteen languages by satsim name, and its dataset folders.

A FLaRe dataset (github.com/rycolab/flare, one folder per language) holds its training split at
the root and every other split in datasets/<name>/ (validation-short, validation-long, test,
test-short-held-out; test-edit-distance for two languages). A split is line-aligned text files:

- main.tok: one string per line, its tokens separated by single spaces (the empty string is an
  empty line);
- labels.txt: 1 or 0 per line;
- next-symbols.jsonl: one line per positive, in order: a JSON list with one object per prefix,
  {"s": the tokens that may follow, sorted and space-separated, "e": whether it may end here},
  written compactly with non-ASCII characters escaped (json.dumps with separators (",", ":"));
- num-edits.txt: one line per negative, the number of random edits that made it from a
  positive, or empty for a uniformly random string;
- log-probabilities.txt: one line per positive, its log-probability under FLaRe's sampler (some
  languages only); edit-distances.txt: one line per negative (test-edit-distance only).

satsim reads and writes these byte for byte. Its symbols are single characters, so each
language maps them to FLaRe's tokens (PUSH, ×, (0, ...). A folder satsim writes adds two files
FLaRe's code does not read: sources.txt (how satsim made each string) and, at the root,
satsim.json (the language).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from languages.base import EDITS, EOS, Language, LanguageError
from languages.registry import get

TRAIN = "train"
"""satsim's name for the split at a FLaRe folder's root."""
SPLITS = "datasets"
MANIFEST = "satsim.json"
DEFINITIONS = "rycolab/neural-network-recognizers: src/recognizers/hand_picked_languages/"


@dataclass(frozen=True)
class FlareLanguage:
    """One of FLaRe's languages: its satsim language, tokens, source file and differences."""

    name: str
    language: str
    file: str  # FLaRe's definition, in DEFINITIONS
    difference: str = ""
    tokens: dict[str, str] = field(default_factory=dict)  # satsim symbol -> FLaRe token

    @property
    def source(self) -> str:
        """Where FLaRe defines the language: repository and path."""
        return DEFINITIONS + self.file


FLARE = {entry.name: entry for entry in (
    FlareLanguage("even-pairs", "even-pairs", "even_pairs.py",
                  "alphabet spelled a, b (Deletang et al.) where FLaRe writes 0, 1",
                  {"a": "0", "b": "1"}),
    FlareLanguage("repeat-01", "repeat-01", "repeat_01.py"),
    FlareLanguage("parity", "parity-odd", "parity.py",
                  "FLaRe's parity is an odd number of 1s: satsim's parity-odd"),
    FlareLanguage("cycle-navigation", "cycle-navigation", "cycle_navigation.py",
                  "moves spelled L, R, S where FLaRe writes <, >, =",
                  {"L": "<", "R": ">", "S": "="}),
    FlareLanguage("modular-arithmetic-simple", "modular-arithmetic-simple",
                  "modular_arithmetic_simple.py",
                  "evaluated from left to right, so it is not satsim's modular-arithmetic "
                  "(Deletang et al.: * before + and -)"),
    FlareLanguage("dyck-2-3", "dyck-2-3", "dyck_k_m.py",
                  "brackets spelled ( ) [ ] where FLaRe writes (0 )0 (1 )1",
                  {"(": "(0", ")": ")0", "[": "(1", "]": ")1"}),
    FlareLanguage("first", "first", "first.py"),
    FlareLanguage("majority", "majority", "majority.py",
                  "alphabet spelled a (the majority symbol), b where FLaRe writes 1, 0",
                  {"a": "1", "b": "0"}),
    FlareLanguage("stack-manipulation", "stack-manipulation", "stack_manipulation.py",
                  "operations spelled +, - where FLaRe writes PUSH, POP; FLaRe's next-symbol "
                  "sets allow POP on the empty stack at the start and leave out PUSH once its "
                  "sampler's planned pushes are spent", {"+": "PUSH", "-": "POP"}),
    FlareLanguage("marked-reversal", "marked-reversal", "marked_reversal.py"),
    FlareLanguage("unmarked-reversal", "unmarked-reversal", "unmarked_reversal.py"),
    FlareLanguage("marked-copy", "marked-copy", "marked_copy.py"),
    FlareLanguage("missing-duplicate-string", "missing-duplicate-string",
                  "missing_duplicate_string.py"),
    FlareLanguage("odds-first", "odds-first", "odds_first.py"),
    FlareLanguage("binary-addition", "binary-addition", "binary_addition.py"),
    FlareLanguage("binary-multiplication", "binary-multiplication", "binary_multiplication.py",
                  "operator spelled * where FLaRe writes ×", {"*": "×"}),
    FlareLanguage("compute-sqrt", "compute-sqrt", "compute_sqrt.py",
                  "satsim takes the exact integer square root; FLaRe's floor(math.sqrt(x)) "
                  "rounds through a float, wrong for x of more than about 52 bits"),
    FlareLanguage("bucket-sort", "bucket-sort", "bucket_sort.py"),
)}
"""FLaRe's eighteen languages by FLaRe name."""


class Tokens:
    """A language's symbols and FLaRe's tokens for them, both ways."""

    def __init__(self, language: Language) -> None:
        entry = next((e for e in FLARE.values() if e.language == language.name), None)
        given = entry.tokens if entry else {}
        self.language = language
        self.token = {a: given.get(a, a) for a in language.alphabet}
        self.symbol = {t: a for a, t in self.token.items()}

    def encode(self, s: str) -> str:
        """The line of main.tok for string ``s``."""
        return " ".join(self.token[a] for a in s)

    def decode(self, line: str, where: str) -> str:
        """The string written by a line of main.tok (LanguageError naming ``where``)."""
        try:
            return "".join(self.symbol[t] for t in line.split())
        except KeyError as error:
            known = " ".join(self.symbol)
            raise LanguageError(f"{where}: token {error.args[0]!r} is not a symbol of "
                                f"{self.language.name} (its tokens: {known})") from None

    def next_line(self, sets: list[frozenset[str]]) -> str:
        """The line of next-symbols.jsonl for one positive's next-symbol sets."""
        rows = [{"s": " ".join(sorted(self.token[a] for a in allowed if a != EOS)),
                 "e": EOS in allowed} for allowed in sets]
        return json.dumps(rows, separators=(",", ":"))

    def read_next(self, line: str, where: str) -> list[frozenset[str]]:
        """One positive's next-symbol sets from a line of next-symbols.jsonl."""
        try:
            rows = json.loads(line)
            return [frozenset([*(self.symbol[t] for t in row["s"].split()),
                               *([EOS] if row["e"] else [])]) for row in rows]
        except KeyError as error:
            raise LanguageError(f"{where}: {error.args[0]!r} is not a token of "
                                f"{self.language.name} or a key of a next-symbol set") from None
        except (ValueError, TypeError, AttributeError):
            raise LanguageError(f"{where}: not a JSON list of {{\"s\", \"e\"}} objects") from None


@dataclass
class FlareSplit:
    """One split's strings and labels, with what FLaRe (or satsim) wrote beside them."""

    strings: list[str]
    labels: list[bool]
    next_symbols: list[list[frozenset[str]]] | None = None  # one list of sets per positive
    num_edits: list[int | None] | None = None  # one per negative
    log_probabilities: list[float] | None = None  # one per positive
    edit_distances: list[int] | None = None  # one per negative
    sources: list[str] | None = None  # satsim's: one per string

    @property
    def positives(self) -> list[str]:
        """The strings labelled 1, in order."""
        return [s for s, label in zip(self.strings, self.labels) if label]


def _lines(path: Path) -> list[str] | None:
    """The lines of a file (None if it is absent); every line ends with a newline."""
    try:
        text = path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as error:
        raise LanguageError(f"cannot read {path}: {error}") from None
    lines = text.split("\n")
    if lines[-1]:
        raise LanguageError(f"{path} does not end with a newline: is it cut short?")
    return lines[:-1]


def _aligned(path: Path, count: int, what: str) -> list[str] | None:
    """A file's lines, which must be one per ``what`` (``count`` of them)."""
    lines = _lines(path)
    if lines is not None and len(lines) != count:
        raise LanguageError(f"{path} has {len(lines)} lines for {count} {what}")
    return lines


def _parsed(path: Path, count: int, what: str, parse: Callable[[str], object],
            value: str) -> list | None:
    """A file's lines, one per ``what``, each read by ``parse`` (LanguageError naming a bad one)."""
    lines = _aligned(path, count, what)
    if lines is None:
        return None
    out = []
    for number, line in enumerate(lines, 1):
        try:
            out.append(parse(line))
        except ValueError:
            raise LanguageError(f"{path} line {number}: {line!r} is not {value}") from None
    return out


def read_split(folder: str | Path, language: Language) -> FlareSplit:
    """Read one split folder of FLaRe's layout (LanguageError for anything malformed)."""
    folder, tokens = Path(folder), Tokens(language)
    strings_file = folder / "main.tok"
    lines = _lines(strings_file)
    if lines is None:
        raise LanguageError(f"{folder} holds no main.tok: it is not a FLaRe split folder")
    strings = [tokens.decode(line, f"{strings_file} line {i}") for i, line in enumerate(lines, 1)]
    labels_file = folder / "labels.txt"
    label_lines = _aligned(labels_file, len(strings), "strings")
    if label_lines is None:
        raise LanguageError(f"{folder} holds no labels.txt")
    bad = next((i for i, line in enumerate(label_lines, 1) if line not in ("0", "1")), None)
    if bad is not None:
        raise LanguageError(f"{labels_file} line {bad}: a label is 0 or 1, not "
                            f"{label_lines[bad - 1]!r}")
    labels = [line == "1" for line in label_lines]
    positives, negatives = sum(labels), len(labels) - sum(labels)
    split = FlareSplit(strings, labels)
    next_file = folder / "next-symbols.jsonl"
    next_lines = _aligned(next_file, positives, "positives")
    if next_lines is not None:
        split.next_symbols = []
        for number, (line, s) in enumerate(zip(next_lines, split.positives), 1):
            sets = tokens.read_next(line, f"{next_file} line {number}")
            if len(sets) != len(s) + 1:
                raise LanguageError(f"{next_file} line {number}: {len(sets)} sets for a string "
                                    f"of {len(s)} symbols (one per prefix: {len(s) + 1})")
            split.next_symbols.append(sets)
    split.num_edits = _parsed(folder / "num-edits.txt", negatives, "negatives",
                              lambda line: int(line) if line else None,
                              "a number of edits (or empty)")
    split.log_probabilities = _parsed(folder / "log-probabilities.txt", positives, "positives",
                                      float, "a log-probability")
    split.edit_distances = _parsed(folder / "edit-distances.txt", negatives, "negatives", int,
                                   "an edit distance")
    split.sources = _aligned(folder / "sources.txt", len(strings), "strings")
    return split


def _write_lines(path: Path, lines: list[str]) -> None:
    """Write newline-terminated lines (UTF-8)."""
    path.write_bytes("".join(line + "\n" for line in lines).encode("utf-8"))


def write_split(folder: str | Path, split: FlareSplit, language: Language) -> None:
    """Write one split folder in FLaRe's layout (the files whose data the split has)."""
    folder, tokens = Path(folder), Tokens(language)
    folder.mkdir(parents=True, exist_ok=True)
    _write_lines(folder / "main.tok", [tokens.encode(s) for s in split.strings])
    _write_lines(folder / "labels.txt", ["1" if label else "0" for label in split.labels])
    columns = {
        "next-symbols.jsonl": (split.next_symbols, tokens.next_line),
        "num-edits.txt": (split.num_edits, lambda n: "" if n is None else str(n)),
        "log-probabilities.txt": (split.log_probabilities, repr),  # as Python's print wrote them
        "edit-distances.txt": (split.edit_distances, str),
        "sources.txt": (split.sources, str),
    }
    for name, (values, line) in columns.items():
        if values is not None:
            _write_lines(folder / name, [line(v) for v in values])


def split_folders(root: str | Path) -> dict[str, Path]:
    """The split folders of a FLaRe dataset: "train" (the root), then datasets/* by name."""
    root = Path(root)
    if not root.is_dir():
        raise LanguageError(f"{root} is not a folder")
    found = {TRAIN: root}
    if (root / SPLITS).is_dir():
        for folder in sorted(p for p in (root / SPLITS).iterdir() if p.is_dir()):
            if not (folder / "main.tok").is_file():
                raise LanguageError(f"{folder} holds no main.tok: a held-out split is broken; "
                                    "restore its files or remove the folder")
            found[folder.name] = folder
    return found


def token_counts(folder: str | Path) -> list[int]:
    """How many tokens each string of a split folder's main.tok has (read, not decoded)."""
    lines = _lines(Path(folder) / "main.tok")
    if lines is None:
        raise LanguageError(f"{folder} holds no main.tok: it is not a FLaRe split folder")
    return [line.count(" ") + 1 if line else 0 for line in lines]


def read_dataset(root: str | Path, language: Language) -> dict[str, FlareSplit]:
    """Read every split of a FLaRe dataset folder, "train" first."""
    return {name: read_split(folder, language) for name, folder in split_folders(root).items()}


def check_new_folder(root: str | Path) -> Path:
    """``root`` as a Path, if a dataset can be written there (LanguageError if it is not empty)."""
    root = Path(root)
    if root.exists() and (not root.is_dir() or any(root.iterdir())):
        raise LanguageError(f"{root} is not an empty folder; write the dataset to a new one")
    return root


def write_dataset(root: str | Path, splits: dict[str, FlareSplit], language: Language) -> None:
    """Write splits in FLaRe's layout ("train" or a lone split at the root) and satsim.json.

    ``root`` must be new or empty. The files are written in place: a caller that needs the
    folder whole or absent writes it beside and renames it (satsim sample --flare does).
    """
    root = check_new_folder(root)
    for name, split in splits.items():
        at_root = name == TRAIN or len(splits) == 1
        write_split(root if at_root else root / SPLITS / name, split, language)
    manifest = json.dumps({"language": language.name, "splits": list(splits)})
    _write_lines(root / MANIFEST, [manifest])


def folder_language(root: str | Path) -> Language:
    """The language of a dataset folder: satsim.json's, else FLaRe's by the folder's name."""
    root = Path(root)
    manifest = root / MANIFEST
    if manifest.is_file():
        try:
            return get(json.loads(manifest.read_text())["language"])
        except (ValueError, KeyError, TypeError, OSError):
            raise LanguageError(f"{manifest} is damaged; name the language (--lang)") from None
    name = root.resolve().name
    if name in FLARE:
        return get(FLARE[name].language)
    raise LanguageError(f"cannot tell which language {root} holds: {name!r} is not one of "
                        f"FLaRe's ({', '.join(FLARE)}) and it has no {MANIFEST}; name the "
                        "language (--lang)")


def check_folder_language(root: str | Path, name: str) -> None:
    """Refuse to read a dataset folder as language ``name`` when it says it holds another.

    A folder that does not say (no satsim.json, not named after a FLaRe language) is read as
    ``name``.
    """
    try:
        held = folder_language(root).name
    except LanguageError:
        return
    if held != name:
        where = f"its {MANIFEST}" if (Path(root) / MANIFEST).is_file() else "its FLaRe name"
        raise LanguageError(f"{root} holds {held} ({where}), not {name}: its labels are "
                            f"{held}'s; leave out --lang, or give --lang {held}")


def dataset_digest(root: str | Path) -> str:
    """SHA-256 of every split's strings, labels and next-symbol sets (to see a folder change)."""
    digest = hashlib.sha256()
    for name, folder in split_folders(root).items():
        for file in ("main.tok", "labels.txt", "next-symbols.jsonl"):
            path = folder / file
            digest.update(f"{name}/{file}\0".encode())
            digest.update(path.read_bytes() if path.is_file() else b"\0absent")
    return digest.hexdigest()


def label_disagreements(language: Language, split: FlareSplit) -> list[int]:
    """The indices of the strings whose label is not the oracle's (FLaRe: compute-sqrt's test)."""
    return [i for i, (s, label) in enumerate(zip(split.strings, split.labels))
            if language.contains(s) != label]


EDIT_SOURCES = frozenset({*EDITS, *(f"boundary-{e}" for e in EDITS)})
"""satsim's negatives that are one edit of a positive: num-edits 1 (others are left empty)."""


def split_of_records(language: Language, rows: list[dict]) -> FlareSplit:
    """A FLaRe split of satsim's recognition records (next-symbol sets from the oracle)."""
    strings = [r["string"] for r in rows]
    labels = [bool(r["label"]) for r in rows]
    return FlareSplit(
        strings, labels,
        next_symbols=[language.next_symbols(s) for s, label in zip(strings, labels) if label],
        num_edits=[1 if r["source"] in EDIT_SOURCES else None for r in rows if not r["label"]],
        sources=[r["source"] for r in rows],
    )


def records_of_split(language: Language, split: FlareSplit, task: str) -> list[dict]:
    """Training records of a split: all strings, or for next-symbol the positives with sets.

    The next-symbol sets are the split's own (FLaRe's, for FLaRe's data), as multi-hot rows over
    the alphabet, then EOS.
    """
    if task == "recognition":
        return [{"string": s, "label": label} for s, label in zip(split.strings, split.labels)]
    if split.next_symbols is None:
        raise LanguageError("this split has no next-symbols.jsonl, which the next-symbol task "
                            "needs")
    order = (*language.alphabet, EOS)
    return [{"string": s, "label": True, "next": [[int(a in allowed) for a in order]
                                                  for allowed in sets]}
            for s, sets in zip(split.positives, split.next_symbols)]
