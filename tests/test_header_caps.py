"""Every X-OmniVoice-* header has a size cap, and what it could not hold reaches the client (issue 43 item 3).

The probe's case: 60 words of Hangul in ``instructions``, none understood, made a 17.4 KB
``X-OmniVoice-Ignored`` header; Node's ``openai`` package (undici) failed the response with
``UND_ERR_HEADERS_OVERFLOW`` and the audio never arrived.  Now each value is cut at ``HEADER_CAP`` bytes with a
marker, and the whole is in the SSE ``done`` event and at ``GET /v1/audio/speech/details/{token}``.
"""

from __future__ import annotations

import base64
import json
import os
import pathlib
import shutil
import socket
import subprocess
import threading
import time
import urllib.parse

import httpx
import pytest

from omnivoice_demo.api.headers import HEADER_CAP, cap_headers
from tests.support.api_client import router_client

HANGUL = " ".join(["안녕하세요여러분"] * 60)   # 60 words of Hangul: 9 bytes a character once percent-encoded


def test_cap_headers_cuts_only_long_omnivoice_values_and_never_inside_an_escape():
    long = urllib.parse.quote(HANGUL)
    capped, whole = cap_headers({"X-OmniVoice-Ignored": long, "X-OmniVoice-Seed": "7", "Content-Type": "x" * 5000})
    assert len(capped["X-OmniVoice-Ignored"]) <= HEADER_CAP and "truncated" in capped["X-OmniVoice-Ignored"]
    assert capped["X-OmniVoice-Seed"] == "7" and len(capped["Content-Type"]) == 5000
    assert whole == {"X-OmniVoice-Ignored": long}
    kept = capped["X-OmniVoice-Ignored"].split("...[truncated")[0]
    urllib.parse.unquote(kept, errors="strict")     # whole escapes only: it decodes to whole characters
    assert long.startswith(kept)


@pytest.fixture
def api(engine, tmp_path):
    from omnivoice_demo.studio import VoiceLibrary

    return router_client(engine, VoiceLibrary(tmp_path / "voices"))


def test_whole_file_and_sse_responses_carry_the_whole_value_elsewhere(api):
    response = api.post("/v1/audio/speech", json={"input": "Hello there.", "voice": "coral", "instructions": HANGUL,
                                                  "stream": False, "steps": 1, "response_format": "wav"})
    assert response.status_code == 200 and response.content[:4] == b"RIFF"
    assert all(len(v) <= HEADER_CAP for k, v in response.headers.items() if k.startswith("x-omnivoice-"))
    path = response.headers["x-omnivoice-details"]
    assert path in response.headers["x-omnivoice-ignored"]
    details = api.get(path).json()["headers"]
    assert details["X-OmniVoice-Ignored"].count("안녕하세요여러분") == 60
    assert api.get("/v1/audio/speech/details/nothing-here").status_code == 404

    response = api.post("/v1/audio/speech", json={"input": "Hello there.", "voice": "coral", "instructions": HANGUL,
                                                  "stream_format": "sse", "steps": 1, "response_format": "wav"})
    events = [json.loads(line[6:]) for line in response.text.splitlines() if line.startswith("data: ")]
    assert events[-1]["type"] == "speech.audio.done"
    assert events[-1]["details"]["X-OmniVoice-Ignored"].count("안녕하세요여러분") == 60
    assert sum(len(base64.b64decode(e["audio"])) for e in events if e["type"] == "speech.audio.delta") > 0
    short = api.post("/v1/audio/speech", json={"input": "Hi.", "stream": False, "steps": 1, "instructions": "male"})
    assert "x-omnivoice-details" not in short.headers     # nothing cut: nothing kept


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_the_node_openai_package_gets_the_audio_with_60_words_of_hangul(engine, tmp_path):
    import uvicorn
    from fastapi import FastAPI

    from omnivoice_demo.api.routes import build_router
    from tests.test_http_api import _node_with_openai

    node, modules = _node_with_openai()
    if node is None:
        pytest.skip(modules)
    app = FastAPI()
    app.include_router(build_router(router_client(engine, __import__("omnivoice_demo.studio", fromlist=["x"])
                                                  .VoiceLibrary(tmp_path / "voices")).context))
    port = _free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 60
        while not server.started:
            assert time.monotonic() < deadline and thread.is_alive()
            time.sleep(0.05)
        script = tmp_path / "long.mjs"
        shutil.copy(pathlib.Path(__file__).parent / "support" / "openai_long_headers.mjs", script)
        (tmp_path / "node_modules").symlink_to(modules / "node_modules", target_is_directory=True)
        done = subprocess.run([node, str(script)], capture_output=True, text=True, timeout=300,
                              env=dict(os.environ, OPENAI_BASE_URL=f"http://127.0.0.1:{port}/v1",
                                       OPENAI_API_KEY="unused", INSTRUCTIONS=HANGUL))
        assert done.returncode == 0, done.stderr[-3000:]
        said = json.loads(done.stdout.strip().splitlines()[-1])
        assert said["bytes"] > 44 and max(said["lengths"].values()) <= HEADER_CAP
        assert "truncated" in said["ignored"] and said["details"].startswith("/v1/audio/speech/details/")
        whole = httpx.get(f"http://127.0.0.1:{port}{said['details']}", timeout=30).json()["headers"]
        assert whole["X-OmniVoice-Ignored"].count("안녕하세요여러분") == 60
    finally:
        server.should_exit = True
        thread.join(30)
