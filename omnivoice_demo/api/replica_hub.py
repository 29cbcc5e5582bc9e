"""What ``serve --replicas`` answers for all replicas at once: ``/metrics`` as totals, ``/health`` and ``/ready``.

Each replica reports to one ``ReplicaHub`` (a Ray actor of the command, no CPU reserved) every
``REPORT_PERIOD_S``: its ``/health`` answer and its metrics (``ServerMetrics``' families as plain data).  Serve's
proxy answers the probes from the hub (``replica_proxy``), so a scrape of the documented target reads:

* counters and histograms: the sums over every replica this command has run, a dead replica's last report
  included, so they never go down when a replica dies or Serve replaces it (a replica's report is at most
  ``REPORT_PERIOD_S`` old);
* gauges: the sums over the replicas that reported in the last ``LIVE_S`` (the queue's waiting, running and
  capacity: the deployment's), except ``omnivoice_model_ready`` and ``omnivoice_model_load_seconds`` (the
  largest: 1 when a replica serves requests); ``omnivoice_replicas`` counts the replicas that reported.

The hub is plain Python (tested without Ray); ``replicas`` makes it a Ray actor.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from typing import Any, Callable, Optional

log = logging.getLogger(__name__)

#: seconds between a replica's reports; a replica that has not reported for LIVE_S is not counted in the gauges,
#: and one silent for RETIRE_S is folded into the totals of the replicas gone (its counters stay)
REPORT_PERIOD_S, LIVE_S, RETIRE_S = 1.0, 5.0, 120.0
#: gauges that are the largest over the replicas, not their sum
LARGEST = frozenset({"omnivoice_model_ready", "omnivoice_model_load_seconds"})
REPLICAS_GAUGE = "omnivoice_replicas"

#: one family as plain data: (name, type, help, [(sample name, ((label, value), ...), value), ...])
Family = tuple
Key = tuple   # (family name, sample name, labels)


def families_of(registry) -> list[Family]:
    """A ``prometheus_client`` registry's families now, as plain data (what pickles across Ray)."""
    return [(metric.name, metric.type, metric.documentation,
             [(sample.name, tuple(sorted(sample.labels.items())), float(sample.value)) for sample in metric.samples])
            for metric in registry.collect()]


@dataclasses.dataclass
class _Report:
    seq: int
    at: float
    health: dict
    families: list


class ReplicaHub:
    """The replicas' last reports, and their totals (``view``)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic):
        self.clock = clock
        self.reports: dict[str, _Report] = {}
        self.retired: dict[Key, float] = {}   # the counters of replicas gone (folded after RETIRE_S)
        self.retired_ids: set[str] = set()
        self.described: dict[str, tuple[str, str]] = {}   # family name -> (type, help), in first-seen order

    def report(self, replica: str, seq: int, health: dict, families: list) -> None:
        """A replica's state now; an older report than one already kept (``seq``) or a retired replica's is ignored."""
        self._retire(self.clock())
        if replica in self.retired_ids:
            return
        kept = self.reports.get(replica)
        if kept is None or seq > kept.seq:
            self.reports[replica] = _Report(seq, self.clock(), health, families)

    def _retire(self, now: float) -> None:
        for replica, report in list(self.reports.items()):
            if now - report.at > RETIRE_S:
                for key, value in _cumulative(report.families):
                    self.retired[key] = _fold(key, self.retired.get(key), value)
                self.retired_ids.add(replica)
                del self.reports[replica]

    def view(self) -> dict:
        """``{"live": [each live replica's /health answer], "families": the totals as plain data}``."""
        now = self.clock()
        self._retire(now)
        live = {replica: report for replica, report in self.reports.items() if now - report.at <= LIVE_S}
        totals: dict[Key, float] = dict(self.retired)
        for report in self.reports.values():
            for key, value in _cumulative(report.families):
                totals[key] = _fold(key, totals.get(key), value)
        gauges: dict[Key, float] = {}
        for report in live.values():
            for name, kind, _help, samples in report.families:
                if kind != "gauge":
                    continue
                for sample, labels, value in samples:
                    key = (name, sample, labels)
                    gauges[key] = value if key not in gauges else (
                        max(gauges[key], value) if name in LARGEST else gauges[key] + value)
        for report in self.reports.values():
            for name, kind, help_text, _samples in report.families:
                self.described.setdefault(name, (kind, help_text))
        families = []
        for name, (kind, help_text) in self.described.items():
            values = gauges if kind == "gauge" else totals
            samples = [(sample, labels, value) for (family, sample, labels), value in values.items() if family == name]
            if samples:
                families.append((name, kind, help_text, samples))
        families.append((REPLICAS_GAUGE, "gauge", f"Replicas that reported in the last {LIVE_S:g} s.",
                         [(REPLICAS_GAUGE, (), float(len(live)))]))
        ordered = sorted(live.items(), key=lambda item: item[0])
        return {"live": [dict(report.health, replica=dict(report.health.get("replica") or {}, id=replica))
                         for replica, report in ordered],
                "families": families}


def _cumulative(families: list):
    """(key, value) of a report's counter and histogram samples (what only rises), gauges left out."""
    for name, kind, _help, samples in families:
        if kind == "gauge":
            continue
        for sample, labels, value in samples:
            yield (name, sample, labels), value


def _fold(key: Key, total: Optional[float], value: float) -> float:
    """Sum, except a ``_created`` sample (a time): the earliest."""
    if total is None:
        return value
    return min(total, value) if key[1].endswith("_created") else total + value


def metrics_text(families: list) -> bytes:
    """The totals (``ReplicaHub.view()["families"]``) in Prometheus' text format, through ``prometheus_client``."""
    from prometheus_client import CollectorRegistry, generate_latest
    from prometheus_client.metrics_core import Metric

    class _Totals:
        def collect(self):
            for name, kind, help_text, samples in families:
                metric = Metric(name, help_text, kind)
                for sample, labels, value in samples:
                    metric.add_sample(sample, dict(labels), value)
                yield metric

    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Totals())
    return generate_latest(registry)


class Reporter:
    """A replica's thread that reports to the hub every ``REPORT_PERIOD_S`` (``health()``, ``registry``)."""

    def __init__(self, hub: Any, replica: str, health: Callable[[], dict], registry,
                 period: float = REPORT_PERIOD_S):
        self.hub, self.replica, self.health, self.registry, self.period = hub, replica, health, registry, period
        self.seq = 0
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._run, name="omnivoice-replica-reporter", daemon=True)

    def start(self) -> "Reporter":
        self.thread.start()
        return self

    def report_once(self) -> None:
        self.seq += 1
        ref = self.hub.report.remote(self.replica, self.seq, self.health(), families_of(self.registry))
        ref.future().result(timeout=30)   # (not ray.get: this runs beside Serve's asyncio replica, ray.get warns)

    def _run(self) -> None:
        warned = False
        while True:
            try:
                self.report_once()
                warned = False
            except Exception as exc:  # noqa: BLE001 - the hub gone or slow: the next period tries again
                if not warned:
                    log.warning("replica %s could not report to the replicas' hub: %s", self.replica, exc)
                    warned = True
            if self.stopped.wait(self.period):
                return
