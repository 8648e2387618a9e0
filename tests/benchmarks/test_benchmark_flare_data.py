"""`satsim benchmark flare --data DIR` on FLaRe's published files (tests/data/flare).

FLaRe's code (rycolab/neural-network-recognizers) reads a language folder so: the training
split is the folder's main.tok and labels.txt, the validation split datasets/validation-long,
the reported one datasets/test; a string is the whitespace-separated words of its line, a label
``int(line.strip())``. The reader here is written from that, not from satsim's, and the
benchmark must train, select and score on exactly what it reads.
"""

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import languages
from languages.flare import FLARE, Tokens
from satsim.benchmarks import flare
from satsim.benchmarks.flare_data import data_languages, read_test_split
from satsim.cli.main import cli
from satsim.model.io import load_spec
from satsim.soft import SoftTransformer
from satsim.training.checkpoint import spec_path
from satsim.training.config import TrainConfig
from satsim.training.data import run_data
from satsim.training.init import initial_spec
from tests.cli.test_cli_errors import one_error_line
from tests.support.helpers import run_satsim
from tests.support.paths import DATA

pytestmark = pytest.mark.usefixtures("one_torch_thread")
FIXTURE = DATA / "flare"
TINY = {"steps": 20, "eval_size": 10, "batch_size": 4, "layers": 1,
        "d_model": 8, "heads": 1, "d_head": 4, "d_mlp": 8, "checkpoint_every": 10,
        "log_every": 5, "probe_size": 2}
ARGS = ["--data", str(FIXTURE), "--lang", "compute-sqrt,first", "--trials", "2", "-n", "6",
        *[f"--set={key}={value}" for key, value in TINY.items()]]


def flare_reads(folder: Path) -> tuple[list[list[str]], list[bool]]:
    """A split folder as FLaRe's data.py and prepare_data.py read it: token lists, labels."""
    strings = [line.split() for line in (folder / "main.tok").read_text().splitlines()]
    labels = []
    for line in (folder / "labels.txt").read_text().splitlines():
        label = int(line.strip())
        assert label in (0, 1)
        labels.append(bool(label))
    assert len(strings) == len(labels)
    return strings, labels


def as_tokens(language, strings: list[str]) -> list[list[str]]:
    tokens = Tokens(language)
    return [[tokens.token[a] for a in s] for s in strings]


@pytest.mark.parametrize("name", sorted(p.name for p in FIXTURE.iterdir()))
def test_the_benchmark_trains_validates_and_tests_on_flares_splits_as_flare_reads_them(name):
    language = languages.get(FLARE[name].language)
    folder = FIXTURE / name
    config = TrainConfig.from_dict({**flare.SMALL.training, "lang": language.name,
                                    "data": str(folder), "train_size": 10_000,
                                    "eval_size": 10_000, "batch_size": 1})
    data = run_data(config, initial_spec(config, language.alphabet))
    trained = (as_tokens(language, data.train.strings), data.train.targets.bool().tolist())
    assert trained == flare_reads(folder)
    held = data.held_out[flare.SELECT]
    assert (as_tokens(language, held.strings), held.targets.bool().tolist()) == flare_reads(
        folder / "datasets" / "validation-long")
    if name == "stack-manipulation":  # FLaRe's checkout lacks its test split's main.tok
        assert not (folder / "datasets" / "test").exists()
        return
    test = read_test_split(folder, language)
    assert (as_tokens(language, test.strings), test.labels) == flare_reads(
        folder / "datasets" / "test")


@pytest.fixture(scope="module")
def benchmark(tmp_path_factory):
    """The tiny benchmark on FLaRe's files: its folder and its JSON lines by kind."""
    out = tmp_path_factory.mktemp("flare_data") / "b"
    result = CliRunner().invoke(cli, ["benchmark", "flare", "--out", str(out), *ARGS, "--json"],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    rows: dict[str, list[dict]] = {}
    for line in result.stdout.splitlines():
        row = json.loads(line)
        rows.setdefault(row.pop("kind"), []).append(row)
    return out, rows


def test_each_model_trains_on_its_languages_folder_and_is_scored_on_flares_test_split(
        benchmark):
    out, rows = benchmark
    assert [m["name"] for m in rows["model"]] == [
        "compute-sqrt-t1", "compute-sqrt-t2", "first-t1", "first-t2"]
    for model in rows["model"]:
        folder = FIXTURE / model["language"]
        assert Path(model["data"]) == folder.resolve()
        assert model["train_size"] == len(flare_reads(folder)[1])  # all of FLaRe's training split
        tokens, labels = flare_reads(folder / "datasets" / "test")
        test = model["flare_test"]
        assert (test["n"], test["positives"], test["labels"]) == (len(labels), sum(labels),
                                                                  "flare")
        run = out / "runs" / model["name"]
        spec = load_spec(str(spec_path(run, model["selected_step"])))
        language = languages.get(model["lang"])
        symbol = Tokens(language).symbol
        strings = ["".join(symbol[t] for t in line) for line in tokens]
        twin = SoftTransformer.from_spec(spec, device="cpu", dtype="float64")
        logits = twin.run(strings).logits.numpy()
        accepted = logits[np.arange(len(strings)), [len(s) for s in strings], 0] > 0
        assert test["soft"] == np.mean(accepted == np.array(labels))
        exact = np.array([language.contains(s) for s in strings])
        assert test["relabelled"] == int((exact != np.array(labels)).sum())
        if test["relabelled"]:  # compute-sqrt: FLaRe's lines 6-8, float-rounded
            assert test["oracle"]["soft"] == np.mean(accepted == exact)
        assert sum(test["curve"]["n"]) == len(labels)
        assert sum(test["curve"]["soft"]) == test["hits"]["soft"] == int(
            (accepted == np.array(labels)).sum())
        lengths = np.array([len(s) for s in strings])
        for cell in test["bins"]:
            inside = (lengths >= cell["min_len"]) & (lengths <= cell["max_len"])
            assert cell["n"] == int(inside.sum())
    assert [m["flare_test"]["relabelled"] for m in rows["model"]] == [3, 3, 0, 0]


def test_the_table_reports_flares_test_split_per_language(benchmark):
    out, rows = benchmark
    for entry in rows["language"]:
        mine = [m["flare_test"] for m in rows["model"] if m["language"] == entry["language"]]
        test = entry["flare_test"]
        assert test["strings"] == sum(m["n"] for m in mine)
        assert test["soft"]["mean"] == pytest.approx(np.mean([m["soft"] for m in mine]))
        assert test["limit"]["max"] == max(m["limit"] for m in mine)
        assert test["mcnemar"]["soft_only"] == sum(m["soft_only"] for m in mine)
        assert "p_holm" in test["mcnemar"]
    table = (out / "table.md").read_text()
    assert "FLaRe's test split (0–500, FLaRe's labels)" in table
    manifest = json.loads((out / "benchmark.json").read_text())
    assert manifest["data"] == str(FIXTURE.resolve()) and manifest["evaluation"]["flare_test"]


def test_without_lang_the_benchmark_takes_every_language_the_folder_holds(tmp_path):
    root = tmp_path / "data"
    root.mkdir()
    for name in ("first", "parity"):
        (root / name).symlink_to(FIXTURE / name)
    (root / "notes").mkdir()
    configs = flare.plan(flare.SMALL, data_languages(root), 1, data=root)
    assert [c["model"]["language"] for c in configs] == ["parity", "first"]  # FLaRe's order
    for config in configs:  # every training string; a batch no larger (as satsim train --data)
        strings = len(flare_reads(FIXTURE / config["model"]["language"])[1])
        assert config["settings"]["train_size"] == config["settings"]["batch_size"] == strings
    capped = flare.plan(flare.SMALL, ["first"], 1, {"train_size": 4, "batch_size": 2}, data=root)
    assert (capped[0]["settings"]["train_size"], capped[0]["settings"]["batch_size"]) == (4, 2)


@pytest.mark.slow  # a fresh process
@pytest.mark.parametrize("data, extra, message", [
    ("{tmp}/missing", [], "'{tmp}/missing' does not exist"),
    ("{tmp}", [], "holds no folder named after a FLaRe language"),
    ("{tmp}/first-only", ["--lang", "first,parity"], "has no folder for parity"),
    (str(FIXTURE), ["--lang", "first,stack-manipulation"],
     "stack-manipulation/datasets/test/main.tok is missing"),
    ("", [], "an empty path names nothing"),
])
def test_a_bad_data_folder_is_one_line_error_before_any_work(tmp_path, data, extra, message):
    (tmp_path / "first-only").mkdir()
    (tmp_path / "first-only" / "first").symlink_to(FIXTURE / "first")
    data = data.format(tmp=tmp_path)
    result = run_satsim("benchmark", "flare", "--out", str(tmp_path / "b"), "--data", data,
                        *extra)
    assert message.format(tmp=tmp_path) in one_error_line(result)
    assert not (tmp_path / "b").exists()
