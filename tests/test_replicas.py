"""``omnivoice serve --replicas 2`` on a local Ray cluster (Ray Serve), issues 52, 57 and 58: requests sent at
once are answered by both replicas (``X-OmniVoice-Replica``; each replica takes one generation at a time), Ray's
own ports listen on loopback with a loopback ``--host``, ``/metrics`` is the totals over the replicas and never
goes down, a replica killed in the middle of a streamed answer cuts that answer (an error, not a hang) and one
killed before it answered gives the API's 503 ``replica_unavailable`` with ``Retry-After``, the next requests
succeed while Serve restarts it, the saved voice made before is still spoken and listed by the restarted replica
(the replicas share the voices folder), and a clean stop leaves a clean log (no colour codes, no failed task)."""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time

import httpx
import pytest
import soundfile as sf

from omnivoice_demo.api.replicas import parse_replicas
from tests.support.app_server import ROOT, free_port, stop_process
from tests.support.signals import speech_like


def test_replicas_are_a_number_or_auto_min_max():
    assert parse_replicas("2") == (2, 2) and parse_replicas("auto:1-3") == (1, 3)
    for wrong in ("0", "auto:3-1", "auto:1-", "two", "auto:0-2", "65"):
        with pytest.raises(argparse.ArgumentTypeError):
            parse_replicas(wrong)


def test_each_answer_names_its_replica_streamed_too():
    """``ReplicaHeader`` adds the header on the answer's start, so a streamed answer carries it too."""
    import asyncio

    from omnivoice_demo.api.replicas import ReplicaHeader

    async def streamed(scope, receive, send):
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"audio/pcm")]})
        await send({"type": "http.response.body", "body": b"ab", "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    sent = []

    async def send(message):
        sent.append(message)

    asyncio.run(ReplicaHeader(streamed, "r1")({"type": "http"}, None, send))
    assert (b"x-omnivoice-replica", b"r1") in sent[0]["headers"] and len(sent) == 3


def test_each_replica_takes_one_request_per_running_generation_and_the_proxy_holds_the_rest():
    """Requests that arrive together wait in Serve's proxy for the first replica with room (issue 58), at most
    --max-queue a replica, beyond which Serve answers 429 (made the API's busy by the proxy's middleware)."""
    from omnivoice_demo.api.replicas import deployment_options

    options = deployment_options(argparse.Namespace(replicas=(2, 4), replica_threads=1, max_running=1, max_queue=8))
    assert options["max_ongoing_requests"] == 1 and options["max_queued_requests"] == 32
    assert options["backpressure_config"]["status_code"] == 429


def _registry(requests: int, waiting: int, ready: int):
    from prometheus_client import CollectorRegistry, Counter, Gauge

    registry = CollectorRegistry()
    Counter("omnivoice_requests", "requests", ["route"], registry=registry).labels(route="/speech").inc(requests)
    Gauge("omnivoice_queue_waiting", "waiting", registry=registry).set(waiting)
    Gauge("omnivoice_model_ready", "ready", registry=registry).set(ready)
    return registry


def _samples(text: bytes) -> dict:
    from prometheus_client.parser import text_string_to_metric_families

    return {(sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(text.decode()) for sample in family.samples}


def test_the_hub_sums_the_replicas_counters_keeps_a_dead_ones_and_counts_only_live_gauges():
    """/metrics under replicas: counters are sums over every replica this command ran (a dead one's last report
    kept, so they never go down), gauges over the live ones (model_ready: the largest), an older report ignored."""
    from omnivoice_demo.api import replica_hub
    from omnivoice_demo.api.replica_hub import ReplicaHub, families_of, metrics_text

    now = [0.0]
    hub = ReplicaHub(clock=lambda: now[0])
    hub.report("a", 2, {"model_loaded": True}, families_of(_registry(4, 1, 1)))
    hub.report("a", 1, {}, families_of(_registry(1, 0, 0)))   # late, older: ignored
    hub.report("b", 1, {"model_loaded": True}, families_of(_registry(2, 3, 1)))
    totals = _samples(metrics_text(hub.view()["families"]))
    speech = ("omnivoice_requests_total", (("route", "/speech"),))
    assert totals[speech] == 6 and totals[("omnivoice_queue_waiting", ())] == 4
    assert totals[("omnivoice_model_ready", ())] == 1 and totals[("omnivoice_replicas", ())] == 2
    seen = [totals[speech]]
    now[0] += replica_hub.LIVE_S + 1   # b stops reporting (killed); a goes on
    hub.report("a", 3, {"model_loaded": True}, families_of(_registry(5, 0, 1)))
    view = hub.view()
    totals = _samples(metrics_text(view["families"]))
    assert [health["replica"]["id"] for health in view["live"]] == ["a"]
    assert totals[speech] == 7 and totals[("omnivoice_queue_waiting", ())] == 0 and \
        totals[("omnivoice_replicas", ())] == 1
    seen.append(totals[speech])
    now[0] += replica_hub.RETIRE_S   # b (silent since 0) folded into the replicas gone, a not; c replaces b
    hub.report("a", 4, {"model_loaded": True}, families_of(_registry(6, 0, 1)))
    hub.report("c", 1, {"model_loaded": True}, families_of(_registry(1, 0, 1)))
    hub.report("b", 9, {}, families_of(_registry(50, 0, 1)))   # a retired replica's report: ignored
    seen.append(_samples(metrics_text(hub.view()["families"]))[speech])
    assert seen == [6, 7, 9]


async def _through_front(inner, path="/v1/audio/speech", method="POST"):
    from omnivoice_demo.api.replica_proxy import ReplicaFront

    sent = []

    async def send(message):
        sent.append(message)

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    scope = {"type": "http", "method": method, "path": path, "headers": [], "query_string": b""}
    await ReplicaFront(inner)(scope, receive, send)
    start = next(message for message in sent if message["type"] == "http.response.start")
    body = b"".join(message.get("body", b"") for message in sent if message["type"] == "http.response.body")
    return start["status"], dict(start["headers"]), body


def test_the_proxy_answers_in_the_api_shape_where_serve_would_answer_itself():
    """A replica that died before answering (Serve's proxy sends nothing: uvicorn's plain 500) -> 503
    replica_unavailable with Retry-After; Serve's backpressure 429 -> the API's busy; a replica's answer passes."""
    async def died(scope, receive, send):
        return None

    async def backpressure(scope, receive, send):
        await send({"type": "http.response.start", "status": 429, "headers": [(b"retry-after", b"5")]})
        await send({"type": "http.response.body", "body": b"Request dropped due to backpressure"})

    async def answered(scope, receive, send):
        await send({"type": "http.response.start", "status": 500, "headers": [(b"x-omnivoice-replica", b"r1")]})
        await send({"type": "http.response.body", "body": b'{"error": {}}'})

    status, headers, body = asyncio.run(_through_front(died))
    assert status == 503 and headers[b"retry-after"] == b"2"
    assert json.loads(body)["error"]["code"] == "replica_unavailable"
    status, headers, body = asyncio.run(_through_front(backpressure))
    assert status == 429 and headers[b"retry-after"] == b"5" and json.loads(body)["error"]["code"] == "busy"
    assert asyncio.run(_through_front(answered)) == (500, {b"x-omnivoice-replica": b"r1"}, b'{"error": {}}')


def test_the_proxy_answers_the_probes_over_every_replica():
    """/ready is 200 once one replica serves a model (with the store's state, as a single server's /ready) and
    503 with Retry-After before; /health sums the queues and lists each replica."""
    from omnivoice_demo.api.replica_proxy import probe_answer

    loading = {"replica": {"id": "b", "pid": 2}, "status": "loading", "model_loaded": False, "model": None,
               "message": "loading the model", "queue": {"running": 0, "waiting": 0}}
    serving = {"replica": {"id": "a", "pid": 1}, "status": "ok", "model_loaded": True, "model": "m",
               "queue": {"running": 1, "waiting": 2}, "voice_store": {"status": "up"}, "formats": ["wav"]}
    answer = probe_answer("/ready", {"live": [loading], "families": []})
    assert answer.status_code == 503 and answer.headers["Retry-After"] == "5"
    assert json.loads(answer.body) == {"status": "loading", "message": "loading the model"}
    answer = probe_answer("/ready", {"live": [serving, loading], "families": []})
    assert answer.status_code == 200 and json.loads(answer.body)["voice_store"] == {"status": "up"}
    health = json.loads(probe_answer("/health", {"live": [serving, loading], "families": []}).body)
    assert health["model_loaded"] and health["queue"] == {"running": 1, "waiting": 2}
    assert [(replica["id"], replica["pid"]) for replica in health["replicas"]] == [("a", 1), ("b", 2)]


class ReplicatedServe:
    def __init__(self, folder, workdir):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        workdir.mkdir(parents=True, exist_ok=True)
        self.log_path = workdir / "serve.log"
        self.log = open(self.log_path, "w")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "omnivoice_demo", "serve", "--model", str(folder), "--precision", "fp32",
             "--host", "127.0.0.1", "--port", str(self.port), "--replicas", "2", "--replica-threads", "1"],
            cwd=ROOT, stdout=self.log, stderr=subprocess.STDOUT,
            env=dict(os.environ, HF_HUB_OFFLINE="1", OMNIVOICE_DATA=str(workdir / "data"),
                     OMNIVOICE_CACHE=str(workdir / "cache"), OMP_NUM_THREADS="1", RAY_USAGE_STATS_ENABLED="0"))

    def log_text(self, tail: int = 4000) -> str:
        if not self.log.closed:
            self.log.flush()
        return self.log_path.read_text(errors="replace")[-tail:]

    def replicas(self, gone=(), timeout: float = 240) -> dict[str, int]:
        """Every live replica's id and process, from /health (answered by the proxy from every replica's
        report), once two that are not in ``gone`` serve a model."""
        deadline = time.monotonic() + timeout
        while True:
            assert self.process.poll() is None and time.monotonic() < deadline, self.log_text()
            try:
                answer = httpx.get(self.url + "/health", timeout=5)
                live = {replica["id"]: replica["pid"] for replica in answer.json().get("replicas", [])
                        if replica["model"] and replica["id"] not in gone}
                if answer.status_code == 200 and len(live) == 2:
                    return live
            except httpx.HTTPError:
                pass
            time.sleep(0.2)

    def speak(self, voice: str = "auto", **body) -> httpx.Response:
        return httpx.post(self.url + "/v1/audio/speech", timeout=120,
                          json=dict({"input": "Hello there.", "voice": voice, "response_format": "wav",
                                     "stream": False, "steps": 1, "seed": 3}, **body))

    def speech_total(self) -> float:
        answer = httpx.get(self.url + "/metrics", timeout=10)
        assert answer.status_code == 200, answer.text
        return sum(value for (name, labels), value in _samples(answer.content).items()
                   if name == "omnivoice_requests_total" and ("route", "/v1/audio/speech") in labels)

    def stop(self) -> int:
        self.process.send_signal(signal.SIGTERM)   # Serve and its local Ray cluster are shut down on the way out
        try:
            code = self.process.wait(90)
        except subprocess.TimeoutExpired:
            stop_process(self.process)
            code = -1
        self.log.close()
        return code


def _listening(root_pid: int) -> list[tuple[str, int, str]]:
    """The listening TCP sockets of a process and all its descendants (the local Ray cluster's processes)."""
    import psutil

    root = psutil.Process(root_pid)
    processes = {process.pid: process for process in [root, *root.children(recursive=True)]}
    return [(connection.laddr.ip, connection.laddr.port, processes[connection.pid].name())
            for connection in psutil.net_connections("inet")
            if connection.status == psutil.CONN_LISTEN and connection.pid in processes]


def _loopback(address: str) -> bool:
    import ipaddress

    ip = ipaddress.ip_address(address)
    return ip.is_loopback or bool(getattr(ip, "ipv4_mapped", None) and ip.ipv4_mapped.is_loopback)


def _running(server: ReplicatedServe, replica: str, timeout: float = 60) -> None:
    """Wait until ``replica`` says (in the proxy's /health, from its last report) that it computes a generation."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if any(entry["id"] == replica and entry["queue"]["running"]
               for entry in httpx.get(server.url + "/health", timeout=10).json()["replicas"]):
            return
        time.sleep(0.05)
    raise AssertionError(f"replica {replica} never ran the request: {server.log_text()}")


@pytest.mark.slow   # one local Ray cluster, two replicas, both killed and restarted once (see the module)
def test_two_replicas_share_work_report_totals_and_survive_replicas_killed(tiny_fp32_folder, tmp_path):
    pytest.importorskip("ray.serve", reason="Ray Serve is not installed (ray[serve], requirements-dev.txt)")
    server = ReplicatedServe(tiny_fp32_folder, tmp_path)
    spoken_ok = 0
    try:
        pids = server.replicas()
        outside = [socket for socket in _listening(server.process.pid) if not _loopback(socket[0])]
        assert not outside, outside   # --host 127.0.0.1: no port of Ray's (GCS, raylet, workers, Serve) elsewhere
        clip = tmp_path / "me.wav"
        sf.write(clip, speech_like(3.0, 16000, seed=2)[0], 16000)
        with open(clip, "rb") as handle:
            made = httpx.post(server.url + "/v1/audio/voices", timeout=120,
                              data={"name": "Tester", "transcript": "One two three four.", "consent": "true"},
                              files={"file": ("me.wav", handle, "audio/wav")})
        assert made.status_code == 201, made.text

        together = "The keeper climbed the stairs each evening and lit the lamp for the ships."
        with concurrent.futures.ThreadPoolExecutor(4) as pool:   # sent at once: both replicas take some
            answers = list(pool.map(lambda seed: server.speak("Tester", input=together, steps=8, seed=seed),
                                    range(4)))
        assert [answer.status_code for answer in answers] == [200] * 4, [answer.text for answer in answers]
        spoken_ok += 4
        assert {answer.headers["X-OmniVoice-Replica"] for answer in answers} == set(pids)   # and see the voice

        totals = [server.speech_total()]
        for _ in range(2):
            assert server.speak("Tester").status_code == 200
            spoken_ok += 1
            totals.append(server.speech_total())
        time.sleep(2.5)   # every replica has reported since (each second)
        totals.append(server.speech_total())
        assert totals == sorted(totals) and totals[-1] == spoken_ok, totals   # totals, rising, not one replica's

        # both replicas killed at once, one in the middle of a streamed answer, the other computing a whole one
        text = " ".join(["This sentence keeps the engine busy for a while."] * 14)
        whole: dict = {}
        with pytest.raises(httpx.HTTPError):   # the streamed answer is cut when its replica dies: not a hang
            with httpx.stream("POST", server.url + "/v1/audio/speech", timeout=120,
                              json={"input": text, "voice": "Tester", "response_format": "pcm", "steps": 32,
                                    "stream": True}) as streaming:
                assert streaming.status_code == 200
                streamer = streaming.headers["X-OmniVoice-Replica"]
                other = next(replica for replica in pids if replica != streamer)
                request = threading.Thread(target=lambda: whole.update(
                    response=server.speak("Tester", input=text, steps=32)))
                request.start()   # the replica with room takes it
                _running(server, other)
                os.kill(pids[other], signal.SIGKILL)
                os.kill(pids[streamer], signal.SIGKILL)
                for _ in streaming.iter_bytes():
                    pass
        request.join(120)
        died = whole["response"]   # not Ray's plain-text 500: the API's error, and when to retry
        assert died.status_code == 503, died.text
        assert died.json()["error"]["code"] == "replica_unavailable" and int(died.headers["Retry-After"]) > 0
        totals.append(server.speech_total())

        for _ in range(2):   # the next requests wait for Serve's restarted replicas and succeed, the voice there
            spoken = server.speak("Tester")
            assert spoken.status_code == 200, spoken.text
        again = server.replicas(gone=pids)
        listed = httpx.get(server.url + "/v1/audio/voices", timeout=30)
        assert listed.headers["X-OmniVoice-Replica"] in again
        assert "Tester" in [item["id"] for item in listed.json()["data"] if item["type"] == "saved"]
        time.sleep(1.5)
        totals.append(server.speech_total())
        assert totals == sorted(totals) and totals[-1] >= spoken_ok + 2, totals   # the dead ones' counts stay
    finally:
        code = server.stop()
    log = server.log_text(tail=10**7)
    assert code == 0, (code, log[-4000:])
    assert "\x1b[" not in log, "terminal colour codes in the log"
    assert not re.search(r"Task \S+ failed", log), log[-4000:]   # a clean stop: no failed task in the log
