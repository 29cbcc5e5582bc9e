"""EngineService: the bounded queue, one generation at a time, cancel stops between steps (no model needed)."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from omnivoice_demo.errors import Busy
from omnivoice_demo.studio.service import EngineService, QueueEvent


class Step:
    kind = "step"

    def __init__(self, index):
        self.index = index


class Result:
    kind = "result"


class FakeEngine:
    """A generation of ``steps`` steps that each wait for ``release`` (or ``delay``); records who runs when."""

    def __init__(self):
        self.lock = threading.Lock()
        self.active = 0
        self.most_active = 0
        self.steps_run = 0
        self.closed = 0

    def run(self, steps=5, delay=0.02, gate: threading.Event | None = None,
            permits: threading.Semaphore | None = None):
        with self.lock:
            self.active += 1
            self.most_active = max(self.most_active, self.active)
        try:
            for index in range(steps):
                if permits is not None:
                    assert permits.acquire(timeout=5)
                elif gate is not None:
                    gate.wait(5)
                else:
                    time.sleep(delay)
                with self.lock:
                    self.steps_run += 1
                yield Step(index)
            yield Result()
        finally:
            with self.lock:
                self.active -= 1
                self.closed += 1


def test_runs_to_the_end_and_counts():
    service, engine = EngineService(), FakeEngine()
    job = service.submit(lambda: engine.run(steps=3), estimate=0.1)
    assert isinstance(job.result(), Result)
    assert job.state == "finished" and engine.closed == 1
    stats = service.stats()
    assert stats["finished"] == 1 and stats["steps"] == 4 and stats["running"] == 0


def test_queue_is_bounded_and_busy_is_refused_at_once():
    service, engine = EngineService(max_running=1, max_waiting=2), FakeEngine()
    gate = threading.Event()
    jobs = [service.submit(lambda: engine.run(steps=2, gate=gate), estimate=10.0) for _ in range(3)]
    with pytest.raises(Busy, match="busy"):
        service.submit(lambda: engine.run())
    assert service.stats()["refused"] == 1
    assert [job.position() for job in jobs] == [0, 1, 2]
    assert jobs[2].expected_wait() == pytest.approx(20.0, abs=0.5)  # one running (10 s) and one waiting ahead
    gate.set()
    for job in jobs:
        assert isinstance(job.result(), Result)
    assert engine.most_active == 1


def test_a_busy_answer_says_one_wait_in_its_message_and_its_retry_after():
    """Issue 49: with 20 heavy requests in flight the 429's Retry-After said 5 s while its message said about
    1293 s.  The refusal carries the figure its message names, and the HTTP API's Retry-After is that figure."""
    from omnivoice_demo.api.openai_errors import api_error

    service, engine = EngineService(max_running=1, max_waiting=1), FakeEngine()
    gate = threading.Event()
    jobs = [service.submit(lambda: engine.run(steps=1, gate=gate), estimate=646.0) for _ in range(2)]
    with pytest.raises(Busy) as refused:
        service.submit(lambda: engine.run())
    seconds = refused.value.retry_after   # 1292 s less the moment since the first started, rounded up
    assert 1290 <= seconds <= 1292 and f"in about {seconds} s" in str(refused.value)
    answer = api_error(refused.value)
    assert answer.status == 429 and answer.headers["Retry-After"] == str(seconds)
    shortly = api_error(Busy("The server is busy. Try again shortly."))   # no estimate: a short wait, said so
    assert shortly.headers["Retry-After"] == "5"
    gate.set()
    for job in jobs:
        job.result()


def test_waiting_reader_sees_its_position_then_the_steps():
    service, engine = EngineService(max_running=1, max_waiting=4), FakeEngine()
    gate = threading.Event()
    first = service.submit(lambda: engine.run(steps=2, gate=gate), estimate=3.0)
    second = service.submit(lambda: engine.run(steps=2), estimate=1.0)
    events = second.events(poll=0.05)
    head = next(events)
    assert isinstance(head, QueueEvent) and head.position == 1 and head.expected_wait == pytest.approx(3, abs=0.5)
    gate.set()
    rest = list(events)
    assert [e.kind for e in rest if e.kind != "queue"][-1] == "result"
    assert first.wait(5) and second.state == "finished"


def test_cancel_while_running_stops_after_the_step_in_flight_and_frees_the_slot():
    service, engine = EngineService(max_running=1, max_waiting=4), FakeEngine()
    permits = threading.Semaphore(0)
    job = service.submit(lambda: engine.run(steps=1000, permits=permits))
    events = job.events()
    permits.release()
    assert next(events).kind == "step"  # running: one step arrived, the next one waits for a permit
    events.close()                      # the client goes away (what Gradio does on cancel)
    assert job.cancel_requested and not job.done
    permits.release(10)                 # the step in flight finishes; no other starts
    assert job.wait(5) and job.state == "cancelled"
    assert engine.closed == 1 and engine.steps_run == 2
    assert job.steps_after_cancel == 1
    assert service.stats()["running"] == 0


def test_cancel_and_resubmit_never_runs_two_at_once():
    service, engine = EngineService(max_running=1, max_waiting=8), FakeEngine()
    for _ in range(4):
        job = service.submit(lambda: engine.run(steps=50, delay=0.01))
        events = job.events()
        next(events)
        events.close()                 # cancelled; the next submit must wait for the step in flight
    last = service.submit(lambda: engine.run(steps=3, delay=0.0))
    assert isinstance(last.result(), Result)
    assert engine.most_active == 1
    assert service.stats()["cancelled"] == 4


def test_cancel_while_waiting_leaves_the_queue_at_once():
    service, engine = EngineService(max_running=1, max_waiting=4), FakeEngine()
    gate = threading.Event()
    running = service.submit(lambda: engine.run(steps=1, gate=gate))
    waiting = service.submit(lambda: engine.run(steps=1))
    third = service.submit(lambda: engine.run(steps=1))
    waiting.cancel()
    assert waiting.state == "cancelled" and third.position() == 1
    gate.set()
    assert running.wait(5) and third.wait(5)
    assert engine.closed == 2  # the cancelled job never started


def test_an_engine_error_reaches_the_reader():
    service = EngineService()

    def failing():
        yield Step(0)
        raise ValueError("bad request found late")

    job = service.submit(failing)
    with pytest.raises(ValueError, match="found late"):
        list(job.events())
    assert job.state == "failed" and service.stats()["failed"] == 1


def test_async_reader_cancelled_cancels_the_job():
    service, engine = EngineService(), FakeEngine()
    job = service.submit(lambda: engine.run(steps=1000, delay=0.01))

    async def read():
        async for _ in job.aevents():
            pass

    async def main():
        task = asyncio.create_task(read())
        while service.stats()["steps"] < 3:
            await asyncio.sleep(0.01)
        task.cancel()                  # what Gradio does to an async endpoint on job.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert job.wait(5) and job.state == "cancelled" and engine.steps_run < 1000
    assert job.steps_after_cancel <= 1


def test_async_reader_gets_everything():
    service, engine = EngineService(), FakeEngine()
    job = service.submit(lambda: engine.run(steps=3, delay=0.0))

    async def read():
        return [event.kind async for event in job.aevents()]

    kinds = asyncio.run(read())
    assert kinds[-1] == "result" and job.state == "finished"
