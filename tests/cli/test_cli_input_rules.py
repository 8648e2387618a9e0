"""Input the command line reads as nothing or as something else is refused, before any work.

An empty value (of any option, or in a list or a KEY=VALUE setting) never means "everything" or
"the default"; --long 0 checks no long string; report's -n 0 is refused while the options are
parsed; show describes one model, so --lang beside --model is refused; --beta is refused where
there is no softmax to take it.
"""

from __future__ import annotations

import json

import pytest

from satsim.model.io import save_spec
from tests.cli.test_cli_errors import one_error_line, patched_satsim
from tests.support.helpers import invoke_satsim

PROGRAM = 'alphabet = "ab"\naccept = count(Q("a")) > count(Q("b"))\n'


@pytest.mark.parametrize("args, option", [
    (["benchmark", "flare", "--out", "{tmp}/bench", "--lang", ""], "--lang"),
    (["report", "{tmp}", "--bins", ""], "--bins"),
    (["train", "--data", "", "--out", "{tmp}/run"], "--data"),
    (["eval", "--lang", "dyck1", "--bins", " "], "--bins"),
    (["sweep", "--out", "{tmp}/sweep", "--seed", ""], "--seed"),
    (["benchmark", "flare", "--out", "{tmp}/bench", "--set", ""], "--set"),
])
def test_an_empty_value_is_refused_by_name_and_starts_nothing(tmp_path, args, option):
    result = invoke_satsim(*(word.format(tmp=tmp_path) for word in args))
    line = one_error_line(result)
    assert f"'{option}'" in line and "empty value" in line and result.stdout == ""
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("args, message", [
    (["benchmark", "flare", "--out", "{tmp}/bench", "--set", "steps="], "neither empty"),
    (["benchmark", "flare", "--out", "{tmp}/bench", "--set", "=5"], "neither empty"),
    (["benchmark", "flare", "--out", "{tmp}/bench", "--set", "bogus=1"],
     "unknown training setting 'bogus'"),
    (["benchmark", "flare", "--out", "{tmp}/bench", "--set", "lang=dyck1"], "fixed by the"),
    (["benchmark", "flare", "--out", "{tmp}/bench", "--lang", ","], "empty item"),
    (["benchmark", "flare", "--out", "{tmp}/bench", "--lang", "parity,"], "empty item"),
    (["benchmark", "flare", "--out", "{tmp}/bench", "--set", "steps=1e400"],
     "steps needs an integer"),
    (["sweep", "--out", "{tmp}/sweep", "--seed", "1,,2", "--plan"], "empty item"),
    (["sweep", "--out", "{tmp}/sweep", "--vary", "lr=", "--plan"], "neither empty"),
    (["sweep", "--out", "{tmp}/sweep", "--seed", "1", "--set", "device=", "--plan"],
     "neither empty"),
])
def test_an_empty_item_or_setting_is_refused_and_so_is_an_unknown_key(tmp_path, args, message):
    result = invoke_satsim(*(word.format(tmp=tmp_path) for word in args))
    assert message in one_error_line(result) and result.stdout == ""
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("option", ["--beta", "--atol", "--rtol"])
@pytest.mark.parametrize("value", ["nan", "inf", "-inf"])
def test_a_number_that_is_not_finite_is_refused_while_parsing(option, value):
    line = one_error_line(invoke_satsim("eval", "--lang", "dyck1", option, value))
    assert f"'{option}'" in line and "not a finite number" in line


def test_beta_without_softmax_attention_is_refused_not_ignored():
    line = one_error_line(invoke_satsim("eval", "--lang", "dyck1", "--beta", "2"))
    assert "--beta" in line and "softmax" in line
    result = invoke_satsim("eval", "--lang", "dyck1", "--beta", "2", "--attention", "softmax",
                        "-n", "2", "--max-len", "4", "--json")
    assert result.returncode == 0 and json.loads(result.stdout)["attention"] == "softmax"


@pytest.mark.parametrize("command", [
    ["verify", "{tmp}/program.crasp", "--lang", "majority"],
    ["compile", "--lang", "first"],
])
def test_long_zero_checks_no_long_string(tmp_path, command):
    (tmp_path / "program.crasp").write_text(PROGRAM)
    result = invoke_satsim(*(word.format(tmp=tmp_path) for word in command), "--long", "0",
                        "--json")
    assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout)
    checks = [found["verification"]] if "verification" in found else [found["interpreter"],
                                                                       found["oracle"]]
    assert all(check["long_strings"] == 0 and check["ok"] for check in checks)


@pytest.mark.parametrize("count", [0, 1, 2, 3, 20])
def test_a_languages_samples_are_as_many_as_asked_half_of_them_positive(count):
    import languages
    from satsim.rasp.verify import language_samples

    language = languages.get("majority")
    samples = language_samples(language, count, 30)
    assert len(samples) == count
    assert sum(map(language.contains, samples)) == count - count // 2


@pytest.mark.slow  # a fresh process, where torch was never imported
def test_report_n_zero_is_refused_while_parsing_before_torch_or_the_run_is_read(tmp_path):
    block_torch = "import sys; sys.modules['torch'] = None"  # importing torch would fail
    result = patched_satsim(block_torch, "report", str(tmp_path / "no-run"), "-n", "0")
    assert "'-n'" in one_error_line(result)
    result = patched_satsim(block_torch, "report", str(tmp_path / "no-run"), "--roles-n", "0")
    assert "'--roles-n'" in one_error_line(result)


def test_show_refuses_a_language_beside_a_model(tmp_path):
    from satsim import constructions

    path = tmp_path / "model.safetensors"
    save_spec(constructions.build("dyck1"), path)
    line = one_error_line(invoke_satsim("show", "--lang", "anbn", "--model", str(path)))
    assert "--lang" in line and "--model" in line and "not both" in line
    alone = invoke_satsim("show", "--model", str(path), "--json")
    assert alone.returncode == 0 and json.loads(alone.stdout)["name"] == "dyck1"
