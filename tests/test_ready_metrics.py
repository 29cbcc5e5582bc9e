"""``/ready`` (readiness) and ``/metrics`` (Prometheus) of the HTTP API, issue 52.

In process: a model load held back (its resolve waits on an event) shows the ready transition: 503 with
``Retry-After`` while loading (``/health`` answers 200 all along: liveness), 200 once loaded; then one
generation and the series it leaves, each prefixed ``omnivoice_``.  A subprocess: ``omnivoice serve`` opens its
port before the model is loaded and a load that fails stops it with one line."""

from __future__ import annotations

import threading

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from omnivoice_demo.api.routes import ApiContext, build_router
from omnivoice_demo.studio import EngineService, ModelManager, VoiceLibrary


def samples(text: str) -> dict:
    """``{(name, labels as a sorted tuple): value}`` of a scrape."""
    found = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


def value(found: dict, name: str, **labels) -> float:
    return found.get((name, tuple(sorted(labels.items()))), 0.0)


@pytest.fixture
def held_load(tiny_fp32_folder, tmp_path, monkeypatch):
    """A manager loading the tiny model, whose resolve waits until ``release`` is set."""
    from omnivoice_demo import hub

    release = threading.Event()
    real = hub.resolve_model

    def slow_resolve(*args, **kwargs):
        assert release.wait(60), "the test never released the load"
        return real(*args, **kwargs)

    monkeypatch.setattr(hub, "resolve_model", slow_resolve)
    models = ModelManager(cache_dir=tmp_path / "cache", offline=True)
    context = ApiContext(models=models, voices=VoiceLibrary(tmp_path / "voices"), service=EngineService())
    app = FastAPI()
    app.include_router(build_router(context))
    models.start_load(str(tiny_fp32_folder), "fp32", by_operator=True)
    yield TestClient(app), models, release
    release.set()
    models.wait(60)


def test_ready_is_503_with_retry_after_while_the_model_loads_then_200(held_load):
    client, models, release = held_load
    waiting = client.get("/ready")
    assert waiting.status_code == 503 and waiting.headers["Retry-After"] == "5"
    assert waiting.json()["status"] == "loading"
    alive = client.get("/health")
    assert alive.status_code == 200 and alive.json()["status"] == "loading"   # liveness, not readiness
    speech = client.post("/v1/audio/speech", json={"input": "Hello.", "voice": "auto", "response_format": "wav",
                                                   "stream": False, "steps": 1})
    assert speech.status_code == 503 and speech.json()["error"]["code"] == "model_not_ready"
    assert value(samples(client.get("/metrics").text), "omnivoice_model_ready") == 0
    release.set()
    models.wait(120)
    ready = client.get("/ready")
    assert ready.status_code == 200 and ready.json()["status"] == "ready", ready.text
    assert "Retry-After" not in ready.headers


def test_metrics_count_requests_queue_generation_audio_first_audio_and_load(held_load):
    client, models, release = held_load
    assert client.post("/v1/audio/speech", json={"input": "Hello.", "voice": "auto"}).status_code == 503
    release.set()
    models.wait(120)
    for stream in (False, True):
        spoken = client.post("/v1/audio/speech", json={"input": "Hello there.", "voice": "auto",
                                                       "response_format": "pcm", "stream": stream, "steps": 1,
                                                       "seed": 1})
        assert spoken.status_code == 200 and len(spoken.content) > 0, spoken.text
    assert client.get("/v1/audio/voices/nobody").status_code == 404
    scrape = client.get("/metrics")
    assert scrape.status_code == 200 and scrape.headers["content-type"].startswith("text/plain")
    found = samples(scrape.text)
    assert found and all(name.startswith("omnivoice_") for name, _ in found), sorted({n for n, _ in found})
    speech = "/v1/audio/speech"
    assert value(found, "omnivoice_requests_total", route=speech, method="POST", status="503") == 1
    assert value(found, "omnivoice_requests_total", route=speech, method="POST", status="200") == 2
    # by the route's template, not the id asked for: the labels stay bounded
    assert value(found, "omnivoice_requests_total", route="/v1/audio/voices/{voice_id}", method="GET",
                 status="404") == 1
    assert value(found, "omnivoice_generation_seconds_count", outcome="finished") == 2
    assert value(found, "omnivoice_generation_seconds_sum", outcome="finished") > 0
    assert value(found, "omnivoice_first_audio_seconds_count") == 2
    assert value(found, "omnivoice_queue_wait_seconds_count") == 2
    assert value(found, "omnivoice_audio_seconds_count") == 2 and value(found, "omnivoice_audio_seconds_sum") > 0
    assert value(found, "omnivoice_queue_jobs_total", outcome="finished") == 2
    assert value(found, "omnivoice_queue_waiting") == 0 and value(found, "omnivoice_queue_running") == 0
    assert value(found, "omnivoice_queue_capacity") == 1 + 8
    assert value(found, "omnivoice_model_ready") == 1 and value(found, "omnivoice_model_load_seconds") > 0


def test_queue_depth_and_in_flight_are_read_when_scraped(tmp_path):
    """A job held on the worker and one behind it: running 1, waiting 1 at the scrape."""
    service = EngineService(max_running=1, max_waiting=2)
    context = ApiContext(models=ModelManager(), voices=VoiceLibrary(tmp_path), service=service)
    app = FastAPI()
    app.include_router(build_router(context))
    client = TestClient(app)
    gate = threading.Event()

    def held():
        gate.wait(30)
        yield from ()

    first, second = service.submit(held), service.submit(held)
    try:
        deadline = threading.Event()
        for _ in range(100):
            if service.stats()["running"] == 1:
                break
            deadline.wait(0.05)
        found = samples(client.get("/metrics").text)
        assert value(found, "omnivoice_queue_running") == 1 and value(found, "omnivoice_queue_waiting") == 1
    finally:
        gate.set()
        first.wait(30)
        second.wait(30)
    found = samples(client.get("/metrics").text)
    assert value(found, "omnivoice_queue_running") == 0 and value(found, "omnivoice_queue_jobs_total",
                                                                    outcome="finished") == 2


def test_a_failed_load_is_not_ready_and_says_why(tmp_path):
    models = ModelManager(cache_dir=tmp_path / "cache", offline=True)
    context = ApiContext(models=models, voices=VoiceLibrary(tmp_path / "voices"), service=EngineService())
    app = FastAPI()
    app.include_router(build_router(context))
    models.start_load(str(tmp_path / "no-such-folder"), by_operator=True)
    models.wait(60)
    answer = TestClient(app).get("/ready")
    assert answer.status_code == 503 and answer.headers["Retry-After"] == "30"
    assert answer.json()["status"] == "error" and "no-such-folder" in answer.json()["message"]
