"""A batch run: decide what is left to do, hand it to a backend, follow progress, sum up.

``run_batch`` works the same with every backend (this process, worker
processes, Ray actors).  The backend's engine first checks and plans every item
(no compute) and gives its render key (``engine.render_key``: the text as the
model reads it, the voice's content, the settings and seed, the model's content,
the backbone compute that runs, the normaliser, the engine's output version and
the format); an item whose sidecar has that key and whose audio still checks is
reused, and nothing else decides it.  An item made before with another key is
made again, and the summary says which part changed (or that it was made before
render keys).  Items that failed before under the same key are left alone unless
``retry_failed``; the records the backend returns drive two progress bars
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

from ..engine.render_key import changed_parts, key_of as render_key_of
from .items import BatchItem
from .store import OutputFolder
from .worker import Job, write_subtitles


class Backend(Protocol):
    """What ``run_batch`` hands the items to: ``local.InlineBackend`` and ``ProcessBackend``, ``ray_backend.RayBackend``."""

    workers: int

    def check(self, items: list[BatchItem], audio_format: str) -> tuple[list[tuple[int, str]], dict[str, float],
                                                                       dict[str, dict]]:
        """The items each worker's engine refuses (line, reason), the planned seconds of those it takes, and their
        render keys' parts (``ItemWorker.check``)."""

    def run(self, items: list[BatchItem], job: Job) -> Iterator[dict]:
        """Each item's record as it is done, in any order."""

    def close(self) -> None:
        """Stop the workers."""


@dataclasses.dataclass
class Summary:
    total: int = 0
    done: int = 0                 # synthesised in this run
    skipped: int = 0              # done before, reused
    #: made again although made before, by why (the parts of the render key that changed): count
    failed: int = 0               # failed in this run, or before and not retried
    audio_seconds: float = 0.0    # made in this run
    startup_seconds: float = 0.0  # starting the workers and loading their engines
    wall_seconds: float = 0.0     # synthesis, after the start-up
    workers: int = 0
    errors: dict[str, str] = dataclasses.field(default_factory=dict)
    remade: dict[str, int] = dataclasses.field(default_factory=dict)
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
            lines.append("nothing to synthesise (--retry-failed runs the failed items again)"
                         if self.failed else "nothing to synthesise: every item was made before with the same "
                                             "render key")
        lines += [f"made again: {count} item(s) made before, changed: {why}" for why, count in self.remade.items()]
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
        backend = open_backend() if items else None
        try:
            started = time.perf_counter()
            problems, planned, parts = backend.check(items, job.audio_format) if backend else ([], {}, {})
            pending = _without_refused(items, dict(problems), folder, summary)
            pending = _not_done(pending, parts, folder, job, summary, retry_failed)
            if pending:
                summary.workers = backend.workers
                ready = time.perf_counter()
                summary.startup_seconds = ready - started
                _follow(backend.run(pending, job), summary, planned, len(pending), progress)
                summary.wall_seconds = time.perf_counter() - ready
        finally:
            if backend is not None:
                backend.close()
        if book and summary.done + summary.skipped == summary.total:
            from .book import write_book

            summary.book = write_book(folder, items, job)
    return summary


def _not_done(items: list[BatchItem], parts: dict[str, dict], folder: OutputFolder, job: Job, summary: Summary,
              retry_failed: bool) -> list[BatchItem]:
    """``items`` less those made before under their render key now (their audio checked; reused, subtitles
    asked for now written from the sidecar) and those that failed under it (unless ``retry_failed``).  Those
    made before under another key are counted in ``summary.remade`` by what changed."""
    pending = []
    for item in items:
        now = parts[item.id]
        key = render_key_of(now)
        sidecar = folder.finished(item.id, key, job.audio_format)
        if sidecar is not None:
            summary.skipped += 1
            _restore_subtitles(folder, sidecar, job, item.language)
            continue
        failed = folder.failed(item.id, key)
        if failed is not None and not retry_failed:
            summary.failed += 1
            summary.errors[item.id] = failed.get("error", "")
            continue
        before = folder.read_sidecar(item.id)
        if before is not None and before.get("status") == "done" and before.get("key") != key:
            why = ", ".join(changed_parts(before.get("render"), now)) or "the render key's form"
            summary.remade[why] = summary.remade.get(why, 0) + 1
        pending.append(item)
    return pending


def _without_refused(pending: list[BatchItem], refused: dict[int, str], folder: OutputFolder,
                     summary: Summary) -> list[BatchItem]:
    """``pending`` less the items the engine's checks refused (by line), each recorded as failed in its sidecar
    (so a rerun leaves it alone unless failures are retried) and in ``summary``."""
    for item in pending:
        if item.line in refused:
            error = f"line {item.line}: {refused[item.line]}"
            folder.write_json(folder.sidecar_path(item.id), {
                "id": item.id, "line": item.line, "key": None,
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


def _restore_subtitles(folder: OutputFolder, sidecar: dict, job: Job, language: Optional[str] = None) -> None:
    """Subtitles asked for now but not written then: made from the sidecar's chunk times, no synthesis."""
    missing = [kind for kind in job.subtitles if not folder.subtitle_path(sidecar["id"], kind).is_file()
               or (sidecar.get("words") and not folder.subtitle_path(sidecar["id"], f"words.{kind}").is_file())]
    if missing:
        write_subtitles(folder, sidecar["id"], sidecar.get("chunks", []), missing, sidecar.get("words"), language)
