"""The command line: ``satsim saturation`` and ``satsim show``."""

import json
import subprocess
import sys

import pytest
import torch

from satsim.model.io import save_spec
from tests.support.helpers import invoke_satsim, random_spec
from tests.support.paths import BENCH

satsim = invoke_satsim  # the entry point, in this process


def test_saturation_json_on_the_dyck1_construction(tmp_path):
    plot = tmp_path / "curves.png"
    result = satsim("saturation", "--lang", "dyck1", "--scales", "1,1000", "-n", "8",
                    "--max-len", "10", "--device", "cpu", "--plot", str(plot), "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["scales"] == [1.0, 1000.0] and report["n_strings"] == 8
    assert report["streams"][0] == "blocks.0.hook_resid_pre" and report["device"] == "cpu"
    assert report["exact_agreement"][-1] == 1.0 and min(report["exact_cosine"][-1]) > 0.999
    assert report["naive_agreement"][-1] == 1.0
    assert report["findings"]["tie-split-below-leading-order"] > 0
    assert plot.read_bytes()[:4] == b"\x89PNG"


def test_saturation_table_for_a_saved_model(tmp_path):
    path = tmp_path / "m.safetensors"
    save_spec(random_spec(0, norm="post"), str(path))
    result = satsim("saturation", "--model", str(path), "--scales", "1,10,1000", "-n", "4",
                    "--no-exact", "--device", "cpu")
    assert result.returncode == 0, result.stderr
    assert "soft twin at cθ vs the leading-order saturated network" in result.stdout
    assert "blocks.1.hook_resid_post" in result.stdout and "decisions agree" in result.stdout
    assert "exact limit" not in result.stdout


@pytest.mark.parametrize("args,message", [
    (["saturation"], "give --lang L (its construction) or --model PATH"),
    (["saturation", "--lang", "dyck1", "--scales", "0,10"], "--scales must be positive"),
    (["saturation", "--lang", "dyck1", "--rates", "embed"], "a rate is PATTERN=NUMBER"),
    (["saturation", "--model", "missing.safetensors"], "no such weights file"),
    (["saturation", "--lang", "dyk1", "--model",  # a mistyped oracle is not dropped silently
      str(BENCH / "models/dyck1-none.safetensors")],
     "unknown language 'dyk1'"),
    (["show", "--lang", "parity-odd"], "has no built-in construction"),
])
def test_bad_input_is_one_line_and_exit_code_2(args, message):
    result = satsim(*args)
    assert result.returncode == 2 and message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a GPU")
def test_saturation_on_cuda_without_a_gpu_is_a_clear_error():
    result = satsim("saturation", "--lang", "dyck1", "--device", "cuda")
    assert result.returncode == 2 and "no CUDA GPU" in result.stderr


@pytest.mark.slow  # a fresh process
def test_the_limit_network_and_the_exact_limit_do_not_import_torch():
    code = ("import sys, satsim.saturation\n"
            "assert 'torch' not in sys.modules, 'satsim.saturation imported torch'\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


@pytest.mark.slow  # a fresh process
def test_show_prints_architecture_and_degrees_without_importing_torch():
    code = (
        "import sys, json; from satsim.cli.main import cli\n"
        "cli.main(['show', '--lang', 'dyck1', '--degrees', '--json'], standalone_mode=False)\n"
        "assert 'torch' not in sys.modules, 'show imported torch'\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    info = json.loads(result.stdout)
    assert info["name"] == "dyck1" and info["norm"] == "none" and info["n_layers"] == 2
    assert info["layers"][0]["attn"]["kinds"][0].startswith("prefix mean")
    degrees = {node["name"]: node["degree"] for node in info["degrees"]["nodes"]}
    assert degrees["blocks.0.attn.hook_attn_scores"] == 4 and degrees["hook_logits"] == 8
    text = satsim("show", "--lang", "dyck1", "--degrees")
    assert "drops blocks.0.hook_resid_post" in text.stdout
