"""The OpenAI-compatible HTTP API on the app's own server, driven by the official ``openai`` client.

One server (``python app.py`` on 127.0.0.1) with an API key and a queue of one:
speech in every format decoded back, streaming that starts before the end,
voices listed and created, a bad key, limits and busy as JSON errors, a
disconnect that stops the engine, and the same codes as the Gradio /speak.
"""

from __future__ import annotations

import io
import pathlib
import threading
import time

import httpx
import numpy as np
import openai
import pytest
import soundfile as sf
from gradio_client import Client

from omnivoice_demo.studio.vocabulary import DESIGNS
from tests.support.app_server import AppProcess
from tests.support.signals import speech_like

pytestmark = pytest.mark.slow  # the HTTP API tests run the app in a subprocess (the fast tier stays fast)

KEY = "test-key-123"
TEXT = "Hello from the speech API."
STREAM_TEXT = ("The first sentence is here. The second sentence follows it. The third sentence comes next. "
               "A fourth sentence is added. A fifth one ends it.")
FAST = {"steps": 4, "seed": 7}


def wait_model_loaded(server: AppProcess, timeout: float = 60.0) -> None:
    """Until /health says the model (loaded in the background) is ready (generous: a loaded machine is slow)."""
    server.wait_serving(timeout=180)
    deadline = time.monotonic() + timeout
    while not httpx.get(server.url + "health").json().get("model_loaded"):
        assert time.monotonic() < deadline, server.log_text()
        time.sleep(0.3)


@pytest.fixture(scope="module")
def app(tiny_fp32_folder, tmp_path_factory):
    server = AppProcess(["--model", str(tiny_fp32_folder), "--precision", "fp32", "--api-key", KEY,
                         "--api-key-scope", "v1", "--max-queue", "1"], tmp_path_factory.mktemp("http-api"))
    try:
        wait_model_loaded(server)
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def client(app):
    return openai.OpenAI(base_url=app.url + "v1", api_key=KEY, max_retries=0, timeout=120)


def health(app) -> dict:
    return httpx.get(app.url + "health", timeout=10).json()


def decode(data: bytes, response_format: str) -> tuple[np.ndarray, int]:
    if response_format == "pcm":
        return np.frombuffer(data, dtype="<i2").astype(np.float32) / 32768.0, 24000
    with sf.SoundFile(io.BytesIO(data)) as handle:  # read in blocks: streams may not state their length
        rate = handle.samplerate
        blocks = []
        while True:
            block = handle.read(24000, dtype="float32")
            if len(block) == 0:
                break
            blocks.append(block)
    return np.concatenate(blocks), rate


def test_health_and_models(app, client):
    state = health(app)
    assert state["model_loaded"] and state["queue"]["max_waiting"] == 1
    assert set(state["formats"]) >= {"wav", "flac", "pcm"}
    ids = [model.id for model in client.models.list().data]
    assert ids[0] == "omnivoice" and len(ids) >= 2


@pytest.mark.parametrize("response_format", ["wav", "flac", "mp3", "opus", "pcm"])
def test_speech_in_every_format_decodes_back(app, client, response_format):
    if response_format not in health(app)["formats"]:
        pytest.skip(f"this libsndfile cannot write {response_format}")
    whole = dict(FAST, stream=False)  # one whole file per format
    response = client.audio.speech.create(model="omnivoice", voice="alloy", input=TEXT,
                                          response_format=response_format, extra_body=whole)
    audio, rate = decode(response.read(), response_format)
    reference, _ = decode(client.audio.speech.create(model="tts-1", voice="alloy", input=TEXT, response_format="wav",
                                                     extra_body=whole).read(), "wav")
    assert rate == 24000
    # lossy codecs add their encoder delay and padding: at most a few hundred ms
    assert abs(len(audio) - len(reference)) <= (0 if response_format in ("wav", "flac", "pcm") else 0.2 * rate)
    assert np.sqrt(np.mean(audio ** 2)) > 1e-3
    if response_format in ("flac", "pcm"):
        np.testing.assert_allclose(audio, reference, atol=1 / 16384)


def test_streamed_audio_arrives_before_the_generation_ends(app, client):
    arrivals, chunks_at_first = [], None
    started = time.monotonic()
    with client.audio.speech.with_streaming_response.create(
            model="omnivoice", voice="echo", input=STREAM_TEXT, response_format="pcm",
            extra_body={"stream_format": "audio", "steps": 8, "seed": 1}) as response:
        planned_chunks = int(response.headers["x-omnivoice-chunks"])
        data = bytearray()
        for piece in response.iter_bytes():
            if not arrivals:
                # the generation is still running when the first audio arrives
                chunks_at_first = health(app)["queue"]
            arrivals.append(time.monotonic() - started)
            data.extend(piece)
    print(f"first audio after {arrivals[0]:.2f} s, last after {arrivals[-1]:.2f} s, {planned_chunks} chunks")
    assert planned_chunks >= 2
    assert chunks_at_first["running"] == 1
    audio, _ = decode(bytes(data), "pcm")
    assert len(audio) > 24000 and np.sqrt(np.mean(audio ** 2)) > 1e-3


def test_openais_documented_streaming_example_gets_audio_before_the_generation_ends(app, client):
    """OpenAI's own example: pcm through ``with_streaming_response``, no ``stream_format`` (streaming is the
    default, as on OpenAI's server), on a three-sentence text."""
    three = "The first sentence is here. The second sentence follows it. The third sentence ends it."
    with client.audio.speech.with_streaming_response.create(
            model="tts-1", voice="alloy", input=three, response_format="pcm",
            extra_body={"steps": 32, "seed": 2}) as response:   # long enough that the rest is still running
        planned_chunks = int(response.headers["x-omnivoice-chunks"])
        pieces = response.iter_bytes()
        first = next(pieces)
        queue_at_first = health(app)["queue"]          # asked the moment the first bytes are here
        rest = b"".join(pieces)
    assert planned_chunks >= 2 and first
    assert queue_at_first["running"] == 1, queue_at_first   # the generation had not ended
    audio, _ = decode(first + rest, "pcm")
    assert len(audio) > 24000 and np.sqrt(np.mean(audio ** 2)) > 1e-3


def test_a_speed_outside_the_models_range_is_clamped_and_says_so(client):
    raw = client.audio.speech.with_raw_response.create(model="omnivoice", voice="alloy", input=TEXT, speed=4.0,
                                                       response_format="wav", extra_body=FAST)
    assert raw.headers["x-omnivoice-speed"].startswith("2; asked 4, clamped")


def test_sse_stream_carries_base64_deltas_then_done(client):
    import base64
    import json

    with client.audio.speech.with_streaming_response.create(
            model="omnivoice", voice="nova", input=TEXT, response_format="wav",
            extra_body=dict(FAST, stream_format="sse")) as response:
        events = [json.loads(line[6:]) for line in response.iter_lines() if line.startswith("data: ")]
    assert [e["type"] for e in events][-1] == "speech.audio.done" and events[-1]["usage"]["input_tokens"] == len(TEXT)
    data = b"".join(base64.b64decode(e["audio"]) for e in events if e["type"] == "speech.audio.delta")
    audio, rate = decode(data, "wav")
    assert rate == 24000 and len(audio) > 0


# --- OpenAI's own examples (https://platform.openai.com/docs/guides/text-to-speech), only the base URL changed ---

EXAMPLE = dict(model="gpt-4o-mini-tts", voice="coral",
               input="Today is a wonderful day to build something people love!",
               instructions="Speak in a cheerful and positive tone.")
#: what the server says of the example: coral's design applied, the tone words ignored
EXAMPLE_HEADERS = {"x-omnivoice-instruct": DESIGNS["coral"], "x-omnivoice-ignored": "cheerful, positive"}


def test_openais_python_examples_get_audio_and_say_what_was_ignored(client, tmp_path):
    speech_file_path = tmp_path / "speech.mp3"
    with client.audio.speech.with_streaming_response.create(**EXAMPLE) as response:
        response.stream_to_file(speech_file_path)
        assert {k: response.headers[k] for k in EXAMPLE_HEADERS} == EXAMPLE_HEADERS
    audio, rate = decode(speech_file_path.read_bytes(), "mp3")
    assert rate == 24000 and len(audio) > 24000 // 2
    created = client.audio.speech.with_raw_response.create(**EXAMPLE)   # create(), with its response's headers
    assert {k: created.headers[k] for k in EXAMPLE_HEADERS} == EXAMPLE_HEADERS
    audio, rate = decode(created.parse().read(), "mp3")
    assert rate == 24000 and len(audio) > 24000 // 2
    assert decode(client.audio.speech.create(**EXAMPLE).read(), "mp3")[1] == 24000


def _node_with_openai():
    """(node, a folder holding node_modules/openai), or a reason to skip."""
    import os
    import shutil

    node = shutil.which("node")
    if node is None:
        return None, "node is not installed"
    for folder in filter(None, [os.environ.get("OMNIVOICE_NODE_MODULES"), os.getcwd()]):
        if (pathlib.Path(folder) / "node_modules" / "openai" / "package.json").is_file():
            return node, pathlib.Path(folder)
    return None, ("the openai npm package is not installed: npm install openai in a folder and set "
                  "OMNIVOICE_NODE_MODULES to it")


def test_openais_node_example_gets_audio_and_says_what_was_ignored(app, tmp_path):
    import json
    import os
    import shutil
    import subprocess

    node, modules = _node_with_openai()
    if node is None:
        pytest.skip(modules)
    script = tmp_path / "speech.mjs"
    shutil.copy(pathlib.Path(__file__).parent / "support" / "openai_speech_example.mjs", script)
    (tmp_path / "node_modules").symlink_to(modules / "node_modules", target_is_directory=True)
    done = subprocess.run([node, str(script), str(tmp_path / "speech.mp3")], capture_output=True, text=True,
                          timeout=300, env=dict(os.environ, OPENAI_BASE_URL=app.url + "v1", OPENAI_API_KEY=KEY))
    assert done.returncode == 0, done.stderr
    said = json.loads(done.stdout.strip().splitlines()[-1])
    assert {"x-omnivoice-instruct": said["instruct"], "x-omnivoice-ignored": said["ignored"]} == EXAMPLE_HEADERS
    audio, rate = decode((tmp_path / "speech.mp3").read_bytes(), "mp3")
    assert said["bytes"] > 0 and rate == 24000 and len(audio) > 24000 // 2


def test_voices_listed_and_created(app, client, tmp_path):
    listed = httpx.get(app.url + "v1/audio/voices", headers={"Authorization": f"Bearer {KEY}"}).json()
    names = {voice["id"]: voice for voice in listed["data"]}
    assert names["alloy"]["type"] == "design" and "female" in names["alloy"]["instructions"]
    clip = tmp_path / "me.wav"
    sf.write(clip, speech_like(3.0, 16000, seed=2)[0], 16000)
    with open(clip, "rb") as handle:
        created = httpx.post(app.url + "v1/audio/voices", headers={"Authorization": f"Bearer {KEY}"},
                             data={"name": "Tester", "transcript": "One two three four.", "consent": "true"},
                             files={"file": ("me.wav", handle, "audio/wav")}, timeout=60)
    assert created.status_code == 201, created.text
    assert created.json()["id"] == "Tester"
    listed = httpx.get(app.url + "v1/audio/voices", headers={"Authorization": f"Bearer {KEY}"}).json()
    assert any(v["id"] == "Tester" and v["type"] == "saved" for v in listed["data"])
    audio, rate = decode(client.audio.speech.create(model="omnivoice", voice="Tester", input=TEXT,
                                                    response_format="wav", extra_body=FAST).read(), "wav")
    assert rate == 24000 and len(audio) > 0
    with open(clip, "rb") as handle:  # no consent: refused, as a JSON error naming the field
        refused = httpx.post(app.url + "v1/audio/voices", headers={"Authorization": f"Bearer {KEY}"},
                             data={"name": "Other", "transcript": "One two."}, files={"file": ("me.wav", handle)})
    assert refused.status_code == 400 and refused.json()["error"]["param"] == "consent"
    with open(clip, "rb") as handle:  # no transcript and no recogniser that can run here: says to send it
        refused = httpx.post(app.url + "v1/audio/voices", headers={"Authorization": f"Bearer {KEY}"},
                             data={"name": "Other", "consent": "true"}, files={"file": ("me.wav", handle)})
    assert refused.status_code == 400 and refused.json()["error"]["param"] == "transcript"


def test_a_bad_key_is_refused(app):
    wrong = openai.OpenAI(base_url=app.url + "v1", api_key="not-the-key", max_retries=0)
    with pytest.raises(openai.AuthenticationError) as excinfo:
        wrong.audio.speech.create(model="omnivoice", voice="alloy", input=TEXT)
    assert excinfo.value.status_code == 401 and excinfo.value.body["code"] == "invalid_api_key"
    assert httpx.get(app.url + "v1/models").status_code == 401
    assert httpx.get(app.url + "health").status_code == 200  # health needs no key


@pytest.mark.parametrize("overrides, error, status, param", [
    (dict(input="a. " * 1000), openai.APIStatusError, 413, "max_text_chars"),
    (dict(speed=5.0), openai.BadRequestError, 400, "speed"),
    (dict(response_format="aac"), openai.BadRequestError, 400, "response_format"),
    (dict(voice="nobody-here"), openai.BadRequestError, 400, "voice"),
    (dict(model="no-such-model"), openai.NotFoundError, 404, "model"),
])
def test_limits_and_mistakes_are_openai_style_json(client, overrides, error, status, param):
    request = dict(model="omnivoice", voice="alloy", input=TEXT, response_format="wav")
    request.update(overrides)
    with pytest.raises(error) as excinfo:
        client.audio.speech.create(**request)
    assert excinfo.value.status_code == status
    body = excinfo.value.body
    assert body["param"] == param and body["message"] and "Traceback" not in body["message"]


def _wait_idle(app, timeout=15.0) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        state = health(app)["queue"]
        if state["running"] == 0 and state["waiting"] == 0 or time.monotonic() > deadline:
            return state
        time.sleep(0.1)


def test_busy_is_a_429_json_error_and_a_disconnect_stops_the_engine(app, client):
    """Queue of one: one runs, one waits, the third is refused; closing the streams stops both."""
    long = dict(model="omnivoice", voice="alloy", input=STREAM_TEXT * 3, response_format="pcm",
                extra_body={"stream_format": "audio", "steps": 16, "seed": 3})  # 4 s chunks
    before = _wait_idle(app)
    first = client.audio.speech.with_streaming_response.create(**long)
    running = first.__enter__()                      # the headers came: it holds the engine
    release = threading.Event()

    def second():
        with client.audio.speech.with_streaming_response.create(**long):
            release.wait(120)                        # holds its place in the queue until told

    thread = threading.Thread(target=second, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while health(app)["queue"]["waiting"] < 1:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    with pytest.raises(openai.RateLimitError) as excinfo:
        client.audio.speech.create(**dict(long, extra_body=FAST))
    assert excinfo.value.status_code == 429 and excinfo.value.body["code"] == "busy"
    assert next(running.iter_bytes())                # the first one streams audio
    assert int(running.headers["x-omnivoice-chunks"]) > 1 and health(app)["queue"]["running"] == 1
    first.__exit__(None, None, None)                 # ... and its client goes away mid-stream
    release.set()                                    # so does the waiting one
    thread.join(60)
    state = _wait_idle(app)
    assert state["running"] == 0 and state["waiting"] == 0
    assert state["cancelled"] >= before["cancelled"] + 2 and state["refused"] >= before["refused"] + 1, state
    assert state["finished"] == before["finished"], state
    assert state["steps_after_cancel"] - before["steps_after_cancel"] <= 2  # at most the step in flight, each
    steps = state["steps"]
    time.sleep(1.0)
    assert health(app)["queue"]["steps"] == steps    # nothing runs after the cancel


def test_same_request_same_codes_through_v1_and_gradio_speak(app):
    client = openai.OpenAI(base_url=app.url + "v1", api_key=KEY, max_retries=0)
    # stream=false: one whole file, the exact output of the text's one plan (with its codes digest)
    raw = client.audio.speech.with_raw_response.create(model="omnivoice", voice="auto", input=TEXT,
                                                       response_format="wav",
                                                       extra_body={"steps": 8, "seed": 11, "stream": False})
    http_digest = raw.headers["x-omnivoice-codes-sha256"]
    assert raw.headers["x-omnivoice-seed"] == "11"
    gradio = Client(app.url, verbose=False)
    path, seed, details = gradio.predict(text=TEXT, num_step=8, seed=11, api_name="/speak")
    assert seed == 11 and details["seed"] == 11 and details["codes_sha256"] == http_digest
    http_audio, _ = sf.read(io.BytesIO(raw.content))
    np.testing.assert_array_equal(sf.read(path)[0], http_audio)


def test_gradio_speak_takes_the_voice_names_gradio_voices_lists(app):
    gradio = Client(app.url, verbose=False)
    listed = [item["id"] for item in gradio.predict(api_name="/voices")]
    assert "alloy" in listed
    _, seed, details = gradio.predict(text=TEXT, voice="alloy", num_step=2, seed=5, api_name="/speak")
    assert seed == 5 and details["seed"] == 5


def test_an_api_key_guards_the_page_and_the_gradio_api_by_default(tiny_fp32_folder, tmp_path):
    """Issue 43 item 7: with --api-key the default scope is all (v1 alone is an opt-in)."""
    server = AppProcess(["--model", str(tiny_fp32_folder), "--precision", "fp32", "--api-key", KEY], tmp_path)
    try:
        wait_model_loaded(server)
        with pytest.raises(Exception):  # noqa: B017 - gradio_client refuses in its own ways (AppError, HTTP errors)
            Client(server.url, verbose=False).predict(api_name="/models")
        with pytest.raises(Exception):  # noqa: B017 - as above
            Client(server.url, verbose=False, auth=("anyone", "wrong")).predict(api_name="/models")
        models = Client(server.url, verbose=False, auth=("anyone", KEY)).predict(api_name="/models")
        assert models["state"] == "ready"
        assert httpx.get(server.url + "v1/models").status_code == 401   # /v1 still wants the Bearer key
    finally:
        server.stop()


def test_omnivoice_serve_is_the_api_without_the_ui(tiny_fp32_folder, tmp_path):
    """``python -m omnivoice_demo serve``: the same routes on their own server; the port opens while the model
    loads (/health answers, /ready says when it is loaded: issue 52)."""
    import os
    import subprocess
    import sys

    from tests.support.app_server import ROOT, free_port

    port = free_port()
    log = open(tmp_path / "serve.log", "w")
    server = subprocess.Popen([sys.executable, "-m", "omnivoice_demo", "serve", "--model", str(tiny_fp32_folder),
                               "--port", str(port), "--max-queue", "2"], cwd=ROOT, stdout=log,
                              stderr=subprocess.STDOUT,
                              env=dict(os.environ, HF_HUB_OFFLINE="1", OMNIVOICE_DATA=str(tmp_path / "data")))
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            assert server.poll() is None and time.monotonic() < deadline, (tmp_path / "serve.log").read_text()
            try:
                ready = httpx.get(base + "/ready", timeout=2)
                if ready.status_code == 200:
                    break
                assert ready.status_code == 503 and ready.headers["Retry-After"] == "5", ready.text
            except httpx.HTTPError:
                pass
            time.sleep(0.3)
        state = httpx.get(base + "/health", timeout=2).json()
        assert state["model_loaded"] and state["queue"]["max_waiting"] == 2
        client = openai.OpenAI(base_url=base + "/v1", api_key="none", max_retries=0, timeout=120)
        audio, rate = decode(client.audio.speech.create(model="omnivoice", voice="auto", input=TEXT,
                                                        response_format="flac",
                                                        extra_body=dict(FAST, stream=False)).read(), "flac")
        assert rate == 24000 and len(audio) > 0
        assert httpx.get(base + "/").status_code == 404  # no UI here
        assert 'omnivoice_requests_total{method="POST",route="/v1/audio/speech",status="200"} 1.0' in \
            httpx.get(base + "/metrics").text
    finally:
        server.terminate()
        server.wait(30)
        log.close()


def test_omnivoice_serve_stops_with_one_line_when_its_model_cannot_be_loaded(tmp_path):
    """The port opens before the model loads (issue 52); a load that fails still ends the server, with its
    reason on one line (no UI could load another model)."""
    import os
    import subprocess
    import sys

    from tests.support.app_server import ROOT, free_port

    done = subprocess.run([sys.executable, "-m", "omnivoice_demo", "serve", "--model", str(tmp_path / "none"),
                           "--port", str(free_port()), "--offline"], cwd=ROOT, capture_output=True, text=True,
                          timeout=180, env=dict(os.environ, HF_HUB_OFFLINE="1", OMNIVOICE_DATA=str(tmp_path / "d")))
    assert done.returncode == 2, done.stderr[-2000:]
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("error: the model was not loaded: ") and "none" in last, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
