"""Files we keep, written whole or not at all: a temporary name in the same folder, fsync, then a rename.

A kill, a crash or a full disk during the write leaves the old file (or none), never half a new one.
A folder that is full or read-only is an ``InvalidInput`` naming the problem, not an internal error.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import pathlib
import tempfile
from typing import BinaryIO, Iterator, Optional

from ..errors import InvalidInput

__all__ = ["atomic_output", "replacing_file", "replacing_path", "storage_error", "storage_problem",
           "write_atomically", "TEMPORARY_SUFFIX"]

#: what a write in progress is called (``.<stem>-<random>.part`` unless a caller names its own prefix): a
#: start-up sweep may remove leftovers
TEMPORARY_SUFFIX = ".part"
#: the mode of every file we keep: the usual one of a file the user writes (read by others, written by the owner)
FILE_MODE = 0o644
_STORAGE_ERRORS = {errno.ENOSPC: "is full", errno.EDQUOT: "is over its quota", errno.EROFS: "is read-only",
                   errno.EACCES: "is not writable", errno.EPERM: "is not writable"}


@contextlib.contextmanager
def replacing_path(path: os.PathLike | str, prefix: Optional[str] = None,
                   mode: int = FILE_MODE) -> Iterator[pathlib.Path]:
    """The mechanism: the path of a temporary file beside ``path`` (its folder made if need be) for the block to
    write by name (a library that opens the file itself), fsynced and renamed over ``path`` when the block ends
    without an error, else removed; an ``OSError`` as raised.  The temporary name is ``prefix`` (default
    ``.<stem>-``), a random part and ``TEMPORARY_SUFFIX``; the file gets ``mode`` (``mkstemp`` makes it 0600)."""
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.stem[:40]}-" if prefix is None else prefix,
                                         suffix=TEMPORARY_SUFFIX, dir=path.parent)
    os.close(handle)
    try:
        os.chmod(temporary, mode)
        yield pathlib.Path(temporary)
        _sync_file(temporary)
        os.replace(temporary, path)
        _sync_folder(path.parent)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


@contextlib.contextmanager
def replacing_file(path: os.PathLike | str) -> Iterator[BinaryIO]:
    """``replacing_path`` with a binary handle on the temporary file (closed before the fsync and rename)."""
    with replacing_path(path) as temporary, open(temporary, "wb") as out:
        yield out


@contextlib.contextmanager
def atomic_output(path: os.PathLike | str, what: str = "file") -> Iterator[BinaryIO]:
    """``replacing_file`` for a file a visitor keeps: a full, read-only or unwritable folder is an
    ``InvalidInput`` naming the problem (``what``: the kind of file, in the message)."""
    try:
        with replacing_file(path) as out:
            yield out
    except OSError as exc:
        raise storage_error(exc, what) from None


def write_atomically(path: os.PathLike | str, data: bytes, what: str = "file") -> pathlib.Path:
    """``data`` into ``path`` through ``atomic_output``."""
    with atomic_output(path, what) as out:
        out.write(data)
    return pathlib.Path(path)


def _sync_file(name: str) -> None:
    """What the block wrote, on disk (through a handle of our own: the block's may be closed or unknown)."""
    descriptor = os.open(name, os.O_RDWR)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def _sync_folder(folder: pathlib.Path) -> None:
    """The rename itself on disk (a folder's fsync; not every system allows it)."""
    with contextlib.suppress(OSError):
        descriptor = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(descriptor)
        finally:
            os.close(descriptor)


def storage_problem(exc: OSError) -> Optional[str]:
    """What a failed write says of its folder ("is full (ENOSPC)", "is read-only (EROFS)", ...), None for
    another ``OSError``."""
    problem = _STORAGE_ERRORS.get(exc.errno)
    return None if problem is None else f"{problem} ({errno.errorcode.get(exc.errno, exc.errno)})"


def storage_error(exc: OSError, what: str) -> Exception:
    """A full, read-only or unwritable folder as an ``InvalidInput`` saying so; any other ``OSError`` as it is."""
    problem = storage_problem(exc)
    if problem is None:
        return exc
    return InvalidInput(f"The {what} could not be saved: its folder on the server {problem}. Free some space or "
                        "make the folder writable, then try again.")


def atomic_write_json(path: pathlib.Path, data: dict) -> None:
    """``data`` as JSON into ``path``, whole or not at all (``replacing_file``; an ``OSError`` as raised)."""
    with replacing_file(path) as out:
        out.write((json.dumps(data, indent=2, ensure_ascii=False) + "\n").encode("utf-8"))

