"""FLaRe's languages and dataset folders, checked against FLaRe's own published files.

tests/data/flare holds the first lines of every split of every language of FLaRe's data
(github.com/rycolab/flare, cut by scripts/flare_fixture.py; its test split of
stack-manipulation, and the next-symbol sets of the test splits, are too large to be in the copy
it was cut from). Their labels and next-symbol sets are the authors' oracle, independent of
satsim's code.
"""

import filecmp
import json
import math

import pytest
from click.testing import CliRunner

import languages
from languages import EOS, LanguageError, datasets, flare
from satsim.cli.main import cli
from tests.support.lang_refs import REFERENCE
from tests.support.paths import DATA

FIXTURE = DATA / "flare"
FOLDERS = sorted(p.name for p in FIXTURE.iterdir())
BUTOI = languages.references.BUTOI_FLARE


def language_of(name):
    return languages.get(flare.FLARE[name].language)


def test_the_table_maps_all_eighteen_languages_to_registered_ones():
    assert len(flare.FLARE) == 18 and FOLDERS == sorted(flare.FLARE)
    for name, entry in flare.FLARE.items():
        assert entry.name == name
        lang = languages.get(entry.language)
        assert entry.source.endswith(".py") and BUTOI in lang.references
        tokens = flare.Tokens(lang)
        assert set(tokens.token) == set(lang.alphabet)
        assert len(set(tokens.token.values())) == len(lang.alphabet)  # one token per symbol
        assert all(t and not any(c.isspace() for c in t) for t in tokens.token.values())
    assert flare.FLARE["parity"].language == "parity-odd"
    assert flare.FLARE["binary-multiplication"].tokens == {"*": "×"}



@pytest.mark.parametrize("name", FOLDERS)
def test_flare_files_round_trip_byte_for_byte(name, tmp_path):
    lang = language_of(name)
    splits = flare.read_dataset(FIXTURE / name, lang)
    assert list(splits)[0] == "train" and len(splits) >= 4
    flare.write_dataset(tmp_path, splits, lang)
    for split, folder in flare.split_folders(FIXTURE / name).items():
        written = tmp_path if split == "train" else tmp_path / "datasets" / split
        files = sorted(p.name for p in folder.iterdir() if p.is_file())
        assert "main.tok" in files and "labels.txt" in files
        match, mismatch, errors = filecmp.cmpfiles(folder, written, files, shallow=False)
        assert match == files, (split, mismatch, errors)
    assert flare.folder_language(tmp_path) is lang  # satsim.json names it
    assert flare.folder_language(FIXTURE / name) is lang  # FLaRe's folder name does


@pytest.mark.parametrize("name", FOLDERS)
def test_flare_labels_agree_with_the_oracle_and_the_reference(name):
    lang = language_of(name)
    for split_name, split in flare.read_dataset(FIXTURE / name, lang).items():
        for s, label in zip(split.strings, split.labels):
            if name == "compute-sqrt" and lang.contains(s) != label:
                # FLaRe computes floor(math.sqrt(x)) through a float: off for large x
                x, z = (int(bits[::-1], 2) for bits in s.split("="))
                assert label and math.floor(math.sqrt(x)) == z != math.isqrt(x)
                assert split_name == "test" and x.bit_length() > 52
                continue
            assert lang.contains(s) == label == REFERENCE[lang.name](s), (split_name, s)


def test_flare_float_square_roots_are_in_the_fixture():
    lang = language_of("compute-sqrt")
    test = flare.read_split(FIXTURE / "compute-sqrt" / "datasets" / "test", lang)
    assert flare.label_disagreements(lang, test) == [5, 6, 7]  # FLaRe's lines 6 to 8
    assert all(test.labels[i] for i in (5, 6, 7))


@pytest.mark.parametrize("name", FOLDERS)
def test_flare_next_symbol_sets_agree_with_next_symbols(name):
    lang = language_of(name)
    checked = omitted = 0
    for split in flare.read_dataset(FIXTURE / name, lang).values():
        for s, theirs in zip(split.positives, split.next_symbols or []):
            ours = lang.next_symbols(s)
            checked += 1
            if name != "stack-manipulation":
                assert theirs == ours, s
                continue
            # FLaRe's sets allow POP on the empty stack at the start, and leave out PUSH where
            # its sampler had no pushes left; otherwise they are the language's
            assert theirs[0] == ours[0] | {"-"}
            for mine, other in zip(ours[1:], theirs[1:]):
                assert other <= mine and mine - other <= {"+"}
                omitted += mine - other == {"+"}
    assert checked >= 5 and (omitted > 0) == (name == "stack-manipulation")


def test_satsim_writes_flare_folders_that_read_back(tmp_path):
    out = tmp_path / "dyck"
    result = CliRunner().invoke(cli, ["sample", "--lang", "dyck-2-3", "--split", "flare",
                                      "-n", "60", "--seed", "3", "--flare", str(out)])
    assert result.exit_code == 0, result.output
    lang = languages.get("dyck-2-3")
    rows = list(datasets.build(lang, 60, preset="flare", seed=3))
    splits = flare.read_dataset(out, lang)
    assert sorted(splits) == sorted(s.name for s in datasets.PRESETS["flare"])
    for name, split in splits.items():
        mine = [r for r in rows if r["split"] == name]
        assert split.strings == [r["string"] for r in mine]
        assert split.labels == [r["label"] for r in mine] and split.sources == [
            r["source"] for r in mine]
        assert split.next_symbols == [lang.next_symbols(s) for s in split.positives]
        assert split.num_edits == [1 if r["source"] in {"replace", "insert", "delete"} else None
                                   for r in mine if not r["label"]]
    first = (out / "main.tok").read_text().splitlines()[0].split(" ")
    assert set(first) <= {"(0", ")0", "(1", ")1"}
    line = json.loads((out / "next-symbols.jsonl").read_text().splitlines()[0])
    assert set(line[0]) == {"s", "e"} and line[0]["s"] == "(0 (1" and line[0]["e"] is True
    assert flare.folder_language(out) is lang


def test_next_symbol_lines_are_flare_bytes():
    tokens = flare.Tokens(languages.get("binary-multiplication"))
    line = tokens.next_line([frozenset({"0", "1", "*"}), frozenset({"0", EOS})])
    assert line == '[{"s":"0 1 \\u00d7","e":false},{"s":"0","e":true}]'
    assert tokens.read_next(line, "here") == [frozenset({"0", "1", "*"}),
                                             frozenset({"0", EOS})]


@pytest.mark.parametrize(("file", "text", "message"), [
    ("labels.txt", "1\n2\n", "line 2: a label is 0 or 1"),
    ("labels.txt", "1\n", "has 1 lines for 2 strings"),
    ("main.tok", "0 1\n0 2\n", "line 2: token '2' is not a symbol of parity-odd"),
    ("main.tok", "0 1\n1", "does not end with a newline"),
    ("next-symbols.jsonl", '[{"s":"0 1","e":false}]\n', "1 sets for a string of 2 symbols"),
    ("next-symbols.jsonl", '{"s": 1}\n', "not a JSON list"),
    ("num-edits.txt", "x\n", "is not a number of edits"),
])
def test_malformed_files_are_one_line_errors(tmp_path, file, text, message):
    good = {"main.tok": "0 1\n0 0\n", "labels.txt": "1\n0\n",
            "next-symbols.jsonl": '[{"s":"0 1","e":false},{"s":"0 1","e":true},'
                                  '{"s":"0 1","e":true}]\n', "num-edits.txt": "\n"}
    for name, content in {**good, file: text}.items():
        (tmp_path / name).write_text(content)
    with pytest.raises(LanguageError, match=message) as error:
        flare.read_split(tmp_path, languages.get("parity-odd"))
    assert "\n" not in str(error.value)


def test_folders_without_a_known_language_are_refused(tmp_path):
    (tmp_path / "main.tok").write_text("")
    with pytest.raises(LanguageError, match="cannot tell which language.*--lang"):
        flare.folder_language(tmp_path)
    with pytest.raises(LanguageError, match="no labels.txt"):
        flare.read_split(tmp_path, languages.get("first"))
    with pytest.raises(LanguageError, match="holds no main.tok"):
        flare.read_split(tmp_path / "datasets", languages.get("first"))


def test_a_dataset_is_written_whole_into_a_new_folder_only(tmp_path):
    lang = languages.get("first")
    splits = {"train": flare.FlareSplit(["1", "0"], [True, False], [lang.next_symbols("1")],
                                        [None])}
    flare.write_dataset(tmp_path / "new", splits, lang)
    assert sorted(p.name for p in (tmp_path / "new").iterdir()) == [
        "labels.txt", "main.tok", "next-symbols.jsonl", "num-edits.txt", "satsim.json"]
    with pytest.raises(LanguageError, match="is not an empty folder"):
        flare.write_dataset(tmp_path / "new", splits, lang)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["new"]  # nothing half-written beside
    result = CliRunner().invoke(cli, ["sample", "--lang", "first", "--flare",
                                      str(tmp_path / "new")], standalone_mode=False)
    assert isinstance(result.exception, LanguageError)


@pytest.mark.parametrize("name", ["majority", "marked-copy", "stack-manipulation"])
def test_a_runs_memory_estimate_counts_the_strings_of_its_data_folder(name):
    from satsim.training.budget import split_shapes
    from satsim.training.config import TrainConfig

    lang = language_of(name)
    config = TrainConfig(lang=lang.name, task="recognition", data=str(FIXTURE / name),
                         train_size=7, batch_size=7)
    expected = []
    for split_name, split in flare.read_dataset(FIXTURE / name, lang).items():
        lengths = [len(s) for s in split.strings][: 7 if split_name == "train" else None]
        expected.append((len(lengths), sum(lengths) / len(lengths), max(lengths)))
    shapes = [(s.strings, s.mean_length, s.max_length) for s in split_shapes(config)]
    assert [(n, longest) for n, _, longest in shapes] == [(n, m) for n, _, m in expected]
    assert [mean for _, mean, _ in shapes] == pytest.approx([mean for _, mean, _ in expected])


def test_a_data_folder_of_long_strings_costs_more_than_the_preset(tmp_path):
    from satsim.training.budget import training_bytes
    from satsim.training.config import TrainConfig

    lang = languages.get("majority")
    long = ["a" * 3000 + "b"] * 40
    splits = {"train": flare.FlareSplit(long[:20], [True] * 20, None),
              "test": flare.FlareSplit(long, [True] * 40, None)}
    flare.write_dataset(tmp_path / "long", splits, lang)
    preset = TrainConfig(lang="majority", task="recognition", train_size=20, batch_size=20)
    folder = TrainConfig(lang="majority", task="recognition", train_size=20, batch_size=20,
                         data=str(tmp_path / "long"))
    assert training_bytes(folder, 2) > 20 * training_bytes(preset, 2)


@pytest.mark.parametrize("preset", [None, "flare"])
def test_an_empty_sample_writes_every_split_as_empty_files(tmp_path, preset):
    folder = tmp_path / "empty"
    args = ["sample", "--lang", "dyck1", "-n", "0", "--flare", str(folder)]
    result = CliRunner().invoke(cli, args + (["--split", preset] if preset else []),
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    names = [split.name for split in datasets.splits_for(preset, 0, 40)]
    manifest = json.loads((folder / "satsim.json").read_text())
    assert manifest == {"language": "dyck1", "splits": names}
    read = flare.read_dataset(folder, languages.get("dyck1"))
    expected = ["train", *sorted(n for n in names if n != "train")] if preset else ["train"]
    assert list(read) == expected and all(split.strings == [] for split in read.values())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty"]
