"""Two ``omnivoice serve`` processes on one PostgreSQL voice store (issue 52): a voice made on A is spoken on B,
renamed on B and seen so on A, deleted on A and gone on B, and the voices are still there after both restart."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import httpx
import pytest
import soundfile as sf

from tests.support.app_server import ROOT, free_port, stop_process
from tests.support.signals import speech_like

pytestmark = pytest.mark.slow   # four server starts in subprocesses


class Serve:
    def __init__(self, folder, store_url: str, workdir):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        workdir.mkdir(parents=True, exist_ok=True)
        self.log_path = workdir / f"serve-{self.port}.log"
        self.log = open(self.log_path, "w")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "omnivoice_demo", "serve", "--model", str(folder), "--precision", "fp32",
             "--port", str(self.port), "--voice-store", store_url, "--threads", "1"],
            cwd=ROOT, stdout=self.log, stderr=subprocess.STDOUT,
            env=dict(os.environ, HF_HUB_OFFLINE="1", OMNIVOICE_DATA=str(workdir / "data"),
                     OMNIVOICE_CACHE=str(workdir / "cache"), OMP_NUM_THREADS="1"))

    def wait_ready(self, timeout: float = 180) -> "Serve":
        deadline = time.monotonic() + timeout
        while True:
            assert self.process.poll() is None, self.log_text()
            assert time.monotonic() < deadline, self.log_text()
            try:
                if httpx.get(self.url + "/ready", timeout=2).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.3)

    def log_text(self) -> str:
        self.log.flush()
        return self.log_path.read_text(errors="replace")[-3000:]

    def stop(self) -> None:
        stop_process(self.process)
        self.log.close()

    def saved(self) -> list[str]:
        listed = httpx.get(self.url + "/v1/audio/voices", timeout=30).json()["data"]
        return sorted(item["id"] for item in listed if item["type"] == "saved")

    def speak(self, voice: str) -> httpx.Response:
        return httpx.post(self.url + "/v1/audio/speech", timeout=120,
                          json={"input": "Hello there.", "voice": voice, "response_format": "wav", "stream": False,
                                "steps": 1, "seed": 3})


def test_two_servers_on_one_database_share_voices(tiny_fp32_folder, pg_server, tmp_path):
    store = pg_server.create_database("two_servers")
    clip = tmp_path / "me.wav"
    sf.write(clip, speech_like(3.0, 16000, seed=2)[0], 16000)
    a, b = Serve(tiny_fp32_folder, store, tmp_path / "a"), Serve(tiny_fp32_folder, store, tmp_path / "b")
    try:
        a.wait_ready(), b.wait_ready()
        for name in ("Tester", "Keeper"):
            with open(clip, "rb") as handle:
                made = httpx.post(a.url + "/v1/audio/voices", timeout=120,
                                  data={"name": name, "transcript": "One two three four.", "consent": "true"},
                                  files={"file": ("me.wav", handle, "audio/wav")})
            assert made.status_code == 201, made.text
        assert b.saved() == ["Keeper", "Tester"]
        spoken = b.speak("Tester")
        assert spoken.status_code == 200 and len(spoken.content) > 44, spoken.text
        assert a.speak("Tester").headers["X-OmniVoice-Codes-SHA256"] == spoken.headers["X-OmniVoice-Codes-SHA256"]
        renamed = httpx.patch(b.url + "/v1/audio/voices/Tester", json={"name": "Renamed"}, timeout=30)
        assert renamed.status_code == 200, renamed.text
        assert a.saved() == ["Keeper", "Renamed"] and a.speak("Renamed").status_code == 200
        assert a.speak("Tester").status_code in (400, 404)
        assert httpx.delete(a.url + "/v1/audio/voices/Renamed", timeout=30).status_code == 200
        assert b.saved() == ["Keeper"]
        assert httpx.get(b.url + "/v1/audio/voices/Renamed", timeout=30).status_code == 404
    finally:
        a.stop(), b.stop()
    a, b = Serve(tiny_fp32_folder, store, tmp_path / "a2"), Serve(tiny_fp32_folder, store, tmp_path / "b2")
    try:
        a.wait_ready(), b.wait_ready()
        assert a.saved() == ["Keeper"] and b.saved() == ["Keeper"]
        assert b.speak("Keeper").status_code == 200
    finally:
        a.stop(), b.stop()
