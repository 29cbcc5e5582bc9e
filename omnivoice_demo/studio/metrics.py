"""What a server measures, in Prometheus' text format (``GET /metrics``, through ``prometheus_client``).

One ``ServerMetrics`` per server process, over its ``EngineService`` and ``ModelManager``, with a registry of
its own (not the library's global one, so two servers in one process, as in the tests, keep their counts
apart).  Every series is prefixed ``omnivoice_``:

* ``omnivoice_requests_total{route, method, status}``: HTTP API requests answered, by the route's template
  (``/v1/audio/voices/{voice_id}``, never the id itself: the label's values stay bounded);
* ``omnivoice_queue_waiting``, ``omnivoice_queue_running``, ``omnivoice_queue_capacity``: the queue now (what
  an autoscaler reads as pending work), and ``omnivoice_queue_jobs_total{outcome}`` (finished, cancelled,
  failed, refused: the queue's own counters);
* ``omnivoice_generation_seconds``: a generation's compute time, from its start on a worker to its end;
* ``omnivoice_queue_wait_seconds``: its time in the queue before that;
* ``omnivoice_audio_seconds``: seconds of speech one generation made (its ``_sum``: all the speech made);
* ``omnivoice_first_audio_seconds``: from submitting a generation to its first decoded audio (a streamed
  answer's first sound, the queue included);
* ``omnivoice_model_load_seconds``: how long the active model took to load; ``omnivoice_model_ready``: 1 when a
  model serves requests (what ``/ready`` answers).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterator

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

if TYPE_CHECKING:
    from .models import ModelManager
    from .service import EngineService, Job

#: the text format's media type (``prometheus_client.CONTENT_TYPE_LATEST``)
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
PREFIX = "omnivoice_"
#: seconds: from a one-step test request on the tiny model to a paragraph at the Reference preset on 2 cores
SECONDS_BUCKETS = (0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 40.0, 80.0, 160.0, 320.0, 640.0)


class _Now(Collector):
    """The queue and the model as they are when scraped (read from the service and the manager, not copied)."""

    def __init__(self, service: "EngineService", models: "ModelManager"):
        self.service, self.models = service, models

    def collect(self) -> Iterator:
        stats = self.service.stats()
        yield GaugeMetricFamily(PREFIX + "queue_waiting", "Generations waiting for the engine.",
                                value=stats["waiting"])
        yield GaugeMetricFamily(PREFIX + "queue_running", "Generations computing now (in flight).",
                                value=stats["running"])
        yield GaugeMetricFamily(PREFIX + "queue_capacity", "Generations the queue takes at once (running and "
                                "waiting); one more is refused as busy.",
                                value=stats["max_running"] + stats["max_waiting"])
        jobs = CounterMetricFamily(PREFIX + "queue_jobs", "Generations by how they ended (refused: the queue "
                                   "was full).", labels=["outcome"])
        for outcome in ("finished", "cancelled", "failed", "refused"):
            jobs.add_metric([outcome], stats[outcome])
        yield jobs
        try:
            loaded = self.models.get()
        except Exception:  # noqa: BLE001 - no model is a value here (0), not an error
            loaded = None
        yield GaugeMetricFamily(PREFIX + "model_ready", "1 when a model is loaded and serves requests.",
                                value=1 if loaded is not None else 0)
        if loaded is not None:
            yield GaugeMetricFamily(PREFIX + "model_load_seconds", "Seconds the active model took to load "
                                    "(resolve, build, open the sessions).", value=loaded.load_seconds)


class ServerMetrics:
    """The counters and histograms of one server; ``text()`` is the scrape's answer."""

    def __init__(self, service: "EngineService", models: "ModelManager"):
        self.registry = CollectorRegistry(auto_describe=True)
        self.requests = Counter(PREFIX + "requests", "HTTP API requests answered, by route template and status.",
                                ["route", "method", "status"], registry=self.registry)
        self.generation = Histogram(PREFIX + "generation_seconds", "Seconds a generation computed (its start on "
                                    "a worker to its end).", ["outcome"], buckets=SECONDS_BUCKETS,
                                    registry=self.registry)
        self.waited = Histogram(PREFIX + "queue_wait_seconds", "Seconds a generation waited in the queue.",
                                buckets=SECONDS_BUCKETS, registry=self.registry)
        self.first_audio = Histogram(PREFIX + "first_audio_seconds", "Seconds from submitting a generation to "
                                     "its first decoded audio.", buckets=SECONDS_BUCKETS, registry=self.registry)
        self.audio = Histogram(PREFIX + "audio_seconds", "Seconds of speech one generation made.",
                               buckets=SECONDS_BUCKETS, registry=self.registry)
        self.registry.register(_Now(service, models))
        service.listeners.append(self.job_ended)

    def job_ended(self, job: "Job") -> None:
        """A generation ended (``EngineService.listeners``): its times and its audio."""
        if job.started_at is not None:
            self.waited.observe(job.started_at - job.submitted_at)
            if job.ended_at is not None:
                self.generation.labels(outcome=job.state).observe(job.ended_at - job.started_at)
        if job.first_audio_at is not None:
            self.first_audio.observe(job.first_audio_at - job.submitted_at)
        seconds = job.audio_seconds
        if seconds > 0:
            self.audio.observe(seconds)

    def request(self, route: str, method: str, status: int) -> None:
        self.requests.labels(route=route, method=method, status=str(status)).inc()

    def text(self) -> bytes:
        return generate_latest(self.registry)
