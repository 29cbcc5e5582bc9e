"""Where the app writes its output files: one folder per install, capped in size, cleaned on exit.

``OutputFolder(root)`` hands out file paths inside ``root`` (the same folder on
every start, so starts do not leave folders behind).  Before each new path it
removes files older than ``max_age_seconds`` and then the oldest files until
the folder holds at most ``max_bytes``; files left by a run that was killed
are pruned the same way.  ``install_cleanup()`` removes the files this
process wrote when it exits normally, on SIGTERM (the signal a Space or a
service manager sends) and on SIGINT.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import pathlib
import secrets
import signal
import threading
import time
from typing import Optional

__all__ = ["DEFAULT_MAX_BYTES", "OutputFolder"]

DEFAULT_MAX_BYTES = 512 * 1024 * 1024
DEFAULT_MAX_AGE_SECONDS = 6 * 3600


class OutputFolder:
    """A size-capped folder of output files (see the module's docstring)."""

    def __init__(self, root: os.PathLike | str, max_bytes: int = DEFAULT_MAX_BYTES,
                 max_age_seconds: float = DEFAULT_MAX_AGE_SECONDS):
        self.root = pathlib.Path(root)
        self.max_bytes, self.max_age_seconds = int(max_bytes), float(max_age_seconds)
        self._written: set[pathlib.Path] = set()
        self._lock = threading.Lock()

    def path(self, stem: str, suffix: str) -> pathlib.Path:
        """A path for a new file ``<stem>-<random token><suffix>`` (the folder pruned first); it is removed at
        exit.  The token (96 random bits) makes the name unguessable: on a shared server the name is what
        lets a visitor fetch the file, so it must not follow from the clock, a seed or a job counter."""
        token = secrets.token_hex(12)
        name = pathlib.PurePath(f"{stem}-{token}{suffix}").name  # never a path outside the folder
        self.root.mkdir(parents=True, exist_ok=True)
        self.prune()
        path = self.root / name
        with self._lock:
            self._written.add(path)
        return path

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
