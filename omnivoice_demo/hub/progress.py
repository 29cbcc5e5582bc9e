"""Progress of a model resolution: events for the app, short lines for the console, and the
adapter that turns huggingface_hub's tqdm bars into events."""

from __future__ import annotations

import dataclasses
import logging
import os
import sys
import threading
import time
from typing import Any, Callable

log = logging.getLogger(__name__)


@dataclasses.dataclass
class ProgressEvent:
    """One progress report.  ``stage`` is one of: "resolve", "download", "verify", "repair",
    "assemble", "build", "ready".  ``notice`` carries a message the user should read (the
    backbone was repaired, a cached copy is used because the Hub is unreachable, ...)."""

    stage: str
    message: str
    files_done: int = 0
    files_total: int = 0
    bytes_done: int = 0
    bytes_total: int = 0
    notice: str | None = None

    @property
    def fraction(self) -> float | None:
        if self.bytes_total:
            return min(1.0, self.bytes_done / self.bytes_total)
        if self.files_total:
            return min(1.0, self.files_done / self.files_total)
        return None


ProgressCallback = Callable[[ProgressEvent], Any]


class Reporter:
    """Sends events to the caller's callback and collects the notices for the result."""

    def __init__(self, callback: ProgressCallback | None):
        self.callback = callback
        self.notices: list[str] = []
        self.lock = threading.RLock()

    def emit(self, stage: str, message: str, **fields) -> None:
        event = ProgressEvent(stage, message, **fields)
        log.debug("%s: %s", stage, message)
        if self.callback is not None:
            with self.lock:
                self.callback(event)

    def notice(self, stage: str, text: str) -> None:
        self.notices.append(text)
        log.info(text)
        self.emit(stage, text, notice=text)


def format_bytes(n: int | float) -> str:
    n = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if abs(n) < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} GB"


_DEVNULL = None


def _devnull():
    global _DEVNULL
    if _DEVNULL is None:
        _DEVNULL = open(os.devnull, "w")  # noqa: SIM115 - one per process
    return _DEVNULL


class DownloadProgress:
    """Turns huggingface_hub's tqdm updates into ProgressEvents (files and bytes)."""

    def __init__(self, reporter: Reporter, label: str, files_total: int, bytes_total: int):
        self.reporter, self.label = reporter, label
        self.files_total, self.bytes_total = files_total, bytes_total
        self.files_done = self.bytes_done = 0
        self.last = 0.0
        self.lock = threading.Lock()

    def update(self, role: str, n: float) -> None:
        with self.lock:
            if role == "files":
                self.files_done += int(n)
            elif role == "bytes":
                self.bytes_done += int(n)
            else:
                return
            now = time.monotonic()
            if role == "bytes" and now - self.last < 0.1:
                return
            self.last = now
            self._emit()

    def _emit(self) -> None:
        done = min(self.bytes_done, self.bytes_total) if self.bytes_total else self.bytes_done
        self.reporter.emit(
            "download",
            f"{self.label}: {self.files_done}/{self.files_total} files, "
            f"{format_bytes(done)} of {format_bytes(self.bytes_total)}",
            files_done=min(self.files_done, self.files_total), files_total=self.files_total,
            bytes_done=done, bytes_total=self.bytes_total,
        )

    def finish(self) -> None:
        with self.lock:
            self.files_done = self.files_total
            self.bytes_done = max(self.bytes_done, self.bytes_total)
            self._emit()

    def tqdm_class(self):
        """A tqdm class for ``snapshot_download(tqdm_class=...)`` that reports to this object."""
        from tqdm.std import tqdm as std_tqdm

        progress = self
        sink = _devnull()

        class _Bar(std_tqdm):
            """A silent tqdm whose updates go to the progress callback.

            snapshot_download makes three kinds of bars with it: files done ("Fetching N
            files", unit "it"), bytes written ("Reconstructing", unit "B") and network
            bytes ("Downloading bytes", not used: resumed bytes would count twice).
            """

            def __init__(self, *args, **kwargs):
                kwargs.pop("name", None)
                kwargs["file"] = sink
                kwargs["disable"] = False
                desc = str(kwargs.get("desc") or "")
                unit = kwargs.get("unit", "it")
                if unit != "B":
                    self._role = "files"
                elif desc.startswith("Downloading bytes"):
                    self._role = "transfer"
                else:
                    self._role = "bytes"
                super().__init__(*args, **kwargs)

            def update(self, n=1):
                result = super().update(n)
                progress.update(self._role, n or 0)
                return result

        return _Bar


def console_progress(stream=None, interval: float = 0.5) -> ProgressCallback:
    """A progress callback that writes short lines to stderr (download lines at most every ``interval``)."""
    stream = stream or sys.stderr
    state = {"last": 0.0, "stage": None, "message": None}

    def callback(event: ProgressEvent) -> None:
        now = time.monotonic()
        if event.notice:
            print(f"NOTE: {event.notice}", file=stream, flush=True)
            return
        if event.message == state["message"]:
            return
        throttled = event.stage == "download" and event.stage == state["stage"] and now - state["last"] < interval
        if throttled and event.bytes_done < event.bytes_total:
            return
        state.update(last=now, stage=event.stage, message=event.message)
        fraction = event.fraction
        prefix = f"[{event.stage}{'' if fraction is None else f' {fraction * 100:5.1f}%'}]"
        print(f"{prefix} {event.message}", file=stream, flush=True)

    return callback
