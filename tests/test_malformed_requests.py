"""Malformed HTTP requests are a 4xx with a message, never a 500; request bodies are counted as they arrive.

JSON that is not valid Unicode, nested too deeply or of the wrong shape; multipart that cannot be parsed,
an upload's file name too long, audio of absurd amplitude; a speech body or a chunked voice upload past
its limit, refused once it passes the cap, not after reading it all.  The HTTP API is the real router on
a FastAPI test client (no subprocess) over the tiny fp32 engine in process.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.support.api_client import router_client
from tests.test_vocabulary import a_voice


KEY = "hardening-key"


@pytest.fixture
def api(engine, tmp_path):
    """The HTTP API's router in process, over the tiny engine, a voice library in tmp_path and a key."""
    from omnivoice_demo.studio import VoiceLibrary

    client = router_client(engine, VoiceLibrary(tmp_path / "voices"), api_key=KEY)
    client.headers["Authorization"] = f"Bearer {KEY}"
    return client


def assert_4xx(response, status=400, words=""):
    assert response.status_code == status, response.text
    message = response.json()["error"]["message"]
    assert words.lower() in message.lower(), message
    assert "Traceback" not in message and "internal" not in message.lower()
    return message


def speech(api, body, **kwargs):
    return api.post("/v1/audio/speech", content=body if isinstance(body, (bytes, str)) else json.dumps(body),
                    headers={"Content-Type": "application/json"}, **kwargs)


# --- JSON bodies: not valid Unicode, nested too deeply, of the wrong shape --------------------------------

@pytest.mark.parametrize("field", ["input", "instructions"])
def test_a_lone_surrogate_in_a_speech_request_is_a_400(api, field):
    body = {"input": "Hello.", "voice": "alloy", "stream": False, "steps": 1}
    body[field] = "Hi \ud800 there."
    raw = json.dumps(body)  # ensure_ascii: the surrogate travels as the escape \\ud800, as a probe sends it
    assert_4xx(speech(api, raw), 400, "not valid Unicode")


def test_a_lone_surrogate_echoed_by_a_message_is_escaped(api):
    message = assert_4xx(speech(api, {"input": "Hello.", "voice": "\ud800", "stream": False}), 400)
    assert "\\ud800" in message


def test_deeply_nested_json_is_a_400(api):
    assert_4xx(speech(api, "[" * 100_000 + "]" * 100_000), 400, "nested too deeply")
    api.context.voices.save(a_voice(), "Anna")
    assert_4xx(api.patch("/v1/audio/voices/Anna", content="{\"a\":" * 100_000 + "1" + "}" * 100_000), 400)


@pytest.mark.parametrize("preset", [["fast"], {"name": "fast"}, 3])
def test_a_preset_that_is_not_a_name_is_a_400(api, preset):
    assert_4xx(speech(api, {"input": "Hello.", "preset": preset, "stream": False}), 400, "preset")


# --- multipart uploads: unparseable, a file name too long, audio of absurd amplitude ----------------------

def _wav_bytes(audio, subtype="PCM_16") -> bytes:
    import io

    import soundfile

    buffer = io.BytesIO()
    soundfile.write(buffer, audio, 24000, format="WAV", subtype=subtype)
    return buffer.getvalue()


def create_voice(api, data: bytes, filename="clip.wav", **fields):
    form = {"name": "Probe", "transcript": "Hello there.", "consent": "true", **fields}
    return api.post("/v1/audio/voices", data=form, files={"file": (filename, data, "audio/wav")})


def test_malformed_multipart_is_a_400(api):
    response = api.post("/v1/audio/voices", content=b"--xyz\r\nContent-Disposition: form-da\r\n\r\n\x00garbage",
                        headers={"Content-Type": "multipart/form-data; boundary=xyz"})
    assert_4xx(response, 400, "multipart")
    response = api.post("/v1/audio/voices", content=b"garbage",
                        headers={"Content-Type": "multipart/form-data"})  # no boundary at all
    assert_4xx(response, 400, "multipart")


def test_a_huge_upload_file_name_is_a_400(api):
    from tests.support.signals import speech_like

    response = create_voice(api, _wav_bytes(speech_like(1.0)[0]), filename="x" * 5000 + ".wav")
    assert_4xx(response, 400, "multipart")  # python-multipart refuses a header that long
    assert create_voice(api, _wav_bytes(speech_like(1.0)[0]), filename="x" * 200 + ".wav").status_code == 201


def test_a_float_wav_of_absurd_amplitude_is_refused_not_saved_with_rms_inf(api):
    audio = np.full(24000, 1e30, dtype=np.float32)
    audio[::2] = -1e30
    assert_4xx(create_voice(api, _wav_bytes(audio, "FLOAT")), 400, "samples up to")
    assert api.context.voices.names() == []


# --- bodies are counted as they arrive --------------------------------------------------------------------

class CountingBody:
    """A chunked request body (no Content-Length) of ``total`` bytes that counts what the server read."""

    def __init__(self, total: int, piece: bytes = b"x" * 65536):
        self.total, self.piece, self.sent = total, piece, 0

    async def receive(self):
        self.sent += len(self.piece)
        return {"type": "http.request", "body": self.piece, "more_body": self.sent < self.total}


def post_raw(api, path: str, content_type: str, body: CountingBody) -> tuple[int, dict]:
    """POST through the app's ASGI interface itself (a test client would read the whole body first)."""
    import asyncio

    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
             "scheme": "http", "path": path, "raw_path": path.encode(), "query_string": b"", "root_path": "",
             "headers": [(b"content-type", content_type.encode()), (b"authorization", f"Bearer {KEY}".encode()),
                         (b"transfer-encoding", b"chunked")],
             "client": ("127.0.0.1", 5000), "server": ("127.0.0.1", 80)}
    answer = {"status": None, "body": b""}

    async def send(message):
        if message["type"] == "http.response.start":
            answer["status"] = message["status"]
        elif message["type"] == "http.response.body":
            answer["body"] += message.get("body", b"")

    asyncio.run(api.app(scope, body.receive, send))
    return answer["status"], json.loads(answer["body"])


def test_a_speech_body_is_refused_once_it_passes_the_cap_not_after_reading_it(api):
    from omnivoice_demo.api.routes import MAX_JSON_BYTES

    body = CountingBody(400 * 2**20)
    status, answer = post_raw(api, "/v1/audio/speech", "application/json", body)
    assert status == 413 and "limit" in answer["error"]["message"], answer
    assert body.sent <= MAX_JSON_BYTES + 2 * len(body.piece)


def test_a_chunked_voice_upload_without_length_is_cut_off_at_the_limit(api, limited):
    limited(max_upload_bytes=2**20)
    body = CountingBody(64 * 2**20)
    status, answer = post_raw(api, "/v1/audio/voices", "multipart/form-data; boundary=xyz", body)
    assert status == 413 and "limit" in answer["error"]["message"], answer
    assert body.sent <= 2**20 + 2 * 65536 + len(body.piece)
