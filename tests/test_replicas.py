"""``omnivoice serve --replicas 2`` on a local Ray cluster (Ray Serve), issue 52: requests are answered by both
replicas (``X-OmniVoice-Replica``), a replica killed in the middle of a streamed answer cuts that answer (the
client sees an error, not a hang), the next requests succeed while Serve restarts it, and the saved voice made
before is still spoken and listed by the restarted replica (the replicas share the voices folder)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import httpx
import pytest
import soundfile as sf

from omnivoice_demo.api.replicas import parse_replicas
from tests.support.app_server import ROOT, free_port, stop_process
from tests.support.signals import speech_like


def test_replicas_are_a_number_or_auto_min_max():
    import argparse

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


class ReplicatedServe:
    def __init__(self, folder, workdir):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        workdir.mkdir(parents=True, exist_ok=True)
        self.log_path = workdir / "serve.log"
        self.log = open(self.log_path, "w")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "omnivoice_demo", "serve", "--model", str(folder), "--precision", "fp32",
             "--port", str(self.port), "--replicas", "2", "--replica-threads", "1"],
            cwd=ROOT, stdout=self.log, stderr=subprocess.STDOUT,
            env=dict(os.environ, HF_HUB_OFFLINE="1", OMNIVOICE_DATA=str(workdir / "data"),
                     OMNIVOICE_CACHE=str(workdir / "cache"), OMP_NUM_THREADS="1", RAY_USAGE_STATS_ENABLED="0"))

    def log_text(self) -> str:
        if not self.log.closed:
            self.log.flush()
        return self.log_path.read_text(errors="replace")[-4000:]

    def replicas(self, timeout: float = 240) -> dict[str, int]:
        """Every replica's id and process, from /health, once both answer."""
        seen: dict[str, int] = {}
        deadline = time.monotonic() + timeout
        while len(seen) < 2:
            assert self.process.poll() is None and time.monotonic() < deadline, (seen, self.log_text())
            try:
                answer = httpx.get(self.url + "/health", timeout=5)
                if answer.status_code == 200 and answer.json().get("replica"):
                    replica = answer.json()["replica"]
                    seen[replica["id"]] = replica["pid"]
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        return seen

    def speak(self, voice: str = "auto", **body) -> httpx.Response:
        return httpx.post(self.url + "/v1/audio/speech", timeout=120,
                          json=dict({"input": "Hello there.", "voice": voice, "response_format": "wav",
                                     "stream": False, "steps": 1, "seed": 3}, **body))

    def stop(self) -> int:
        self.process.send_signal(signal.SIGTERM)   # Serve and its local Ray cluster are shut down on the way out
        try:
            code = self.process.wait(90)
        except subprocess.TimeoutExpired:
            stop_process(self.process)
            code = -1
        self.log.close()
        return code


@pytest.mark.slow   # a local Ray cluster and two replicas (about a minute on 2 cores)
def test_two_replicas_answer_and_survive_one_killed_mid_request(tiny_fp32_folder, tmp_path):
    pytest.importorskip("ray.serve", reason="Ray Serve is not installed (ray[serve], requirements-dev.txt)")
    server = ReplicatedServe(tiny_fp32_folder, tmp_path)
    try:
        pids = server.replicas()
        clip = tmp_path / "me.wav"
        sf.write(clip, speech_like(3.0, 16000, seed=2)[0], 16000)
        with open(clip, "rb") as handle:
            made = httpx.post(server.url + "/v1/audio/voices", timeout=120,
                              data={"name": "Tester", "transcript": "One two three four.", "consent": "true"},
                              files={"file": ("me.wav", handle, "audio/wav")})
        assert made.status_code == 201, made.text
        answered = set()
        for _ in range(40):
            spoken = server.speak("Tester")
            assert spoken.status_code == 200, spoken.text
            answered.add(spoken.headers["X-OmniVoice-Replica"])
            if answered == set(pids):
                break
        assert answered == set(pids), (answered, pids)   # both replicas answer, both see the saved voice

        text = " ".join(["This sentence keeps the engine busy for a while."] * 12)
        with pytest.raises(httpx.HTTPError):   # the answer is cut when its replica dies: an error, not a hang
            with httpx.stream("POST", server.url + "/v1/audio/speech", timeout=120,
                              json={"input": text, "voice": "Tester", "response_format": "pcm", "steps": 32,
                                    "stream": True}) as streaming:
                assert streaming.status_code == 200
                os.kill(pids[streaming.headers["X-OmniVoice-Replica"]], signal.SIGKILL)
                for _ in streaming.iter_bytes():
                    pass
        for _ in range(5):   # the next requests succeed, on the replica left while Serve restarts the other
            spoken = server.speak("Tester")
            assert spoken.status_code == 200, spoken.text
        again = server.replicas()   # Serve has restarted the killed one: a new replica, the voice still there
        assert len(set(again) - set(pids)) == 1
        for _ in range(40):
            listed = httpx.get(server.url + "/v1/audio/voices", timeout=30)
            if listed.headers["X-OmniVoice-Replica"] not in pids:
                break
        assert listed.headers["X-OmniVoice-Replica"] not in pids
        assert "Tester" in [item["id"] for item in listed.json()["data"] if item["type"] == "saved"]
    finally:
        code = server.stop()
    assert code == 0, (code, server.log_text())
