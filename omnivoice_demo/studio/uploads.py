"""What a shared server keeps of visitors' uploads: bytes per visitor and in total, for a bounded time.

Gradio writes every file posted to ``/gradio_api/upload`` into its cache folder
before any event runs; ``max_file_size`` bounds one file, not how many.  The
quota charges each visitor the bytes of their upload bodies as they arrive and
forgets a charge after ``keep_seconds`` plus ``sweep_seconds`` (by then
Gradio's ``delete_cache`` has removed the files, ``UploadQuota.delete_cache``);
an upload that would pass the visitor's or the server's budget is refused
before it is read (``UploadQuotaMiddleware`` in ``ui/uploads.py``).
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import threading
import time
from typing import Callable, Optional

MB = 1024 * 1024


@dataclasses.dataclass
class UploadQuota:
    per_visitor_bytes: int = 200 * MB
    total_bytes: int = 2048 * MB
    keep_seconds: int = 3600
    sweep_seconds: int = 300
    clock: Callable[[], float] = time.monotonic

    def __post_init__(self) -> None:
        self._charges: dict[str, collections.deque] = {}
        self._lock = threading.Lock()

    @property
    def delete_cache(self) -> tuple[int, int]:
        """Gradio's ``Blocks.delete_cache``: (how often, how old) a cached file is removed, in seconds."""
        return (self.sweep_seconds, self.keep_seconds)

    def _expire(self) -> None:
        oldest = self.clock() - self.keep_seconds - self.sweep_seconds
        for visitor in list(self._charges):
            charges = self._charges[visitor]
            while charges and charges[0][0] < oldest:
                charges.popleft()
            if not charges:
                del self._charges[visitor]

    def used(self, visitor: Optional[str] = None) -> int:
        with self._lock:
            self._expire()
            chosen = [self._charges.get(visitor, ())] if visitor is not None else self._charges.values()
            return sum(size for charges in chosen for _, size in charges)

    def charge(self, visitor: str, size: int) -> Optional[str]:
        """Count ``size`` more bytes for ``visitor``; the reason (a sentence) when that is over a budget."""
        with self._lock:
            self._expire()
            mine = sum(n for _, n in self._charges.get(visitor, ()))
            total = sum(n for charges in self._charges.values() for _, n in charges)
            minutes = max(1, round((self.keep_seconds + self.sweep_seconds) / 60))
            if mine + size > self.per_visitor_bytes:
                return (f"Your uploads on this shared server passed {self.per_visitor_bytes / MB:g} MB; they are "
                        f"kept {minutes} min at most. Try again later.")
            if total + size > self.total_bytes:
                return (f"This shared server holds {self.total_bytes / MB:g} MB of uploads, its limit; they are "
                        f"kept {minutes} min at most. Try again later.")
            self._charges.setdefault(visitor, collections.deque()).append((self.clock(), size))
            return None


def upload_arguments(parser: argparse.ArgumentParser) -> None:
    defaults = UploadQuota()
    parser.add_argument("--upload-quota-mb", type=float, default=defaults.per_visitor_bytes / MB,
                        help="shared mode: MB one visitor may upload in --upload-keep-minutes (default %(default)g)")
    parser.add_argument("--upload-total-mb", type=float, default=defaults.total_bytes / MB,
                        help="shared mode: MB of uploads the server holds at most (default %(default)g)")
    parser.add_argument("--upload-keep-minutes", type=float, default=defaults.keep_seconds / 60,
                        help="uploaded files are deleted after this many minutes (default %(default)g)")


def upload_quota_from_arguments(args: argparse.Namespace) -> UploadQuota:
    keep = max(1, int(args.upload_keep_minutes * 60))
    return UploadQuota(per_visitor_bytes=int(args.upload_quota_mb * MB), total_bytes=int(args.upload_total_mb * MB),
                       keep_seconds=keep, sweep_seconds=max(1, min(300, keep // 4)))
