"""Output paths checked before any work is done, and write failures told in one line.

The policy: a file a command writes (``--out FILE``, ``--plot FILE``) goes into a folder that
already exists; a folder a command writes into (``train --out DIR``, ``report --plot DIR``) is
created, with its parents, when it is missing. Either way the folder must be writable, which is
tried by creating and removing a probe file, so a read-only disk or a missing permission is found
before the computation rather than after it.
"""

from __future__ import annotations

import errno
import glob
import os
import shutil
import socket
import tempfile
from collections.abc import Callable
from pathlib import Path

from satsim.errors import SatsimError

ENVIRONMENT_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES,
                                errno.EPERM, errno.EFBIG, errno.ENAMETOOLONG})
"""OSErrors that are the machine's state, not a bug: told in one line by the command line."""


def describe_os_error(error: OSError) -> str:
    """One line on a failed read or write that says what to do."""
    where = f" ({error.filename})" if error.filename else ""
    if error.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
        return f"the disk is full{where}; free some space or write somewhere else"
    if error.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return f"cannot write{where}: {error.strerror}; choose a folder you can write to"
    return f"{error.strerror or error}{where}"


def _check_writable_folder(folder: Path, option: str) -> None:
    try:
        probe = tempfile.NamedTemporaryFile(dir=folder, prefix=".satsim-probe-")
    except OSError as error:
        raise SatsimError(f"{option}: cannot write into {folder} ({error.strerror}); "
                          "choose a folder you can write to") from None
    probe.close()


def check_output_file(path: str | os.PathLike, option: str = "output") -> Path:
    """``path`` as a Path after checking that a file can be written there (folder must exist)."""
    path = Path(path)
    folder = path.parent
    if path.is_dir():
        raise SatsimError(f"{option}: {path} is a folder; give a file name")
    if written_in_place(path):  # a device, a pipe or a link: written in place
        if not os.access(path, os.W_OK):
            raise SatsimError(f"{option}: cannot write to {path} (permission denied)")
        return path
    if not folder.exists():
        raise SatsimError(f"{option}: the folder {folder} does not exist; create it first "
                          f"(mkdir -p {folder})")
    if not folder.is_dir():
        raise SatsimError(f"{option}: {folder} is not a folder")
    if path.exists() and not os.access(path, os.W_OK):
        raise SatsimError(f"{option}: cannot overwrite {path} (permission denied)")
    _check_writable_folder(folder, option)
    return path


def check_output_folder(path: str | os.PathLike, option: str = "output") -> Path:
    """``path`` as a Path after checking it is, or can be created as, a writable folder."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise SatsimError(f"{option}: {path} is a file, not a folder")
    existing = next(p for p in (path, *path.absolute().parents) if p.exists())
    if not existing.is_dir():
        raise SatsimError(f"{option}: cannot create {path}: {existing} is a file")
    _check_writable_folder(existing, option)
    return path


def written_in_place(path: Path) -> bool:
    """Whether ``path`` is a device, a pipe or a link, which a write must not rename onto."""
    return path.is_symlink() or (path.exists() and not path.is_file() and not path.is_dir())


PARTIAL = ".partial-"
"""Infix of a file or folder being written: ``.NAME.partial-HOST-PID`` beside its target."""


def partial_path(path: Path, pid: int | None = None) -> Path:
    """Where process ``pid`` (default: this one) writes ``path`` before renaming it into place.

    Hidden beside ``path`` and named by the host and the process, so that a later run can tell
    a killed writer's partial (removed) from a live one's, also on a disk other hosts share.
    """
    return path.with_name(f".{path.name}{PARTIAL}{socket.gethostname()}-{pid or os.getpid()}")


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: alive
        return True
    return True


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def remove_stale_partials(path: Path) -> None:
    """Remove what killed writers of ``path`` left (a live writer's partial is kept)."""
    for stale in path.parent.glob(f".{glob.escape(path.name)}{PARTIAL}*"):
        host, _, pid = stale.name.rpartition(PARTIAL)[2].rpartition("-")
        if (host == socket.gethostname() and pid.isdigit() and int(pid) != os.getpid()
                and not _process_alive(int(pid))):
            _remove(stale)


def _sync(path: Path) -> None:
    """Flush ``path`` (a file, or a folder and every file in it) to the disk."""
    files = [path] if not path.is_dir() else [path, *path.rglob("*")]
    for item in files:
        descriptor = os.open(item, os.O_RDONLY)
        try:
            os.fsync(descriptor)
        finally:
            os.close(descriptor)


def replace_atomically(write: Callable[[Path], object], path: str | os.PathLike) -> None:
    """Write ``path`` (a file or a folder) through ``write(partial path)``, a sync and a rename.

    ``write`` fills the partial path (hidden beside ``path``, see :func:`partial_path`); it
    is synced to the disk and renamed onto ``path``, so a full disk, an error or a kill leaves
    the old ``path`` or the whole new one. A failure removes the partial; what a killed run
    left is removed by the next write of the same ``path``. A folder replaces only a missing or
    empty one. A path that is not a regular file (/dev/null, a pipe) or is a symbolic link
    (/dev/stdout, a user's link) is written in place: renaming onto it would replace the
    device or the link.
    """
    path = Path(path)
    in_place = written_in_place(path)
    if not in_place:
        remove_stale_partials(path)
    tmp = path if in_place else partial_path(path)
    try:
        write(tmp)
        if not in_place:
            _sync(tmp)
            os.replace(tmp, path)
    except BaseException as error:
        if not in_place:
            _remove(tmp)
        if isinstance(error, OSError) and error.filename in (None, str(tmp), tmp):
            error.filename = str(path)  # name the file asked for, not the hidden partial
        raise


def write_bytes_atomically(path: str | os.PathLike, data: bytes) -> None:
    """Write ``data`` to ``path`` through :func:`replace_atomically`: a kill leaves old or new."""
    replace_atomically(lambda tmp: tmp.write_bytes(data), path)


def write_text_atomically(path: str | os.PathLike, text: str) -> None:
    """Write ``text`` to ``path`` through :func:`replace_atomically`: a kill leaves old or new."""
    write_bytes_atomically(path, text.encode("utf-8"))


def save_figure(figure, path: str | os.PathLike, **options) -> None:
    """Save a matplotlib figure to ``path`` (its format from the suffix) through a rename."""
    suffix = Path(path).suffix.lstrip(".").lower() or None
    replace_atomically(lambda tmp: figure.savefig(tmp, format=suffix, **options), path)
