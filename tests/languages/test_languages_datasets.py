"""Datasets and `satsim sample`: tasks, split presets, de-duplication, byte-identical output."""

import json

import pytest
from click.testing import CliRunner

import languages
from languages import EOS, LanguageError, datasets
from satsim.cli.main import cli
from tests.support.helpers import invoke_satsim
from tests.support.lang_refs import REFERENCE


def run(*args):
    result = CliRunner().invoke(cli, ["sample", *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.stdout


def test_recognition_records_are_labelled_by_the_oracle():
    rows = list(datasets.build(languages.get("dyck2"), 400, min_len=0, max_len=30, seed=3))
    assert len(rows) == 400 and sum(r["label"] for r in rows) == 200
    for r in rows:
        assert r["label"] == REFERENCE["dyck2"](r["string"]) and r["length"] == len(r["string"])
        assert r["split"] == "sample" and "max_depth" in r
        assert r["source"] == "positive" or r["source"] in languages.get("dyck2").negative_labels


@pytest.mark.parametrize("preset", sorted(datasets.PRESETS))
def test_presets_have_their_ranges_and_no_string_in_two_splits(preset):
    lang = languages.get("anbn" if preset != "bhattamishra" else "shuffle-dyck2")
    rows = list(datasets.build(lang, 300, preset=preset, seed=1))
    by_split: dict[str, set] = {}
    for split in datasets.PRESETS[preset]:
        mine = [r for r in rows if r["split"] == split.name]
        assert mine and all(split.min_len <= r["length"] <= split.max_len for r in mine)
        strings = {r["string"] for r in mine}
        for earlier in by_split.values():
            assert not strings & earlier
        by_split[split.name] = strings
    train = [r for r in rows if r["split"] == "train"]
    assert len(train) == 300


def test_held_out_short_strings_really_are_unseen():
    lang = languages.get("tomita2")  # one string per even length: the short ones run out
    rows = list(datasets.build(lang, 100, preset="flare", seed=2))
    seen = {r["string"] for r in rows if r["split"] == "train"}
    test = [r for r in rows if r["split"] == "test" and r["label"]]
    assert test and all(r["string"] not in seen for r in test)


def test_next_symbol_records_match_next_symbols():
    lang = languages.get("reset-dyck1")
    rows = list(datasets.build(lang, 50, task="next-symbol", max_len=20, seed=4))
    symbols = datasets.symbols_header(lang)
    assert symbols[-1] == EOS
    for r in rows:
        assert r["label"]
        want = [[int(x in allowed) for x in symbols] for allowed in lang.next_symbols(r["string"])]
        assert r["next"] == want and r["next"][-1][-1] == 1


def test_transduction_splits_input_and_answer():
    lang = languages.get("modular-arithmetic")
    rows = list(datasets.build(lang, 50, task="transduction", max_len=21, seed=5))
    for r in rows:
        assert lang.answer(r["input"]) == r["output"]
        assert REFERENCE["modular-arithmetic"](r["input"] + "=" + r["output"])
    with pytest.raises(LanguageError, match="not an input-then-answer"):
        list(datasets.build(languages.get("dyck1"), 5, task="transduction"))


def test_boundary_pairs_stay_together():
    rows = list(datasets.build(languages.get("tomita4"), 40, negatives="boundary", seed=6))
    assert len(rows) == 40
    for good, bad in zip(rows[::2], rows[1::2]):
        assert good["pair"] == bad["pair"] and good["label"] and not bad["label"]


def test_sample_command_is_byte_identical_for_a_seed(tmp_path):
    args = ["--lang", "shuffle-dyck2", "--split", "bhattamishra", "-n", "200", "--json"]
    first = run(*args, "--seed", "7")
    assert first == run(*args, "--seed", "7") and first != run(*args, "--seed", "8")
    out = tmp_path / "data.jsonl"
    run(*args, "--seed", "7", "--out", str(out))
    assert out.read_text() == first
    rows = [json.loads(line) for line in first.splitlines()]
    assert {r["split"] for r in rows} == {"train", "test-52-100", "test-102-150"}


def test_sample_command_options():
    plain = run("--lang", "anbncn", "-n", "6", "--max-len", "12", "--negatives", "unequal")
    lines = [line.split("\t") for line in plain.splitlines()]
    assert len(lines) == 6 and {line[2] for line in lines} == {"positive", "unequal"}
    assert all((line[1] == "1") == REFERENCE["anbncn"](line[0]) for line in lines)
    deep = run("--lang", "dyck2", "--max-depth", "2", "-n", "20", "--negatives", "none", "--json")
    assert all(json.loads(r)["max_depth"] <= 2 for r in deep.splitlines())
    pcfg = run("--lang", "dyck1", "--sampler", "pcfg", "-n", "5", "--min-len", "10", "--json")
    assert all(json.loads(r)["source"] in ("positive-pcfg", "flip", "insert", "delete",
                                            "dip-once", "wrong-order", "random")
               for r in pcfg.splitlines())
    assert "near-tie" in run("--lang", "majority", "--list-negatives")


def test_sample_command_errors_are_one_line_with_exit_code_2():
    for args, message in [
        (["--lang", "nope"], "unknown language 'nope'"),
        (["--lang", "dyck1", "--split", "nope"], "'nope' is not one of"),
        (["--lang", "dyck1", "--negatives", "bogus"], "unknown negatives 'bogus'"),
        (["--lang", "tomita1", "--max-depth", "2"], "no nesting depth"),
        (["--lang", "dyck1", "--min-len", "3", "--max-len", "3"], "no positive strings"),
    ]:
        result = invoke_satsim("sample", *args)
        assert result.returncode == 2 and result.stderr.startswith("error: "), result.stderr
        assert message in result.stderr and result.stderr.count("\n") == 1
