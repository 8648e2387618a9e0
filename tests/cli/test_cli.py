"""The command line: eval, run, languages, and one-line errors for bad input."""

import json
import subprocess
import sys

import numpy as np
import pytest

from satsim import constructions
from satsim.model.io import save_spec
from tests.support.helpers import invoke_satsim, random_spec

satsim = invoke_satsim  # the entry point, in this process


def test_eval_json_reports_exact_accuracy_per_bin():
    result = satsim("eval", "--lang", "dyck1", "--bins", "0-8,9-64,1000-1200", "-n", "40", "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["language"] == "dyck1" and report["model"] == "dyck1"
    assert report["accuracy"] == 1.0 and report["n"] == 120
    assert [(b["min_len"], b["max_len"]) for b in report["bins"]] == [(0, 8), (9, 64), (1000, 1200)]
    for b in report["bins"]:
        assert b["n"] == 40 and b["accuracy"] == 1.0 and b["tokens_per_second"] > 0
        assert b["positives"] == 20 and b["negatives"] == 20


@pytest.mark.slow  # a fresh process
def test_eval_table_and_that_eval_never_imports_torch():
    code = (
        "import sys; from satsim.cli.main import cli\n"
        "args = ['eval', '--lang', 'dyck1', '--bins', '0-16', '-n', '20']\n"
        "cli.main(args, standalone_mode=False)\n"
        "assert 'torch' not in sys.modules, 'eval imported torch'\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert "accuracy" in result.stdout and "1.0000" in result.stdout


def test_eval_of_a_saved_model_with_other_attention(tmp_path):
    path = tmp_path / "d.safetensors"
    save_spec(constructions.build("dyck1"), path)
    result = satsim("eval", "--lang", "dyck1", "--model", str(path), "--attention", "unique-right",
                    "--min-len", "0", "--max-len", "12", "-n", "30", "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["attention"] == "unique-right" and report["n"] == 30


def test_run_reads_strings_from_arguments_and_stdin():
    result = satsim("run", "--lang", "dyck1", "(())", "())(", "--json")
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert [r["answer"] for r in rows] == [True, False]
    assert all(r["correct"] for r in rows)
    piped = satsim("run", "--lang", "dyck1", stdin="()\n)(\n\n")
    assert piped.returncode == 0
    assert [line.split()[0] for line in piped.stdout.splitlines()] == ["accept", "reject", "accept"]


def test_languages_lists_dyck1():
    result = satsim("languages", "--json")
    rows = {row["name"]: row for row in json.loads(result.stdout)}
    assert {"name": "dyck1", "alphabet": ["(", ")"], "construction": True}.items() <= \
        rows["dyck1"].items()


def bad_inputs(tmp_path):
    corrupt = tmp_path / "corrupt.safetensors"
    save_spec(constructions.build("dyck1"), corrupt)
    corrupt.write_bytes(corrupt.read_bytes()[:-20])
    nan_model = tmp_path / "nan.safetensors"
    spec = random_spec(0)
    save_spec(spec, nan_model)
    data = bytearray(nan_model.read_bytes())
    tail = np.frombuffer(bytes(data[-8:]), dtype=np.float64)  # last float64 of the last tensor
    assert np.isfinite(tail).all()
    data[-8:] = np.array([np.nan]).tobytes()
    nan_model.write_bytes(bytes(data))
    other_alphabet = tmp_path / "ab.safetensors"
    save_spec(spec, other_alphabet)
    return {
        "unknown language": (["eval", "--lang", "dyk1"], "unknown language 'dyk1'"),
        "bad symbol": (["run", "--lang", "dyck1", "(x)"], "symbol 'x' at position 1"),
        "corrupt weights": (["eval", "--lang", "dyck1", "--model", str(corrupt)],
                            "not a readable safetensors file"),
        "NaN weights": (["eval", "--lang", "dyck1", "--model", str(nan_model)],
                        "contains NaN or infinite values"),
        "missing weights": (["eval", "--lang", "dyck1", "--model", str(tmp_path / "none")],
                            "no such weights file"),
        "mismatched alphabet": (["eval", "--lang", "dyck1", "--model", str(other_alphabet)],
                                "lacks"),
        "bad bins": (["eval", "--lang", "dyck1", "--bins", "5-2"], "bad length bin"),
        "bad n": (["eval", "--lang", "dyck1", "-n", "0"], "Invalid value for '-n': 0 is not in"),
        "bad beta": (["eval", "--lang", "dyck1", "--attention", "softmax", "--beta", "-1"],
                     "Invalid value for '--beta': -1.0 is not in the range x>0"),
    }


@pytest.mark.parametrize("case", [
    "unknown language", "bad symbol", "corrupt weights", "NaN weights", "missing weights",
    "mismatched alphabet", "bad bins", "bad n", "bad beta",
])
def test_bad_input_gives_one_line_and_nonzero_exit(tmp_path, case):
    args, message = bad_inputs(tmp_path)[case]
    result = satsim(*args)
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert message in lines[0]


def test_unknown_option_is_a_usage_error():
    result = satsim("eval", "--lang", "dyck1", "--attention", "hardmax")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.startswith("error: Invalid value for '--attention'")
    assert result.stderr.strip().endswith("(see 'satsim eval -h')")
    assert len(result.stderr.strip().splitlines()) == 1


@pytest.mark.slow  # a fresh process
@pytest.mark.parametrize("module, extra", [("torch", "soft"), ("matplotlib", "plot")])
def test_a_missing_optional_dependency_is_a_one_line_error(module, extra, tmp_path):
    code = (f"import sys; sys.modules[{module!r}] = None; from satsim.cli.main import main; "
            "sys.argv = ['satsim', *sys.argv[1:]]; main()")
    args = (["train", "--steps", "1", "--out", str(tmp_path / "run")] if module == "torch" else
            ["trace", "--lang", "dyck1", "()", "--plot", str(tmp_path / "plot.png")])
    result = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                            timeout=600)
    lines = [line for line in result.stderr.splitlines() if "satsim: compiling" not in line]
    assert result.returncode == 2 and len(lines) == 1, result.stderr  # a cold cache may say so
    assert lines[0].startswith("error: ") and f'pip install "satsim[{extra}]"' in lines[0]
