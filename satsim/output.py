"""Output paths checked before any work is done, and write failures told in one line.

The policy: a file a command writes (``--out FILE``, ``--plot FILE``) goes into a folder that
already exists; a folder a command writes into (``train --out DIR``, ``report --plot DIR``) is
created, with its parents, when it is missing. Either way the folder must be writable, which is
tried by creating and removing a probe file, so a read-only disk or a missing permission is found
before the computation rather than after it.
"""

from __future__ import annotations

import errno
import os
import tempfile
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
    return path.is_symlink() or (path.exists() and not path.is_file())


def replace_atomically(write, path: str | os.PathLike) -> None:
    """Write ``path`` through ``write(temporary path)`` and a rename: a kill leaves old or new.

    A write that fails (a full disk, an error in ``write``) removes its temporary file and
    leaves ``path`` as it was. A path that is not a regular file (/dev/null, a pipe) or is a
    symbolic link (/dev/stdout, a user's link) is written in place: renaming onto it would
    replace the device or the link.
    """
    path = Path(path)
    in_place = written_in_place(path)
    tmp = path if in_place else path.with_name(path.name + ".tmp")
    try:
        write(tmp)
        if not in_place:
            os.replace(tmp, path)
    except BaseException as error:
        if not in_place:
            tmp.unlink(missing_ok=True)
        if isinstance(error, OSError) and error.filename is None:
            error.filename = str(path)  # a failed write() names no file: say which
        raise


def write_text_atomically(path: str | os.PathLike, text: str) -> None:
    """Write ``text`` to ``path`` through :func:`replace_atomically`: a kill leaves old or new."""
    replace_atomically(lambda tmp: Path(tmp).write_text(text), path)
