"""Every file satsim writes goes through one helper (satsim.output.replace_atomically): a write
that fails (a full disk) or is killed leaves the old file bit-identical and no partial behind."""

import errno
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from satsim.model.io import load_spec, save_spec
from satsim.output import (
    PARTIAL,
    partial_path,
    replace_atomically,
    save_figure,
    write_text_atomically,
)
from tests.support.helpers import file_size_limit, random_spec

EXAMPLES = Path(__file__).parent.parent / "examples"
PACKAGES = [Path(__file__).parent.parent / name for name in ("satsim", "languages")]


def satsim_cli(*args, **options):
    return subprocess.run([sys.executable, "-m", "satsim", *map(str, args)],
                          capture_output=True, text=True, **options)


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if PARTIAL in p.name)


@pytest.mark.slow  # a fresh process
def test_compile_over_an_existing_model_on_a_full_disk_leaves_it_readable_and_unchanged(tmp_path):
    model = tmp_path / "m.safetensors"
    first = satsim_cli("compile", EXAMPLES / "majority.crasp", "-o", model)
    assert first.returncode == 0, first.stderr
    before = model.read_bytes()
    full = satsim_cli("compile", EXAMPLES / "anbn.crasp", "-o", model,
                      preexec_fn=file_size_limit(len(before) // 2))
    assert full.returncode == 2 and "Traceback" not in full.stderr, full.stderr
    assert full.stderr.strip() == f"error: the disk is full ({model}); free some space or " \
                                  "write somewhere else"
    assert model.read_bytes() == before and load_spec(model).name == "majority"
    assert leftovers(tmp_path) == []


@pytest.mark.slow  # a fresh process
def test_program_out_over_an_existing_file_on_a_full_disk_leaves_it_unchanged(tmp_path):
    program = tmp_path / "p.brasp"
    program.write_text("the user's own program\n")
    warm = satsim_cli("compile", "--lang", "first", "--program-out", tmp_path / "warm.brasp")
    assert warm.returncode == 0, warm.stderr  # the kernels compiled and cached: no write left
    full = satsim_cli("compile", "--lang", "first", "--program-out", program,
                      preexec_fn=file_size_limit(8))
    assert full.returncode == 2, full.stderr
    assert full.stderr.splitlines()[-1].startswith(f"error: the disk is full ({program})")
    (tmp_path / "warm.brasp").unlink()
    assert program.read_text() == "the user's own program\n" and leftovers(tmp_path) == []


def _figure(path):
    from matplotlib.figure import Figure

    figure = Figure()
    figure.add_subplot().plot([0, 1], [1, 0])
    save_figure(figure, path)


def _trace(path):
    from satsim.papers.scan_snap.trace import FIG4, fig4_task, run_trace

    run_trace(fig4_task(), seeds=1, iters=3, batch=8, **FIG4).save(path)


def _flare_folder(path):
    import languages
    from languages import flare

    lang = languages.get("first")
    splits = {"train": flare.FlareSplit(["1", "0"], [True, False], None)}
    path.rmdir()  # a folder is replaced only when missing or empty
    replace_atomically(lambda partial: flare.write_dataset(partial, splits, lang), path)


WRITERS = {
    "model": ("m.safetensors", lambda path: save_spec(random_spec(1), path)),
    "text": ("r.json", lambda path: write_text_atomically(path, "{}\n" * 1000)),
    "figure": ("plot.png", _figure),
    "arrays": ("trace.npz", _trace),
}


@pytest.mark.parametrize("kind", WRITERS)
def test_a_write_that_fails_before_its_rename_leaves_the_old_file_and_no_partial(
        kind, tmp_path, monkeypatch):
    name, write = WRITERS[kind]
    target = tmp_path / name
    target.write_bytes(b"the old file")

    def disk_full(descriptor):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", disk_full)
    with pytest.raises(OSError) as raised:
        write(target)
    assert raised.value.errno == errno.ENOSPC and raised.value.filename == str(target)
    assert target.read_bytes() == b"the old file" and leftovers(tmp_path) == []
    monkeypatch.undo()
    write(target)
    assert target.read_bytes() != b"the old file" and leftovers(tmp_path) == []


def test_a_folder_write_that_fails_leaves_no_folder_and_no_partial(tmp_path, monkeypatch):
    target = tmp_path / "data"
    target.mkdir()
    monkeypatch.setattr(os, "replace", lambda *a: (_ for _ in ()).throw(OSError(errno.ENOSPC,
                                                                                "full")))
    with pytest.raises(OSError):
        _flare_folder(target)
    assert not target.exists() and leftovers(tmp_path) == []
    monkeypatch.undo()
    target.mkdir()
    _flare_folder(target)
    assert sorted(p.name for p in target.iterdir()) == ["labels.txt", "main.tok", "satsim.json"]


@pytest.mark.slow  # a fresh process
def test_a_partial_of_a_live_writer_is_kept_and_a_dead_writers_is_removed(tmp_path):
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    try:
        target, other = tmp_path / "r.json", tmp_path / "other.json"
        kept = [partial_path(target, live.pid), partial_path(other, dead.pid),
                target.with_name(f".r.json{PARTIAL}another-host-{dead.pid}")]
        for partial in (*kept, partial_path(target, dead.pid)):
            partial.mkdir()  # a folder or a file alike
        write_text_atomically(target, "new\n")
        assert target.read_text() == "new\n"
        assert leftovers(tmp_path) == sorted(p.name for p in kept)
    finally:
        live.kill()
        live.wait()


@pytest.mark.slow  # a fresh process
def test_a_sample_flare_killed_by_sigkill_leaves_a_partial_that_the_next_run_removes(tmp_path):
    target = tmp_path / "data"
    command = [sys.executable, "-m", "satsim", "sample", "--lang", "dyck1", "--split", "flare",
               "-n", "20000", "--flare", str(target)]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    partial = partial_path(target, process.pid)
    while process.poll() is None and not (partial / "main.tok").exists():  # until it writes
        time.sleep(0.005)
    process.send_signal(signal.SIGKILL)
    assert process.wait() == -signal.SIGKILL
    assert partial.is_dir() and not target.exists()  # what a kill -9 leaves
    finished = satsim_cli(*command[3:-2], "-n", "20", "--flare", target)
    assert finished.returncode == 0, finished.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data"]
    assert (target / "satsim.json").is_file()


WRITE_CALL = re.compile(  # a write to a path; writes into a replace_atomically "partial" pass
    r"\.write_(text|bytes)\(|open\((?!partial\b)[^)]*[\"'][wax]b?\+?[\"']|\.savefig\("
    r"|save_file\(|torch\.save\([^,]+,\s*(?!\s|buffer\b)|np\.save\w*\((?!handle\b)")
ALLOWED = {
    "satsim/output.py",  # the helper itself
    "satsim/training/lock.py",  # the run's lock file, held open (never read as data)
    "satsim/training/loop.py",  # metrics.jsonl, appended a row at a time (a torn last row is
    # redone on resume)
    "languages/flare.py",  # languages never imports satsim: satsim renames its folder
}


def test_every_file_satsim_writes_goes_through_the_one_helper():
    offenders = []
    root = PACKAGES[0].parent
    for package in PACKAGES:
        for source in package.rglob("*.py"):
            name = source.relative_to(root).as_posix()
            for number, line in enumerate(source.read_text().splitlines(), 1):
                if WRITE_CALL.search(line) and name not in ALLOWED:
                    offenders.append(f"{name}:{number}: {line.strip()}")
    assert offenders == []
