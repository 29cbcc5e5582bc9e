"""``POST /dev/captioned_speech`` over real HTTP: Kokoro-FastAPI's captioned speech, whole and streamed.

``python app.py`` in a subprocess with an API key and the test recogniser (random Whisper weights, so the
times are not good ones: the tests check the shape, that every word comes once and in order, inside the
audio, and that the streamed pieces make one file)."""

from __future__ import annotations

import base64
import io
import json

import httpx
import pytest
import soundfile as sf

from tests.support.app_server import AppProcess
from tests.test_http_api import wait_model_loaded

pytestmark = pytest.mark.slow  # the app runs in a subprocess

KEY = "captions-key"
TEXT = ("The first sentence is here, and it is long enough to stand on its own. Then a second one follows it "
        "closely, with a comma.")
FAST = {"steps": 2, "seed": 7, "model": "omnivoice", "voice": "auto"}


@pytest.fixture(scope="module")
def app(tiny_fp32_folder, recognizer_folder, tmp_path_factory):
    server = AppProcess(["--model", str(tiny_fp32_folder), "--precision", "fp32", "--api-key", KEY],
                        tmp_path_factory.mktemp("captions"), env={"OMNIVOICE_ASR_MODEL": str(recognizer_folder)})
    try:
        wait_model_loaded(server)
        yield server
    finally:
        server.stop()


def post(app, body: dict, key: str = KEY, **kwargs) -> httpx.Response:
    return httpx.post(app.url + "dev/captioned_speech", json=body, headers={"Authorization": f"Bearer {key}"},
                      timeout=300, **kwargs)


def test_whole_file_with_its_words(app):
    response = post(app, dict(FAST, input=TEXT, stream=False, response_format="wav"))
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["audio_format"] == "wav" and set(body) == {"audio", "audio_format", "timestamps"}
    audio, rate = sf.read(io.BytesIO(base64.b64decode(body["audio"])), dtype="float32")
    words = body["timestamps"]
    assert [w["word"] for w in words] == TEXT.split()
    assert all({"word", "start_time", "end_time"} <= set(w) for w in words)
    starts = [w["start_time"] for w in words]
    assert starts == sorted(starts) and words[-1]["end_time"] <= len(audio) / rate + 1e-6
    assert response.headers["X-OmniVoice-Seed"] == "7"


def test_streamed_lines_each_with_a_piece_and_its_words(app):
    pieces, words = [], []
    with httpx.stream("POST", app.url + "dev/captioned_speech", json=dict(FAST, input=TEXT, response_format="wav"),
                      headers={"Authorization": f"Bearer {KEY}"}, timeout=300) as response:
        assert response.status_code == 200 and response.headers["content-type"].startswith("application/x-ndjson")
        for line in response.iter_lines():
            if line:
                item = json.loads(line)
                assert item["audio_format"] == "wav"
                pieces.append(base64.b64decode(item["audio"]))
                words.append(item["timestamps"])
    assert len(pieces) >= 3  # two chunks (sentence streaming) and the file's end
    assert [w["word"] for group in words for w in group] == TEXT.split()
    assert all(group for group in words[:2]) and words[-1] == []
    audio, rate = sf.read(io.BytesIO(b"".join(pieces)), dtype="float32")  # the pieces end to end are one file
    starts = [w["start_time"] for group in words for w in group]
    assert starts == sorted(starts) and starts[-1] <= len(audio) / rate
    first_len = len(sf.read(io.BytesIO(pieces[0]), dtype="float32")[0]) / rate if pieces[0][:4] == b"RIFF" else 0
    assert all(w["start_time"] >= first_len - 1e-6 for w in words[1])  # the second piece's words come after the first


def test_same_body_limits_and_key_as_speech(app):
    assert post(app, dict(FAST, input=TEXT), key="wrong").status_code == 401
    for body, param in [(dict(FAST, input=""), None), (dict(FAST, input=TEXT, stream_format="sse"), "stream_format"),
                        (dict(FAST, input=TEXT, stream="yes"), "stream"), (dict(FAST, input="x" * 200000), None)]:
        response = post(app, body)
        assert 400 <= response.status_code < 500, response.text
        error = response.json()["error"]
        assert error["message"] and (param is None or error["param"] == param)


SCRIPT = "Anna: The bass is loud tonight.\nBen: Turn it down, please."


def streamed_words(app, body: dict) -> list[dict]:
    """Every word of a streamed answer's lines, in order."""
    words = []
    with httpx.stream("POST", app.url + "dev/captioned_speech", json=body,
                      headers={"Authorization": f"Bearer {KEY}"}, timeout=300) as response:
        assert response.status_code == 200, response.read()
        for line in response.iter_lines():
            if line:
                words.extend(json.loads(line)["timestamps"])
    return words


def test_a_scripts_words_carry_their_speaker_whole_and_streamed(app):
    body = dict(FAST, input=SCRIPT, script=True, speakers={"Anna": "female", "Ben": "male"}, response_format="wav")
    response = post(app, dict(body, stream=False))
    assert response.status_code == 200, response.text
    whole = response.json()["timestamps"]
    streamed = streamed_words(app, body)
    expected = [("Anna", w) for w in "The bass is loud tonight.".split()] + \
        [("Ben", w) for w in "Turn it down, please.".split()]
    assert [(w.get("speaker"), w["word"]) for w in whole] == expected
    assert [(w.get("speaker"), w["word"]) for w in streamed] == expected
