"""The engine slot: one bounded queue and one cancellation mechanism for every way in.

The UI, the Gradio API and the HTTP API all submit generations here, so the
concurrency limit, the queue bound and "cancel stops the engine" hold whatever
the client does:

* ``EngineService(max_running=1, max_waiting=8)``: at most ``max_running``
  generations compute at once (on a CPU, two at once are not faster than one
  after the other); up to ``max_waiting`` more wait in order; one more is
  refused at once with ``Busy`` (HTTP 429), never queued without bound.
* ``service.submit(start, estimate=...)`` returns a ``Job``.  A worker thread
  calls ``start()`` (an engine event iterator, e.g. ``engine.run(plan)``) when a
  slot is free and runs it step by step, buffering the events for the client.
* ``job.cancel()`` (or closing ``job.events()`` / ``job.aevents()``, which is what
  a cancelled Gradio event or a disconnected HTTP client does) stops the engine
  after the step in flight: the worker checks between steps and closes the
  engine's generator.  The slot is freed only then, so cancel-and-resubmit
  cannot run two generations at once.
* While waiting, ``events()`` yields ``QueueEvent``s: the position in the queue
  and the expected wait (from the engine's own time estimates, else the mean of
  the generations finished so far), for the progress area.

The worker is a thread of its own, not the client's: a client that stops
reading (a Gradio event cancelled while a step runs) cannot keep the slot.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import dataclasses
import itertools
import logging
import math
import threading
import time
from typing import Any, AsyncIterator, Callable, Generator, Iterable, Optional

from ..text.normalize import start_preload
from ..constants import SAMPLE_RATE
from ..errors import Busy
from ..runtime.memory import release_free_memory

log = logging.getLogger(__name__)

_END = object()


@dataclasses.dataclass
class QueueEvent:
    """The job is waiting: ``position`` 1 is next; ``expected_wait`` seconds (None when unknown)."""

    position: int
    expected_wait: Optional[float]
    kind: str = "queue"


@dataclasses.dataclass
class ServiceCounters:
    submitted: int = 0
    started: int = 0
    finished: int = 0        # ran to the end
    cancelled: int = 0       # cancelled while waiting or running
    failed: int = 0
    refused: int = 0         # Busy
    steps: int = 0           # engine events produced, all jobs
    steps_after_cancel: int = 0  # engine events that completed after their job's cancel (the step in flight)


class Job:
    """One submitted generation: its state, its buffered events, and its cancel switch."""

    def __init__(self, service: "EngineService", start: Callable[[], Iterable], estimate: Optional[float],
                 lock: Optional[threading.Lock], label: str):
        self.id = next(service._ids)
        self.service, self.label = service, label
        self.estimate = estimate
        self.state = "waiting"           # waiting | running | finished | cancelled | failed
        self.error: Optional[BaseException] = None
        self.submitted_at = time.monotonic()
        self.started_at: Optional[float] = None
        self.ended_at: Optional[float] = None
        self.steps_after_cancel = 0
        self.first_audio_at: Optional[float] = None   # when its first chunk of audio was decoded
        self.result_seconds = 0.0    # seconds of audio in its results (the whole, post-processed)
        self.chunk_seconds = 0.0     # seconds of audio in its chunks (what a run without a result made)
        self._start, self._lock = start, lock
        self._cancel = threading.Event()
        self._cond = threading.Condition()
        self._buffer: collections.deque = collections.deque()
        self._wakers: list[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = []

    # --- state -------------------------------------------------------------------------

    @property
    def done(self) -> bool:
        return self.state in ("finished", "cancelled", "failed")

    @property
    def audio_seconds(self) -> float:
        """Seconds of audio the job made: its results' (post-processed), else its decoded chunks'."""
        return self.result_seconds or self.chunk_seconds

    @property
    def cancel_requested(self) -> bool:
        return self._cancel.is_set()

    def position(self) -> int:
        """0 while running (or done), else the place in the queue (1 = next)."""
        return self.service._position(self)

    def expected_wait(self) -> Optional[float]:
        """Seconds until this job starts (0 when running); None when no estimate is possible yet."""
        return self.service._expected_wait(self)

    def cancel(self) -> None:
        """Stop the job: dropped from the queue now, or stopped by its worker after the step in flight."""
        if self.done:
            return
        self._cancel.set()
        self.service._cancel_waiting(self)

    def wait(self, timeout: Optional[float] = None) -> bool:
        """Block until the job has ended (its slot is free again); False on timeout."""
        with self._cond:
            return self._cond.wait_for(lambda: self.done, timeout)

    # --- reading the events ------------------------------------------------------------

    def events(self, poll: float = 0.5) -> Generator[Any, None, None]:
        """The job's events in order: ``QueueEvent``s while waiting, then the engine's events.

        Raises the engine's error if it failed.  Closing this generator early
        (``GeneratorExit``) cancels the job."""
        shown = None
        try:
            while True:
                with self._cond:
                    if not self._buffer and not self.done:
                        self._cond.wait(poll if self.state == "waiting" else None)
                    item = self._buffer.popleft() if self._buffer else None
                    state = self.state
                if item is not None:
                    if item is _END:
                        break
                    yield item
                elif state == "waiting" and self.position() > 0:
                    update = QueueEvent(self.position(), self.expected_wait())
                    if shown is None or (update.position, _rounded(update.expected_wait)) != shown:
                        shown = (update.position, _rounded(update.expected_wait))
                        yield update
            if self.state == "failed" and self.error is not None:
                raise self.error
        finally:
            if not self.done:
                self.cancel()

    async def aevents(self, poll: float = 0.5) -> AsyncIterator[Any]:
        """``events()`` for asyncio code (the HTTP API, async Gradio functions).

        Cancelling the awaiting task or closing the generator cancels the job."""
        loop = asyncio.get_running_loop()
        wake = asyncio.Event()
        with self._cond:
            self._wakers.append((loop, wake))
        shown = None
        try:
            while True:
                with self._cond:
                    item = self._buffer.popleft() if self._buffer else None
                    state = self.state
                    if item is None and not self.done:
                        wake.clear()
                if item is _END:
                    break
                if item is not None:
                    yield item
                    continue
                if state == "waiting" and self.position() > 0:
                    update = QueueEvent(self.position(), self.expected_wait())
                    if shown is None or (update.position, _rounded(update.expected_wait)) != shown:
                        shown = (update.position, _rounded(update.expected_wait))
                        yield update
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(wake.wait(), poll if state == "waiting" else None)
            if self.state == "failed" and self.error is not None:
                raise self.error
        finally:
            with self._cond:
                with contextlib.suppress(ValueError):
                    self._wakers.remove((loop, wake))
            if not self.done:
                self.cancel()

    def result(self) -> Any:
        """Run to the end and return the last engine event (the ``GenerationResult``); None if cancelled."""
        last = None
        for event in self.events():
            if getattr(event, "kind", None) != "queue":
                last = event
        return last if self.state == "finished" else None

    # --- used by the worker ------------------------------------------------------------

    def _push(self, item) -> None:
        with self._cond:
            # a step event only draws a picture: keep the newest one when the client is behind
            if (item is not _END and getattr(item, "kind", None) == "step" and self._buffer
                    and getattr(self._buffer[-1], "kind", None) == "step"):
                self._buffer[-1] = item
            else:
                self._buffer.append(item)
            self._cond.notify_all()
            wakers = list(self._wakers)
        for loop, wake in wakers:
            with contextlib.suppress(RuntimeError):  # the loop closed: nobody is listening
                loop.call_soon_threadsafe(wake.set)

    def _end(self, state: str, error: Optional[BaseException] = None) -> None:
        with self._cond:
            self.state, self.error = state, error
            self.ended_at = time.monotonic()
        self._push(_END)

    def _wake(self) -> None:
        """The queue moved: let a waiting reader report its new position."""
        with self._cond:
            self._cond.notify_all()
            wakers = list(self._wakers)
        for loop, wake in wakers:
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(wake.set)


class EngineService:
    """The bounded queue and the worker threads in front of the engine(s); see the module docstring."""

    def __init__(self, max_running: int = 1, max_waiting: int = 8):
        if max_running < 1 or max_waiting < 0:
            raise ValueError("max_running must be 1 or more and max_waiting 0 or more")
        self.max_running, self.max_waiting = int(max_running), int(max_waiting)
        self.counters = ServiceCounters()
        self._ids = itertools.count(1)
        self._lock = threading.Condition()
        self._waiting: collections.deque[Job] = collections.deque()
        self._running: list[Job] = []
        self._workers: list[threading.Thread] = []
        self._durations: collections.deque[float] = collections.deque(maxlen=20)
        #: called with each job when it ends (on its worker thread, after its state is set): the metrics
        self.listeners: list[Callable[[Job], None]] = []

    # --- submitting ---------------------------------------------------------------------

    def submit(self, start: Callable[[], Iterable], *, estimate: Optional[float] = None,
               lock: Optional[threading.Lock] = None, label: str = "") -> Job:
        """Queue a generation; ``Busy`` when ``max_waiting`` jobs wait already.

        ``start()`` is called on a worker thread when a slot is free and must return the
        engine's event iterator (validate the request before submitting).  ``lock``, when
        given, is held around each step (the model's lock, shared with codec calls)."""
        job = Job(self, start, estimate, lock, label)
        with self._lock:
            if len(self._running) + len(self._waiting) >= self.max_running + self.max_waiting:
                self.counters.refused += 1
                wait = self._wait_before(len(self._waiting))
                seconds = max(1, math.ceil(wait)) if wait else None   # the message's figure and Retry-After's
                raise Busy(f"The server is busy: {self.max_running + self.max_waiting} generation(s) are running "
                           f"or waiting, the most it takes. Try again"
                           f"{f' in about {seconds} s' if seconds else ' shortly'}.", retry_after=seconds)
            self.counters.submitted += 1
            self._waiting.append(job)
            self._ensure_workers()
            self._lock.notify_all()
        return job

    def stats(self) -> dict:
        """Counters and the queue's state (for /health and tests)."""
        with self._lock:
            return dict(dataclasses.asdict(self.counters), running=len(self._running), waiting=len(self._waiting),
                        max_running=self.max_running, max_waiting=self.max_waiting,
                        mean_seconds=self._mean_duration())

    def wait_idle(self, timeout: float) -> bool:
        """Block until nothing runs or waits; False on timeout."""
        with self._lock:
            return self._lock.wait_for(lambda: not self._running and not self._waiting, timeout)

    # --- queue arithmetic ------------------------------------------------------------------

    def _position(self, job: Job) -> int:
        """Jobs that start before ``job`` plus one; 0 when it runs or a slot is free for it now."""
        with self._lock:
            try:
                index = self._waiting.index(job)
            except ValueError:
                return 0
            return max(0, index + 1 - (self.max_running - len(self._running)))

    def _expected_wait(self, job: Job) -> Optional[float]:
        with self._lock:
            try:
                index = self._waiting.index(job)
            except ValueError:
                return 0.0
            return self._wait_before(index)

    def _wait_before(self, index: int) -> Optional[float]:
        """Seconds until the waiting job at ``index`` starts (lock held): remaining work spread over the slots."""
        mean = self._mean_duration()
        now = time.monotonic()
        remaining = []
        for job in self._running:
            seconds = job.estimate if job.estimate is not None else mean
            if seconds is None:
                return None
            remaining.append(max(0.0, seconds - (now - (job.started_at or now))))
        ahead = 0.0
        for job in list(self._waiting)[:index]:
            seconds = job.estimate if job.estimate is not None else mean
            if seconds is None:
                return None
            ahead += seconds
        slots = self.max_running
        free_now = max(0, slots - len(remaining))
        if index < free_now:
            return 0.0
        return (sum(remaining) + ahead) / slots

    def _mean_duration(self) -> Optional[float]:
        return sum(self._durations) / len(self._durations) if self._durations else None

    # --- the workers ------------------------------------------------------------------------

    def _ensure_workers(self) -> None:
        self._workers = [w for w in self._workers if w.is_alive()]
        while len(self._workers) < self.max_running:
            worker = threading.Thread(target=self._work, name=f"omnivoice-engine-{len(self._workers) + 1}",
                                      daemon=True)
            self._workers.append(worker)
            worker.start()

    def _cancel_waiting(self, job: Job) -> None:
        with self._lock:
            if job not in self._waiting:
                return
            self._waiting.remove(job)
            self.counters.cancelled += 1
            others = list(self._waiting)
            self._lock.notify_all()
        job._end("cancelled")
        for other in others:
            other._wake()

    def _work(self) -> None:
        while True:
            with self._lock:
                self._lock.wait_for(lambda: bool(self._waiting))
                job = self._waiting.popleft()
                self._running.append(job)
                job.state, job.started_at = "running", time.monotonic()
                self.counters.started += 1
                others = list(self._waiting)
            for other in others:
                other._wake()
            job._wake()
            state, error = self._run(job)
            with self._lock:
                self._running.remove(job)
                if state == "finished":
                    self.counters.finished += 1
                    self._durations.append(time.monotonic() - job.started_at)
                elif state == "cancelled":
                    self.counters.cancelled += 1
                else:
                    self.counters.failed += 1
                self._lock.notify_all()
                idle = not self._running
            job._end(state, error)
            for listener in list(self.listeners):
                try:
                    listener(job)
                except Exception:  # noqa: BLE001 - a listener (the metrics) must not stop the worker
                    log.warning("a queue listener failed", exc_info=True)
            if idle:  # what the job freed goes back to the system, not kept as a plateau (issue 21 item 10)
                release_free_memory()

    def _run(self, job: Job) -> tuple[str, Optional[BaseException]]:
        """Drive one job's engine iterator, a step at a time, until its end or its cancel."""
        stream = None
        try:
            if job.cancel_requested:
                return "cancelled", None
            stream = iter(job._start())
            while not job.cancel_requested:
                with job._lock if job._lock is not None else contextlib.nullcontext():
                    event = next(stream, _END)
                if event is _END:
                    return "finished", None
                with self._lock:
                    self.counters.steps += 1
                    if job.cancel_requested:
                        job.steps_after_cancel += 1
                        self.counters.steps_after_cancel += 1
                if not job.cancel_requested:
                    _measure(job, event)
                    job._push(event)
            return "cancelled", None
        except Exception as exc:  # handed to the job's reader, who maps it to a message
            if not isinstance(exc, (ValueError, OSError)) and not hasattr(exc, "param"):
                log.debug("generation %s failed", job.id, exc_info=True)
            return "failed", exc
        finally:
            if stream is not None and hasattr(stream, "close"):
                stream.close()  # the engine's generator: frees its buffers now


def _measure(job: Job, event) -> None:
    """The job's audio so far and the time of its first audio, from an engine event (for the metrics)."""
    kind = getattr(event, "kind", None)
    if kind == "chunk":
        if job.first_audio_at is None:
            job.first_audio_at = time.monotonic()
        job.chunk_seconds += len(getattr(event, "audio", ())) / SAMPLE_RATE   # ChunkEvent.audio: the codec's raw audio
    elif kind == "result":
        job.result_seconds += float(getattr(event, "duration", 0.0) or 0.0)


def _rounded(seconds: Optional[float]) -> Optional[int]:
    return None if seconds is None else int(round(seconds))


def add_queue_arguments(group) -> None:
    """``--max-queue`` and ``--max-running`` (read by ``service_from_arguments``) on a parser or argument group."""
    group.add_argument("--max-queue", type=int, default=8,
                       help="generations that may wait for the engine; one more is refused as busy (default 8)")
    group.add_argument("--max-running", type=int, default=1,
                       help="generations computed at once (default 1: a CPU is not faster with two)")


def service_from_arguments(args) -> EngineService:
    """The service of a command line's ``--max-queue`` and ``--max-running`` (a server's: where normalisation is
    on, its grammars start building in the background now, ``text.normalize.start_preload``)."""
    if args.max_queue < 0 or args.max_running < 1:
        raise SystemExit("error: --max-queue must be 0 or more and --max-running 1 or more")
    start_preload()   # a server: the normaliser's grammars are built now, not by its first request (issue 42)
    return EngineService(max_running=args.max_running, max_waiting=args.max_queue)
