"""The time estimates (and so the queue's expected wait) count the sentence check's takes.

Before any checked run a chunk counts ``guard_tries`` takes (the upper bound); after checked runs, the
takes expected from the share of takes that failed; a checked run's own timings are divided by the takes
it ran, so the stage rates stay per take; the recogniser's time is learnt as the ``check`` stage.
"""

from __future__ import annotations

import threading

import pytest

from omnivoice_demo.engine.estimate import PipelineEstimator
from omnivoice_demo.engine.work import RATE_STAGES, ChunkWork, PlanWork
from omnivoice_demo.engine.guard import ChunkCheck, Take
from omnivoice_demo.studio import EngineService


def estimator() -> PipelineEstimator:
    fitted = PipelineEstimator()
    fitted.rates = dict.fromkeys(RATE_STAGES, 0.01)
    for positions, seconds in ((10, 0.1), (40, 0.4)):
        fitted.observe_forward(positions, seconds)
    return fitted


def work(guard_tries: int = 0, takes=None) -> PlanWork:
    return PlanWork(chunks=[ChunkWork(prefix=30, frames=10, schedule=[40, 40], uncond=[True, True], takes=takes)],
                    guided=True, guard_tries=guard_tries)


def check(takes: int, passed: bool) -> ChunkCheck:
    return ChunkCheck(chunk=0, text="a", takes=tuple(Take(n, None, 0.0, "a", ()) for n in range(1, takes + 1)),
                      kept=1, passed=passed)


def test_before_any_checked_run_each_chunk_counts_guard_tries_takes():
    fitted = estimator()
    plain = fitted.estimate(work()).total
    once = plain - fitted.rates["prompt"] - fitted.rates["postprocess"] * 10   # one take of the chunk
    assert fitted.expected_takes(3) == 3
    assert fitted.estimate(work(3)).total == pytest.approx(plain + 2 * once)
    assert fitted.estimate(work(1)).total == pytest.approx(plain)                # one take: no retry to count
    marks = fitted.estimate(work(3)).marks                                         # the chunk ends after its takes
    assert marks[(0, 3)] == pytest.approx(fitted.rates["prompt"] + 3 * once)


def test_the_expected_takes_are_learnt_from_the_checks():
    fitted = estimator()
    plain = fitted.estimate(work()).total
    fitted.observe_checks([check(1, True)] * 4)          # every chunk passed at once
    assert fitted.failing_share == 0 and fitted.estimate(work(3)).total == pytest.approx(plain)
    fitted.observe_checks([check(3, False)] * 2)         # every take failed: half way to a share of 1
    assert fitted.failing_share == pytest.approx(0.5)
    assert fitted.expected_takes(3) == pytest.approx(1 + 0.5 + 0.25)
    assert fitted.expected_takes(8) < 2 < fitted.expected_takes(8) + 0.01   # bounded below the 8 tries
    once = plain - fitted.rates["prompt"] - fitted.rates["postprocess"] * 10
    assert fitted.estimate(work(3)).total == pytest.approx(plain + 0.75 * once)


def test_a_checked_runs_timings_are_per_take_and_its_transcriptions_are_learnt():
    fitted = estimator()
    before = dict(fitted.rates)
    per_take = {stage: before[stage] * units for stage, units in work().units().items()}
    # a run whose chunk took 3 takes: each stage took 3 times one take's time (postprocess and prompt once)
    seconds = {stage: value * (1 if stage in ("prompt", "postprocess") else 3) for stage, value in per_take.items()}
    fitted.observe_run(work(3, takes=3), dict(seconds, check=0.3))
    for stage in RATE_STAGES:
        assert fitted.rates[stage] == pytest.approx(before[stage]), stage
    assert fitted.rates["check"] == pytest.approx(0.3 / (10 * 3))                 # seconds per frame of a take
    fitted.observe_checks([check(1, True)])
    assert fitted.estimate(work(3)).stages["check"] == pytest.approx(0.01 * 10)


def test_the_queue_waits_for_a_checked_jobs_takes(engine, monkeypatch):
    """The studio's queue takes each job's estimate from the engine: a checked request's counts its takes."""
    monkeypatch.setattr("omnivoice_demo.engine.planner.require_recognizer", lambda recognizer: None)
    fitted = estimator()
    monkeypatch.setattr(engine, "estimator", fitted)
    text = "A sentence to wait for in the queue."
    plain = engine.estimate_seconds(engine.prepare(text, num_step=4, seed=1))
    checked = engine.estimate_seconds(engine.prepare(text, num_step=4, seed=1, guard=True, guard_tries=4))
    assert checked > 3 * plain

    service = EngineService(max_running=1, max_waiting=2)
    release = threading.Event()

    def blocked():
        release.wait(30)
        return iter(())

    running = service.submit(blocked, estimate=checked)
    waiting = service.submit(lambda: iter(()), estimate=plain)
    try:
        assert waiting.expected_wait() == pytest.approx(checked, rel=0.05)
    finally:
        release.set()
        assert running.wait(30) and waiting.wait(30)
