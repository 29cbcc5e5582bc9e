"""A batch run: decide what is left to do, hand it to a backend, follow progress, sum up.

``run_batch`` works the same with every backend (this process, worker
processes, Ray actors): items already done with the same inputs and a
verified audio file are skipped, items that failed before are left alone
unless ``retry_failed``, the engine checks every remaining item before any
is synthesised, and the records the backend returns drive two progress bars
(items, and seconds of audio) and the closing ``Summary``.  A bad row fails
alone: one the reader refused (``rejected``) or the engine's checks refuse is
counted and listed as failed (the latter in its sidecar too) and the others
run.
"""

from __future__ import annotations

import dataclasses
import sys
import time
from typing import Callable, Iterator, Optional, Protocol, Sequence

from .items import BatchItem
from .store import OutputFolder
from .worker import Job, write_subtitles


class Backend(Protocol):
    """What ``run_batch`` hands the items to: ``local.InlineBackend`` and ``ProcessBackend``, ``ray_backend.RayBackend``."""

    workers: int

    def check(self, items: list[BatchItem]) -> tuple[list[tuple[int, str]], dict[str, float]]:
        """The items each worker's engine refuses (index, reason) and the planned seconds of those it takes."""

    def run(self, items: list[BatchItem], job: Job) -> Iterator[dict]:
        """Each item's record as it is done, in any order."""

    def close(self) -> None:
        """Stop the workers."""


@dataclasses.dataclass
class Summary:
    total: int = 0
    done: int = 0                 # synthesised in this run
    skipped: int = 0              # done before, reused
    failed: int = 0               # failed in this run, or before and not retried
    audio_seconds: float = 0.0    # made in this run
    startup_seconds: float = 0.0  # starting the workers and loading their engines
    wall_seconds: float = 0.0     # synthesis, after the start-up
    workers: int = 0
    errors: dict[str, str] = dataclasses.field(default_factory=dict)
    book: Optional[str] = None
    checked_chunks: int = 0       # the sentence check (--guard): chunks checked in this run,
    retried_chunks: int = 0       # those generated more than once,
    unpassed_chunks: int = 0      # and those whose best take still failed the threshold

    @property
    def items_per_hour(self) -> float:
        return self.done * 3600 / self.wall_seconds if self.wall_seconds else 0.0

    @property
    def audio_hours_per_hour(self) -> float:
        return self.audio_seconds / self.wall_seconds if self.wall_seconds else 0.0

    def lines(self) -> list[str]:
        lines = [f"{self.total} items: {self.done} done, {self.skipped} skipped (done before), {self.failed} failed"]
        if self.workers:
            lines.append(f"{self.audio_seconds / 3600:.4f} h of audio in {self.wall_seconds:.1f} s "
                         f"(+{self.startup_seconds:.1f} s start-up) with {self.workers} worker(s): "
                         f"{self.items_per_hour:.0f} items/h, {self.audio_hours_per_hour:.3f} h of audio per hour")
        else:
            lines.append("nothing to synthesise: no worker was started (--retry-failed runs the failed items again)"
                         if self.failed else "nothing to synthesise: every item was done before; no worker was started")
        if self.checked_chunks:
            lines.append(f"sentence check: {self.checked_chunks} chunks checked, {self.retried_chunks} retried, "
                         f"{self.unpassed_chunks} never passed (their best take was kept)")
        lines += [f"failed {item_id}: {error}" for item_id, error in list(self.errors.items())[:20]]
        if self.book:
            lines.append(f"book: {self.book}")
        return lines


def run_batch(items: list[BatchItem], job: Job, open_backend: Callable[[], Backend], *, retry_failed: bool = False,
              book: bool = False, progress: bool = True, rejected: Sequence[tuple[int, str]] = ()) -> Summary:
    """Run ``items``; ``rejected``: ``(line, message)`` of the input's rows that could not be read (failed)."""
    folder = OutputFolder(job.output).create()
    summary = Summary(total=len(items) + len(rejected), failed=len(rejected),
                      errors={f"line {line}": message for line, message in rejected})
    with folder.lock():
        folder.remove_stale_parts()
        pending = []
        for item in items:
            key = item.key(job.model_identity, job.audio_format)
            sidecar = folder.finished(item.id, key, job.audio_format)
            if sidecar is not None:
                summary.skipped += 1
                _restore_subtitles(folder, sidecar, job)
                continue
            failed = folder.failed(item.id, key)
            if failed is not None and not retry_failed:
                summary.failed += 1
                summary.errors[item.id] = failed.get("error", "")
                continue
            pending.append(item)
        if pending:
            started = time.perf_counter()
            backend = open_backend()
            try:
                summary.workers = backend.workers
                problems, planned = backend.check(pending)
                pending = _without_refused(pending, dict(problems), folder, job, summary)
                ready = time.perf_counter()
                summary.startup_seconds = ready - started
                _follow(backend.run(pending, job), summary, planned, len(pending), progress)
                summary.wall_seconds = time.perf_counter() - ready
            finally:
                backend.close()
        if book and summary.done + summary.skipped == summary.total:
            from .book import write_book

            summary.book = write_book(folder, items, job)
    return summary


def _without_refused(pending: list[BatchItem], refused: dict[int, str], folder: OutputFolder, job: Job,
                     summary: Summary) -> list[BatchItem]:
    """``pending`` less the items the engine's checks refused (by line), each recorded as failed in its sidecar
    (so a rerun leaves it alone unless failures are retried) and in ``summary``."""
    for item in pending:
        if item.line in refused:
            error = f"line {item.line}: {refused[item.line]}"
            folder.write_json(folder.sidecar_path(item.id), {
                "id": item.id, "line": item.line, "key": item.key(job.model_identity, job.audio_format),
                "text": item.text, "status": "failed", "error": error})
            summary.failed += 1
            summary.errors[item.id] = error
    return [item for item in pending if item.line not in refused]


def _follow(records, summary: Summary, planned: dict[str, float], count: int, progress: bool) -> None:
    from tqdm import tqdm

    bars = dict(disable=not progress, file=sys.stderr, dynamic_ncols=True)
    with tqdm(total=count, desc="items", unit="item", position=0, **bars) as items_bar, \
            tqdm(total=sum(planned.values()), desc="audio", unit="s", position=1,
                 bar_format="{l_bar}{bar}| {n:.1f}/{total:.1f} s [{elapsed}<{remaining}]", **bars) as audio_bar:
        for record in records:
            items_bar.update(1)
            audio_bar.update(planned.get(record["id"], 0.0))
            if record["status"] == "done":
                summary.done += 1
                summary.audio_seconds += record["seconds"]
                checks = record.get("checks", [])
                summary.checked_chunks += len(checks)
                summary.retried_chunks += sum(len(c["takes"]) > 1 for c in checks)
                summary.unpassed_chunks += sum(not c["passed"] for c in checks)
            else:
                summary.failed += 1
                summary.errors[record["id"]] = record.get("error", "")
            items_bar.set_postfix(done=summary.done, failed=summary.failed,
                                  audio=f"{summary.audio_seconds:.0f}s")


def _restore_subtitles(folder: OutputFolder, sidecar: dict, job: Job) -> None:
    """Subtitles asked for now but not written then: made from the sidecar's chunk times, no synthesis."""
    missing = [kind for kind in job.subtitles if not folder.subtitle_path(sidecar["id"], kind).is_file()
               or (sidecar.get("words") and not folder.subtitle_path(sidecar["id"], f"words.{kind}").is_file())]
    if missing:
        write_subtitles(folder, sidecar["id"], sidecar.get("chunks", []), missing, sidecar.get("words"))
