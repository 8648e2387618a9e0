"""Bad input ends in one `error:` line with exit code 2; a bug keeps its traceback.

Through the entry point, as a user meets them: output paths checked before any work, memory
estimated before it is allocated, integers that would overflow, click's usage errors, a full
disk, and internal errors raised deep in the simulator. Most run in this process
(``invoke_satsim``); those about the process itself (a file size limit, a closed standard
input, bytes Python decodes) start a fresh one and are marked slow.
"""

import errno
import importlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from satsim.errors import SatsimError
from satsim.model.io import save_spec
from tests.support.helpers import file_size_limit, invoke_satsim
from tests.support.paths import EXAMPLES, REPO


def one_error_line(result) -> str:
    lines = [line for line in result.stderr.splitlines()
             if line.strip() and "compiling" not in line]  # a cold cache says it compiles
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return lines[0]


def patched_satsim(patch: str, *args: str):
    """Run satsim's entry point after ``patch`` (Python) has run in the same process."""
    code = (f"import sys\n{patch}\nfrom satsim.cli.main import main\n"
            "sys.argv = ['satsim', *sys.argv[1:]]\nmain()")
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          timeout=600)


def raising(error: BaseException):
    """A stand-in for a library function that raises ``error`` when called."""
    def stand_in(*args, **kwargs):
        raise error
    return stand_in


def test_an_internal_error_deep_in_the_simulator_keeps_its_traceback(monkeypatch):
    monkeypatch.setattr("satsim.engine.simulator.forward_fused",
                        raising(ValueError("deliberately broken fused kernel")))
    result = invoke_satsim("run", "--lang", "dyck1", "(())")
    assert result.returncode == 1
    assert "Traceback" in result.stderr and "in _run_fused" in result.stderr
    assert "ValueError: deliberately broken fused kernel" in result.stderr
    assert "internal error" in result.stderr and "please report it" in result.stderr
    bad = invoke_satsim("run", "--lang", "dyck1", "(x)")  # bad input: still one line
    assert "symbol 'x' at position 1" in one_error_line(bad)


def test_evaluation_does_not_read_a_value_error_as_a_bin_without_positives(monkeypatch):
    with monkeypatch.context() as patched:
        patched.setattr("languages.base.Language.sample_positive",
                        raising(ValueError("sampler bug")))
        result = invoke_satsim("eval", "--lang", "dyck1", "-n", "4", "--max-len", "8")
    assert result.returncode == 1 and "ValueError: sampler bug" in result.stderr
    assert "Traceback" in result.stderr
    odd = invoke_satsim("eval", "--lang", "dyck1", "-n", "4", "--bins", "3-3", "--json")
    assert odd.returncode == 0 and '"positives": 0' in odd.stdout  # a real empty bin


def test_user_errors_are_not_value_errors():
    from languages import LanguageError

    assert not issubclass(SatsimError, ValueError) and not issubclass(LanguageError, ValueError)


@pytest.mark.parametrize("args, message", [
    (["eval", "--lang", "dyck1", "--bogus"], "No such option '--bogus'"),
    (["eval"], "Missing option '--lang'"),
    (["roles", "--lang", "dyck1", "-n", "abc"], "'abc' is not a valid integer"),
    (["roles", "--lang", "dyck1", "-n", "99999999999999999999"], "the largest number"),
    (["saturation", "--lang", "dyck1", "-n", "99999999999999999999"], "the largest number"),
    (["eval", "--lang", "dyck1", "--seed", "-1"], "is not in the range"),
    (["sample", "--lang", "dyck1", "--task", "nope"], "'nope' is not one of"),
    (["eval", "--lang", "dyck1", "--model", ""], "'--model': an empty path names nothing"),
    (["sample", "--lang", "dyck1", "--out", ""], "'--out': an empty path names nothing"),
    (["train", "--out", ""], "'--out': an empty path names nothing"),  # it trained into "."
    (["report", ""], "'RUN': an empty path names nothing"),
])
def test_usage_errors_are_one_line(args, message):
    line = one_error_line(invoke_satsim(*args))
    assert message in line and line.endswith(f"(see 'satsim {args[0]} -h')")


def output_cases(tmp_path):
    a_file = tmp_path / "a-file"
    a_file.write_text("")
    missing = tmp_path / "missing"
    return {
        "sample --out": (["sample", "--lang", "dyck1", "--out", f"{missing}/x.txt"],
                         f"--out: the folder {missing} does not exist; create it first"),
        "trace --plot": (["trace", "--lang", "dyck1", "()", "--plot", f"{a_file}/x.png"],
                         f"--plot: {a_file} is not a folder"),
        "saturation --plot": (["saturation", "--lang", "dyck1", "--plot", f"{missing}/x.png"],
                              "does not exist; create it first"),
        "projection --plot": (["projection", "--plot", f"{missing}/x.png"],
                              "does not exist; create it first"),
        "scan-snap --plot": (["scan-snap", "--plot", f"{a_file}/figures"],
                             f"cannot create {a_file}/figures: {a_file} is a file"),
        "train --out": (["train", "--out", f"{a_file}/run"], f"{a_file} is a file"),
        "report --plot": (["report", str(tmp_path), "--plot", str(a_file)], "is a file"),
        "plot into a folder": (["trace", "--lang", "dyck1", "()", "--plot", str(tmp_path)],
                               "is a folder; give a file name"),
    }


@pytest.mark.parametrize("case", ["sample --out", "trace --plot", "saturation --plot",
                                  "projection --plot", "scan-snap --plot", "train --out",
                                  "report --plot", "plot into a folder"])
def test_an_output_path_that_cannot_be_written_is_refused_before_any_work(tmp_path, case):
    args, message = output_cases(tmp_path)[case]
    assert message in one_error_line(invoke_satsim(*args))
    assert not (tmp_path / "missing").exists()


def test_a_full_disk_is_one_line_and_the_computed_trace_is_not_lost(tmp_path, monkeypatch):
    plot = tmp_path / "t.png"
    monkeypatch.setattr("satsim.analysis.traces.plot_attention",
                        raising(OSError(errno.ENOSPC, "No space left on device", str(plot))))
    result = invoke_satsim("trace", "--lang", "dyck1", "(())", "--plot", str(plot))
    assert "the disk is full" in one_error_line(result)
    assert "oracle: '(())' is in dyck1" in result.stdout


@pytest.mark.parametrize("args", [
    ["--min-len", "10", "--max-len", "5"],  # refused by the sampler, after the file was opened
    ["--sampler", "pcfg", "--lang", "anbn"],
    ["--lang", "first", "--min-len", "0", "--max-len", "0"],
])
def test_a_refused_sample_leaves_the_out_file_as_it_was(tmp_path, args):
    out = tmp_path / "d.txt"
    out.write_text("kept\n")
    one_error_line(invoke_satsim("sample", "--lang", "dyck1", "-n", "5", *args, "--out", str(out)))
    assert out.read_text() == "kept\n" and [p.name for p in tmp_path.iterdir()] == ["d.txt"]


@pytest.mark.slow  # a fresh process: its own file size limit
def test_a_sample_on_a_full_disk_leaves_the_old_file_and_no_temporary_one(tmp_path):
    out = tmp_path / "d.jsonl"
    out.write_text("kept\n")
    args = [sys.executable, "-m", "satsim", "sample", "--lang", "dyck1", "-n", "2000", "--json"]
    full = subprocess.run([*args, "--out", str(out)], capture_output=True, text=True,
                          preexec_fn=file_size_limit(4096), timeout=600)
    assert f"the disk is full ({out})" in one_error_line(full)
    assert out.read_text() == "kept\n" and [p.name for p in tmp_path.iterdir()] == ["d.jsonl"]
    device = subprocess.run([*args, "--out", "/dev/full"], capture_output=True, text=True,
                            timeout=600)
    assert "the disk is full (/dev/full)" in one_error_line(device)
    assert not Path("/dev/full").is_file()  # written in place, never renamed onto
    whole = invoke_satsim("sample", "--lang", "dyck1", "-n", "20", "--json", "--out", str(out))
    assert whole.returncode == 0 and len(out.read_text().splitlines()) == 20


def test_a_sample_into_a_link_writes_through_it(tmp_path):
    # Renamed onto, a link (/dev/stdout among them) would become a file of its own.
    target, link = tmp_path / "data.jsonl", tmp_path / "link.jsonl"
    target.write_text("kept\n")
    link.symlink_to(target)
    done = invoke_satsim("sample", "--lang", "dyck1", "-n", "5", "--json", "--out", str(link))
    assert done.returncode == 0, done.stderr
    assert link.is_symlink() and len(target.read_text().splitlines()) == 5


@pytest.mark.parametrize("args", [
    ["eval", "--lang", "dyck1", "-n", "2000000000"],
    ["sample", "--lang", "dyck1", "-n", "2000000000"],
    ["sample", "--lang", "dyck1", "-n", "10", "--max-len", "2000000000"],
    ["scan-snap", "--trace", "100000,1,5"],
    ["scan-snap", "--batch", "2000000000"],
    ["scan-snap", "--iters", "2000000000"],
    ["roles", "--lang", "dyck1", "-n", "2000000000"],
    ["saturation", "--lang", "dyck1", "-n", "2000000000"],
])
def test_a_request_too_big_for_memory_is_refused_with_its_size(args):
    line = one_error_line(invoke_satsim(*args))
    assert " GB of memory and " in line and "needs about" in line and "lower" in line


@pytest.mark.parametrize("args", [["--d-model", "100000"], ["--layers", "2147483647"],
                                  ["--heads", "2147483647"], ["--d-mlp", "2147483647"],
                                  ["--train-size", "2147483647"]])
def test_training_too_big_for_memory_is_refused_before_anything_is_written(tmp_path, args):
    # --d-model 100000 was killed by the kernel at 23 GB; --layers 2147483647 hung.
    line = one_error_line(invoke_satsim("train", "--lang", "dyck1", "--steps", "5", "--out",
                                     str(tmp_path / "run"), *args))
    assert "needs about" in line and " GB of memory and " in line and "lower --d-model" in line
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("args, message", [
    (["--batch-size", "2147483647"], "batch_size 2147483647 is more than train_size 2000"),
    (["--momentum", "2"], "2.0 is not in the range 0<=x<1"),
    (["--momentum", "-0.5"], "-0.5 is not in the range 0<=x<1"),
])
def test_training_settings_out_of_range_are_one_line(tmp_path, args, message):
    line = one_error_line(invoke_satsim("train", "--lang", "dyck1", "--out", str(tmp_path / "run"),
                                     *args))
    assert message in line and not (tmp_path / "run").exists()


def test_a_model_path_that_is_no_regular_file_says_so():
    line = one_error_line(invoke_satsim("eval", "--lang", "dyck1", "--model", "/dev/null"))
    assert line == "error: /dev/null is not a regular file; give a weights file (.safetensors)"


def test_the_simulator_estimates_a_long_strings_memory_before_running(monkeypatch):
    from satsim import constructions
    from satsim.engine import resources
    from satsim.engine.simulator import Simulator

    simulator = Simulator(constructions.build("dyck1"))
    needed = simulator.token_bytes() * 2001  # BOS and 2,000 symbols
    monkeypatch.setattr(resources, "available_memory", lambda: needed // 2)
    with pytest.raises(SatsimError, match="strings of up to 2,001 symbols needs about"):
        simulator.accepts(["()" * 1000])
    monkeypatch.setattr(resources, "available_memory", lambda: needed * 100)
    assert simulator.accepts(["()" * 1000]).tolist() == [True]


def test_written_files_follow_the_umask(tmp_path):
    from satsim import constructions

    old = os.umask(0o022)
    try:
        save_spec(constructions.build("dyck1"), tmp_path / "model.safetensors")
    finally:
        os.umask(old)
    assert (tmp_path / "model.safetensors").stat().st_mode & 0o777 == 0o644


def test_eval_min_len_alone_has_no_hidden_maximum():
    result = invoke_satsim("eval", "--lang", "dyck1", "--min-len", "100", "-n", "4", "--json")
    assert result.returncode == 0, result.stderr
    assert '"min_len": 100, "max_len": 100' in result.stdout


def test_errors_come_before_the_table_header():
    result = invoke_satsim("eval", "--lang", "dyck1", "--model", "/nonexistent.safetensors")
    assert result.stdout == "" and "no such weights file" in one_error_line(result)



def test_every_option_has_help_and_every_integer_a_range():
    import click

    from satsim.cli.main import cli

    for name, command in cli.commands.items():
        for param in command.params:
            if isinstance(param, click.Option) and param.name != "help":
                assert param.help, f"satsim {name} {param.opts[0]} has no help"
                assert param.type is not click.INT, f"satsim {name} {param.opts[0]} is unbounded"


@pytest.mark.slow  # runs long
def test_projection_at_an_overflowing_scale_says_so_instead_of_reporting_zero():
    result = invoke_satsim("projection", "--scales", "1e300", "--seeds", "1", "-n", "16")
    assert "overflows float64 at c = 1e+300" in result.stderr.strip().splitlines()[-1]
    assert result.returncode == 2 and "Traceback" not in result.stderr and result.stdout == ""


@pytest.mark.slow  # runs long
def test_scan_snap_notes_a_diverging_learning_rate():
    wild = invoke_satsim("scan-snap", "--trace", "3,1e6,5", "--iters", "12", "--seeds", "2")
    assert wild.returncode == 0, wild.stderr
    assert "note: 2/2 runs diverged" in wild.stdout
    calm = invoke_satsim("scan-snap", "--trace", "3,1,5", "--iters", "12", "--seeds", "2")
    assert calm.returncode == 0 and "diverged" not in calm.stdout


def test_trace_refuses_an_unreadable_plot_before_tracing(tmp_path):
    result = invoke_satsim("trace", "--lang", "dyck1", "()" * 300, "--plot",
                           str(tmp_path / "t.png"))
    assert "at most 512 tokens" in one_error_line(result) and result.stdout == ""
    assert not (tmp_path / "t.png").exists()


@pytest.mark.parametrize("command", [["trace", "--lang", "dyck1", "()"],
                                     ["saturation", "--lang", "dyck1"],
                                     ["homogeneity"], ["projection"]])
def test_a_plot_format_matplotlib_cannot_write_is_refused_before_any_work(tmp_path, command):
    result = invoke_satsim(*command, "--plot", str(tmp_path / "t.txt"))
    line = one_error_line(result)
    assert "--plot: matplotlib cannot write .txt files; end the name with " in line
    assert ".png" in line and result.stdout == "" and list(tmp_path.iterdir()) == []


SMALL_FIGURES = {
    "homogeneity": (["--seeds", "1", "--layers", "1", "--d-model", "8", "--heads", "2",
                     "--d-ff", "4"], "satsim.papers.homogeneity.plot", "plot_curves",
                    "cosine of the pooled encoder output"),
    "projection": (["--variants", "ffn", "--scales", "1-3", "--accuracies", "0.8",
                    "--seeds", "1", "-n", "16"], "satsim.papers.projection.plots",
                   "write_figure", "ρ*"),
}


@pytest.mark.slow  # runs long
@pytest.mark.parametrize("command", list(SMALL_FIGURES))
def test_results_are_printed_before_a_figure_that_fails_to_write(tmp_path, monkeypatch, command):
    args, module, function, printed = SMALL_FIGURES[command]
    monkeypatch.setattr(f"{module}.{function}",
                        raising(OSError(errno.ENOSPC, "No space left on device")))
    result = invoke_satsim(command, *args, "--plot", str(tmp_path / "f.png"))
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert len(errors) == 1 and "the disk is full" in errors[0]  # beside the progress label
    assert printed in result.stdout


@pytest.mark.slow  # a fresh process: its own closed standard input
def test_run_with_standard_input_closed_is_one_line():
    result = subprocess.run([sys.executable, "-m", "satsim", "run", "--lang", "dyck1"],
                            capture_output=True, text=True, stdin=None, timeout=600,
                            preexec_fn=lambda: os.close(0))  # as `satsim run ... 0<&-`
    assert "give STRINGS, or pipe one string per line" in one_error_line(result)


def test_a_large_bin_reports_progress_and_scores_as_one_call(monkeypatch):
    import languages
    from satsim import constructions
    from satsim.analysis import evaluation
    from satsim.engine.simulator import Simulator

    simulator, language = Simulator(constructions.build("dyck1")), languages.get("dyck1")
    whole = evaluation.evaluate(simulator, language, bins=((20, 40),), n=60)
    monkeypatch.setattr(evaluation, "CHUNK_SYMBOLS", 200)
    heard = []
    chunked = evaluation.evaluate(simulator, language, bins=((20, 40),), n=60,
                                  on_progress=lambda done, total: heard.append((done, total)))
    assert chunked.bins[0].correct == whole.bins[0].correct and chunked.bins[0].n == 60
    assert len(heard) > 3 and heard[-1] == (60, 60)
    assert [done for done, _ in heard] == sorted({done for done, _ in heard})


def test_satsim_alone_prints_its_help():
    result = invoke_satsim()
    assert result.returncode == 0 and result.stdout.startswith("Usage: satsim")
    assert "error" not in result.stderr


@pytest.mark.slow  # a fresh process: Python itself decodes its standard input
@pytest.mark.parametrize("args", [["run", "--lang", "dyck1"],
                                  ["run", "--model", "bench/models/dyck1-none.safetensors"]])
def test_bytes_that_are_not_utf8_are_a_bad_symbol_not_a_traceback(args):
    # Python reads an undecodable byte as a lone surrogate; it is a symbol outside the alphabet.
    code = ("import sys; from satsim.cli.main import main; "
            "sys.argv = ['satsim', *sys.argv[1:]]; main()")
    done = subprocess.run([sys.executable, "-c", code, *args], input=b"(\xff)\n",
                          capture_output=True, timeout=600, cwd=REPO)
    assert done.returncode == 2
    assert done.stderr.decode().startswith("error: symbol '\\udcff' at position 1 is not in")
    assert len(done.stderr.splitlines()) == 1


def test_compile_refuses_to_write_the_model_over_its_program(tmp_path):
    program = tmp_path / "p.crasp"
    text = 'alphabet = "ab"\naccept = count(Q("a")) > 0\n'
    program.write_text(text)
    (tmp_path / "sub").mkdir()
    (tmp_path / "link.safetensors").symlink_to(program)
    for out in (program, tmp_path / "sub" / ".." / "p.crasp", tmp_path / "link.safetensors"):
        assert "is the program FILE itself" in one_error_line(
            invoke_satsim("compile", str(program), "-o", str(out)))
        assert program.read_text() == text
    both = str(tmp_path / "both")
    assert "-o and --program-out name one file" in one_error_line(
        invoke_satsim("compile", "--lang", "first", "-o", both, "--program-out", both))
    assert not (tmp_path / "both").exists()


def test_verify_refuses_long_strings_beyond_memory_naming_its_own_options(monkeypatch):
    program = str(EXAMPLES / "dyck1.crasp")
    line = one_error_line(invoke_satsim("verify", program, "--long", "1000000000"))
    assert "--long 1,000,000,000 strings" in line and "lower --long or --long-len" in line
    verify = importlib.import_module("satsim.rasp.verify")  # satsim.rasp.verify is a function too
    monkeypatch.setattr(verify, "verify_all", raising(MemoryError()))
    line = one_error_line(invoke_satsim("verify", program, "--long", "3"))
    assert "lower --long, --long-len or --max-len" in line and "-n" not in line
