"""Running the item function on this machine: in this process, in N worker processes, or on an engine already open.

Each worker process opens its own engine with its share of the cores
(``threads``); items go to whichever worker is free.  A worker process exits
when the batch process dies (even by SIGKILL), so no orphan keeps writing.
``SharedEngineBackend`` runs on an engine others use too (the app's, for its
book jobs): one item at a time under the engine's lock, stopping between items.
"""

from __future__ import annotations

import concurrent.futures
import multiprocessing
import os
import threading
import time
from typing import Iterator, Optional

from .items import BatchItem
from .worker import ItemWorker, Job, ModelSpec


def available_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


class InlineBackend:
    """One engine in this process."""

    def __init__(self, spec: ModelSpec, threads: Optional[int] = None):
        self.worker = ItemWorker(spec, threads)
        self.workers = 1

    def check(self, items: list[BatchItem], audio_format: str):
        return self.worker.check(items, audio_format)

    def run(self, items: list[BatchItem], job: Job) -> Iterator[dict]:
        for item in items:
            yield self.worker.run(item, job)

    def close(self) -> None:
        pass


class SharedEngineBackend:
    """One item at a time on ``engine``, each holding ``lock`` (other requests take turns with the run); stops
    between items once ``stop`` is set (the items not reached are not run)."""

    workers = 1

    def __init__(self, engine, lock, stop: threading.Event):
        self.lock, self.stop = lock, stop
        self.worker = ItemWorker.on_engine(engine)

    def check(self, items: list[BatchItem], audio_format: str):
        with self.lock:
            return self.worker.check(items, audio_format)

    def run(self, items: list[BatchItem], job: Job) -> Iterator[dict]:
        for item in items:
            if self.stop.is_set():
                return
            with self.lock:
                record = self.worker.run(item, job)
            yield record

    def close(self) -> None:
        pass


_WORKER: Optional[ItemWorker] = None


def _start_worker(spec: ModelSpec, threads: Optional[int], parent: int) -> None:
    global _WORKER
    _WORKER = ItemWorker(spec, threads)

    def watch_parent():
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(0)

    threading.Thread(target=watch_parent, daemon=True, name="parent-watch").start()


def _check(items, audio_format):
    return _WORKER.check(items, audio_format)


def _run(item, job):
    return _WORKER.run(item, job)


class ProcessBackend:
    """``workers`` processes (spawned: a fresh interpreter each), each with its own engine."""

    def __init__(self, spec: ModelSpec, workers: int, threads: Optional[int] = None):
        self.workers = workers
        self.threads = threads or max(1, available_cores() // workers)
        self.pool = concurrent.futures.ProcessPoolExecutor(
            max_workers=workers, mp_context=multiprocessing.get_context("spawn"),
            initializer=_start_worker, initargs=(spec, self.threads, os.getpid()))

    def check(self, items: list[BatchItem], audio_format: str):
        """The engine's checks and render keys, in a share of the items per worker (which also starts every worker
        now)."""
        shares = [items[i::self.workers] for i in range(self.workers) if items[i::self.workers]]
        problems, seconds, parts = [], {}, {}
        for share_problems, share_seconds, share_parts in self.pool.map(_check, shares, [audio_format] * len(shares)):
            problems += share_problems
            seconds.update(share_seconds)
            parts.update(share_parts)
        return problems, seconds, parts

    def run(self, items: list[BatchItem], job: Job) -> Iterator[dict]:
        futures = [self.pool.submit(_run, item, job) for item in items]
        for future in concurrent.futures.as_completed(futures):
            yield future.result()

    def close(self) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)
