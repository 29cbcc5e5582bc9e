"""The Benchmark tab's runs (the benchmark, and quality against the exact model) go through the one queue:
each waits its turn, a full queue is ``Busy``, and a cancelled run stops within a step and frees the model.

The engine runs the tiny fp32 folder in process, behind a queue of 1 running and 2 waiting.
"""

from __future__ import annotations

import pytest



@pytest.fixture
def studio(engine, tmp_path):
    from omnivoice_demo.studio import EngineService, ModelManager, Studio, VoiceLibrary

    models = ModelManager()
    models.add(engine, label="tiny")
    return Studio(models=models, voices=VoiceLibrary(tmp_path / "voices"), out_dir=tmp_path / "out",
                  service=EngineService(max_running=1, max_waiting=2))


# --- the benchmark ----------------------------------------------------------------------------------------

def test_a_cancelled_benchmark_stops_within_a_step_and_frees_the_model(studio):
    from omnivoice_demo.ui.tabs.benchmark import benchmark_updates

    updates = benchmark_updates(studio, [], "long", 64, 10)   # many minutes if it ran to the end
    seen = [next(updates) for _ in range(3)]                  # queued and running: steps go by
    assert studio.service.stats()["running"] == 1, seen
    updates.close()                                           # the visitor cancels (or goes away)
    assert studio.service.wait_idle(timeout=30)
    stats = studio.service.stats()
    assert stats["cancelled"] == 1 and stats["steps_after_cancel"] <= 1, stats
    assert_the_model_is_free(studio)


def assert_the_model_is_free(studio):
    """Nobody holds the active model's lock, and the next job in the queue runs to its end."""
    loaded = studio.models.get()
    assert loaded.lock.acquire(timeout=1)
    loaded.lock.release()
    job = studio.service.submit(lambda: loaded.engine.stream("Next.", num_step=1), label="next")
    assert job.wait(timeout=60) and job.state == "finished"


def test_a_benchmark_waits_its_turn_in_the_queue(studio):
    from omnivoice_demo.errors import Busy
    from omnivoice_demo.ui.tabs.benchmark import benchmark_updates

    running = [benchmark_updates(studio, [], "long", 64, 10) for _ in range(3)]
    for updates in running:
        next(updates)
    try:
        with pytest.raises(Busy):
            next(benchmark_updates(studio, [], "short", 1, 1))    # 1 running + 2 waiting is the most
    finally:
        for updates in running:
            updates.close()
    assert studio.service.wait_idle(timeout=30)


# --- quality against the exact model ----------------------------------------------------------------------

def test_a_cancelled_quality_run_stops_within_a_step_and_frees_the_model(studio, tmp_path, monkeypatch):
    """The Benchmark tab's "quality against the exact model" goes through the same queue."""
    import tempfile

    from omnivoice_demo.eval.quick import QualityProgress
    from omnivoice_demo.ui.tabs.benchmark import quality_updates

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    updates = quality_updates(studio, [], ["balanced", "fast", "streaming"], 5, False)  # 20 generations
    seen = [next(updates) for _ in range(3)]                  # running: a generation starts, steps go by
    assert studio.service.stats()["running"] == 1, seen
    assert all(isinstance(update, QualityProgress) for update in seen)
    assert seen[0].message == "Generating exact en-weather" and seen[-1].message.endswith("of 32"), seen
    assert list((tmp_path / "tmp").iterdir())                 # the run's folder
    updates.close()                                           # the visitor cancels (or goes away)
    assert studio.service.wait_idle(timeout=30)
    stats = studio.service.stats()
    assert stats["cancelled"] == 1 and stats["steps_after_cancel"] <= 1, stats
    assert not list((tmp_path / "tmp").iterdir())             # and it is gone
    assert_the_model_is_free(studio)


def test_a_quality_run_waits_its_turn_in_the_queue(studio):
    from omnivoice_demo.errors import Busy
    from omnivoice_demo.ui.tabs.benchmark import quality_updates

    running = [quality_updates(studio, [], ["balanced", "fast", "streaming"], 5, False) for _ in range(3)]
    first = [next(updates) for updates in running]
    try:
        assert [update.message for update in first[1:]] == ["Waiting: 1 in the queue", "Waiting: 2 in the queue"]
        with pytest.raises(Busy):
            next(quality_updates(studio, [], ["fast"], 1, False))  # 1 running + 2 waiting is the most
    finally:
        for updates in running:
            updates.close()
    assert studio.service.wait_idle(timeout=30)
    assert studio.service.stats()["cancelled"] == 3
