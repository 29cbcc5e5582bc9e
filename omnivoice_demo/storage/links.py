"""Paths inside a folder of ours that are never followed out of it.

A project folder (a batch's output, a book's) is read again by later runs, so what is in it is input: a
symbolic link where one of our folders belongs (``chapters/`` linked to another folder) would have every
later write land in that other folder, and a link where one of our files belongs (a sentence's sidecar
linked to a file elsewhere) would have that file trusted as ours.  So a link where a folder of ours belongs is
replaced by a folder of its own (``own_folder``), and a file of ours is read only when it is a regular file
itself (``is_regular_file``, ``read_regular``: a link, to anything, is not one; the run makes that file
again, and the atomic write's rename replaces the link, never writing through it).
"""

from __future__ import annotations

import os
import pathlib
import stat
from typing import Optional, Union

from ..errors import InvalidInput

PathLike = Union[str, os.PathLike]


def own_folder(path: PathLike) -> bool:
    """``path`` as a real folder of its own: made when missing; a symbolic link there (to a folder elsewhere, or
    dangling) is removed (the link only: what it points to is left as it is) and a folder made in its place.
    Returns whether a link was replaced.  A file of that name is refused: it is no folder of ours."""
    path = pathlib.Path(path)
    replaced = path.is_symlink()
    if replaced:
        path.unlink()
    try:
        path.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise InvalidInput(f"{path.parent.name}/{path.name} is a file where the project keeps a folder; move it "
                           "away and run the same command again.", param="output") from None
    return replaced


def is_regular_file(path: PathLike) -> bool:
    """Whether ``path`` itself is a regular file (a symbolic link, whatever it points to, is not)."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def read_regular(path: PathLike, limit: Optional[int] = None) -> Optional[bytes]:
    """The bytes of ``path`` when it is a regular file itself (opened without following a link, so one swapped
    in after a check is not followed either), else None; None too when it is over ``limit`` bytes."""
    try:
        descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    with os.fdopen(descriptor, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode) or (limit is not None and info.st_size > limit):
            return None
        return handle.read()
