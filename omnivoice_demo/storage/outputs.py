"""Where the app writes its output files: one folder per install, capped in size, cleaned on exit.

``OutputFolder(root)`` hands out file paths inside ``root`` (the same folder on
every start, so starts do not leave folders behind).  Before each new path it
removes files older than ``max_age_seconds`` and then the oldest files until
the folder holds at most ``max_bytes``; files left by a run that was killed
are pruned the same way.  ``install_cleanup()`` removes the files this
process wrote when it exits normally, on SIGTERM (the signal a Space or a
service manager sends) and on SIGINT.

On a shared server each file is its maker's: ``path(..., owner=...)`` records
who made it (by the random token in its name, which the copies Gradio serves
keep), and ``readable_by(path, owner)`` says whether a request for ``path``
may be answered (``Studio.output_hidden_from`` asks it).  A file of the folder
whose owner is not known (made before a restart, or its record expired) is
nobody's.  A record is kept ``max_age_seconds`` plus ``copies_kept_seconds``
(how long Gradio keeps its served copies), then forgotten.
"""

from __future__ import annotations

import atexit
import collections
import contextlib
import os
import pathlib
import re
import secrets
import signal
import threading
import time
from typing import Optional

from .atomic import storage_error

__all__ = ["DEFAULT_MAX_BYTES", "OutputFolder", "text_stem"]

DEFAULT_MAX_BYTES = 512 * 1024 * 1024
DEFAULT_MAX_AGE_SECONDS = 6 * 3600
#: how long Gradio may keep a served copy of an output after the output itself is gone (a day, unless told)
DEFAULT_COPIES_KEPT_SECONDS = 24 * 3600
#: the random token of an output's name (``-<24 hex digits>`` before the first suffix)
_TOKEN = re.compile(r"-([0-9a-f]{24})(?=\.)")
#: a stem longer than this (in UTF-8 bytes) is cut, so Gradio's copy keeps the whole name and its token
MAX_STEM_BYTES = 120


#: the most characters of the text a download's name begins with
TEXT_STEM_CHARS = 40
_NOT_WORD = re.compile(r"[\W_]+")


def text_stem(text: str, fallback: str, limit: int = TEXT_STEM_CHARS) -> str:
    """The start of a download's name, from the words of the text it says: lower case, joined by ``-``, at most
    ``limit`` characters cut at a word's end (a first word longer than that is cut), ``fallback`` when the text
    has no word.  ``path`` then adds the token and the suffix: ``hello-there-<24 hex digits>.wav`` (issue 58: the
    names were 80 characters of date, time, tab, seed and two random parts)."""
    words = [word for word in _NOT_WORD.split(str(text).lower()) if word]
    stem = ""
    for word in words:
        joined = f"{stem}-{word}" if stem else word
        if len(joined) > limit:
            return stem or word[:limit]
        stem = joined
    return stem or fallback


class OutputFolder:
    """A size-capped folder of output files (see the module's docstring)."""

    def __init__(self, root: os.PathLike | str, max_bytes: int = DEFAULT_MAX_BYTES,
                 max_age_seconds: float = DEFAULT_MAX_AGE_SECONDS,
                 copies_kept_seconds: float = DEFAULT_COPIES_KEPT_SECONDS, clock=time.monotonic):
        self.root = pathlib.Path(root)
        self.max_bytes, self.max_age_seconds = int(max_bytes), float(max_age_seconds)
        self.copies_kept_seconds = float(copies_kept_seconds)
        self._written: set[pathlib.Path] = set()
        #: token -> (owner, when recorded), oldest first
        self._owners: "collections.OrderedDict[str, tuple[str, float]]" = collections.OrderedDict()
        self._clock = clock
        self._lock = threading.Lock()

    def path(self, stem: str, suffix: str, owner: Optional[str] = None) -> pathlib.Path:
        """A path for a new file ``<stem>-<random token><suffix>`` (the folder pruned first); it is removed at
        exit.  The token (96 random bits) makes the name unguessable: on a shared server the name is what
        lets a visitor fetch the file, so it must not follow from the clock, a seed or a job counter.
        ``owner``: the visitor the file is for (``readable_by``); a file beside it with the same name and
        another suffix (``path.with_suffix``) is theirs too."""
        token = secrets.token_hex(12)
        stem = stem.encode("utf-8")[:MAX_STEM_BYTES].decode("utf-8", "ignore")
        name = pathlib.PurePath(f"{stem}-{token}{suffix}").name  # never a path outside the folder
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise storage_error(exc, "output") from None
        self.prune()
        path = self.root / name
        with self._lock:
            self._written.add(path)
            if owner is not None:
                self._forget_expired()
                self._owners[token] = (owner, self._clock())
        return path

    def written_beside(self, path: pathlib.Path, suffix: str) -> pathlib.Path:
        """``path`` with ``suffix`` instead of its own, removed at exit like ``path`` (same token, same owner)."""
        beside = pathlib.Path(path).with_suffix(suffix)
        with self._lock:
            self._written.add(beside)
        return beside

    def _forget_expired(self) -> None:
        oldest = self._clock() - self.max_age_seconds - self.copies_kept_seconds
        while self._owners and next(iter(self._owners.values()))[1] < oldest:
            self._owners.popitem(last=False)

    def owner_of(self, name: str) -> Optional[str]:
        """Who the output named ``name`` (or a copy of it) was made for; None when no token of ours is in it."""
        with self._lock:
            self._forget_expired()
            for token in _TOKEN.findall(name):
                if token in self._owners:
                    return self._owners[token][0]
        return None

    def readable_by(self, requested: os.PathLike | str, owner: Optional[str]) -> Optional[bool]:
        """Whether ``owner`` may have the file at ``requested`` (a path as a client sent it): None when it is no
        output of ours (neither in the folder nor named with a token we recorded), else True for its owner only.
        A file in the folder whose owner is not recorded is nobody's."""
        path = pathlib.Path(os.path.abspath(str(requested)))
        try:
            resolved = path.resolve()
            in_folder = resolved.is_relative_to(self.root.resolve())
        except (OSError, RuntimeError, ValueError):  # a loop of links, a name the file system refuses
            resolved, in_folder = path, False
        made_for = self.owner_of(path.name) or self.owner_of(resolved.name)
        if made_for is None:
            return False if in_folder else None
        return owner is not None and secrets.compare_digest(made_for.encode(), owner.encode())

    def files(self) -> list[tuple[float, int, pathlib.Path]]:
        """(modified time, size, path) of every file in the folder, oldest first."""
        found = []
        for path in self.root.glob("*"):
            with contextlib.suppress(OSError):
                stat = path.stat()
                if path.is_file():
                    found.append((stat.st_mtime, stat.st_size, path))
        return sorted(found)

    def total_bytes(self) -> int:
        return sum(size for _, size, _ in self.files())

    def prune(self, keep_bytes: Optional[int] = None) -> int:
        """Remove files past their age, then the oldest until at most ``keep_bytes``; returns the count removed."""
        keep_bytes = self.max_bytes if keep_bytes is None else keep_bytes
        files = self.files()
        total = sum(size for _, size, _ in files)
        cutoff = time.time() - self.max_age_seconds
        removed = 0
        for mtime, size, path in files:
            if mtime >= cutoff and total <= keep_bytes:
                break
            with contextlib.suppress(OSError):
                path.unlink()
                removed += 1
                total -= size
        return removed

    def cleanup(self) -> None:
        """Remove the files this process wrote (other processes' files are left to their own cleanup)."""
        with self._lock:
            written, self._written = self._written, set()
        for path in written:
            with contextlib.suppress(OSError):
                path.unlink()

    def install_cleanup(self) -> None:
        """Run ``cleanup`` at exit, on SIGTERM and on SIGINT (main thread only), then let the signal act."""
        atexit.register(self.cleanup)
        if threading.current_thread() is not threading.main_thread():
            return
        for number in (signal.SIGTERM, signal.SIGINT):
            previous = signal.getsignal(number)

            def handler(signum, frame, previous=previous):
                self.cleanup()
                if callable(previous):
                    previous(signum, frame)
                    return
                signal.signal(signum, signal.SIG_DFL)
                os.kill(os.getpid(), signum)

            signal.signal(number, handler)
