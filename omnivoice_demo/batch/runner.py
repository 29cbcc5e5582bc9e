"""A batch run: decide what is left to do, hand it to a backend, follow progress, sum up.

``run_batch`` takes a ``plan.BatchPlan`` (everything the run needs, built once
by its caller) and works the same with every backend (this process, worker
processes, Ray actors, an engine already open).  The backend's engine first checks and plans every item
(no compute) and gives its render key (``engine.render_key``: the text as the
model reads it, the voice's content, the settings and seed, the model's content,
the backbone compute that runs, the normaliser, the engine's output version and
the format); an item whose sidecar has that key and whose audio still checks is
reused, and nothing else decides it.  An item made before with another key is
made again, and the summary says which part changed (or that it was made before
render keys).  Items that failed before under the same key are left alone unless
``retry_failed``; the records the backend returns drive two progress bars
(items, and seconds of audio), the closing ``Summary`` and each item's
``ItemResult`` (``results.BatchResult``).  A bad row fails
alone: one the reader refused (``rejected``) or the engine's checks refuse is
counted and listed as failed (the latter in its sidecar too) and the others
run.
"""

from __future__ import annotations

import sys
import time
from typing import Callable, Iterator, Optional, Protocol

from ..engine.render_key import changed_parts, key_of as render_key_of
from .items import BatchItem
from .plan import BatchPlan
from .results import FAILED, MADE, NOT_RUN, REUSED, BatchResult, ItemResult, Summary
from .store import OutputFolder
from .worker import Job, write_subtitles


class Backend(Protocol):
    """What ``run_batch`` hands the items to: ``local.InlineBackend``, ``ProcessBackend`` and ``SharedEngineBackend``,
    ``ray_backend.RayBackend``."""

    workers: int

    def check(self, items: list[BatchItem], audio_format: str) -> tuple[list[tuple[int, str]], dict[str, float],
                                                                       dict[str, dict]]:
        """The items each worker's engine refuses (line, reason), the planned seconds of those it takes, and their
        render keys' parts (``ItemWorker.check``)."""

    def run(self, items: list[BatchItem], job: Job) -> Iterator[dict]:
        """Each item's record as it is done, in any order."""

    def close(self) -> None:
        """Stop the workers."""


def run_batch(plan: BatchPlan, *, backend: Optional[Callable[[], Backend]] = None,
              progress: bool = True) -> BatchResult:
    """Run ``plan`` on the backend its model and workers name, or on ``backend`` (one on an engine already open:
    the app's book jobs); what came of each item comes back with the summary."""
    job, items = plan.job, list(plan.items)
    folder = OutputFolder(job.output).create()
    summary = Summary(total=len(items) + len(plan.rejected), failed=len(plan.rejected),
                      errors={f"line {line}": message for line, message in plan.rejected})
    outcomes: dict[str, ItemResult] = {}
    with folder.lock():
        folder.remove_stale_parts()
        running = (backend or plan.open_backend)() if items else None
        try:
            started = time.perf_counter()
            problems, planned, parts = running.check(items, job.audio_format) if running else ([], {}, {})
            pending = _without_refused(items, dict(problems), folder, summary, outcomes)
            pending = _not_done(pending, parts, folder, job, summary, plan.retry_failed, outcomes)
            if running is not None and pending:  # pending items are some of ``items``, for which it was opened
                summary.workers = running.workers
                ready = time.perf_counter()
                summary.startup_seconds = ready - started
                _follow(running.run(pending, job), summary, planned, len(pending), progress, folder, job, outcomes)
                summary.wall_seconds = time.perf_counter() - ready
        finally:
            if running is not None:
                running.close()
        if plan.book and summary.complete:
            from .book import write_book

            summary.book = write_book(folder, items, job)
    return BatchResult(summary=summary, folder=folder,
                       items={item.id: outcomes.get(item.id, ItemResult(item.id, NOT_RUN)) for item in items})


def _not_done(items: list[BatchItem], parts: dict[str, dict], folder: OutputFolder, job: Job, summary: Summary,
              retry_failed: bool, outcomes: dict[str, ItemResult]) -> list[BatchItem]:
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
            outcomes[item.id] = ItemResult(item.id, REUSED, folder.audio_path(item.id, job.audio_format), key)
            _restore_subtitles(folder, sidecar, job, item.language)
            continue
        failed = folder.failed(item.id, key)
        if failed is not None and not retry_failed:
            summary.failed += 1
            summary.errors[item.id] = failed.get("error", "")
            outcomes[item.id] = ItemResult(item.id, FAILED, key=key, error=summary.errors[item.id])
            continue
        before = folder.read_sidecar(item.id)
        if before is not None and before.get("status") == "done" and before.get("key") != key:
            why = ", ".join(changed_parts(before.get("render"), now)) or "the render key's form"
            summary.remade[why] = summary.remade.get(why, 0) + 1
        pending.append(item)
    return pending


def _without_refused(pending: list[BatchItem], refused: dict[int, str], folder: OutputFolder,
                     summary: Summary, outcomes: dict[str, ItemResult]) -> list[BatchItem]:
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
            outcomes[item.id] = ItemResult(item.id, FAILED, error=error)
    return [item for item in pending if item.line not in refused]


def _follow(records, summary: Summary, planned: dict[str, float], count: int, progress: bool, folder: OutputFolder,
            job: Job, outcomes: dict[str, ItemResult]) -> None:
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
                outcomes[record["id"]] = ItemResult(record["id"], MADE, folder.audio_path(record["id"], job.audio_format),
                                                    record.get("key"))
            else:
                summary.failed += 1
                summary.errors[record["id"]] = record.get("error", "")
                outcomes[record["id"]] = ItemResult(record["id"], FAILED, key=record.get("key"),
                                                    error=summary.errors[record["id"]])
            items_bar.set_postfix(done=summary.done, failed=summary.failed,
                                  audio=f"{summary.audio_seconds:.0f}s")


def _restore_subtitles(folder: OutputFolder, sidecar: dict, job: Job, language: Optional[str] = None) -> None:
    """Subtitles asked for now but not written then: made from the sidecar's chunk times, no synthesis."""
    missing = [kind for kind in job.subtitles if not folder.subtitle_path(sidecar["id"], kind).is_file()
               or (sidecar.get("words") and not folder.subtitle_path(sidecar["id"], f"words.{kind}").is_file())]
    if missing:
        write_subtitles(folder, sidecar["id"], sidecar.get("chunks", []), missing, sidecar.get("words"), language)
