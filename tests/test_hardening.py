"""Issue 21: the probe's cases that got through, each as a test that failed before its fix.

Numbered as the issue's items: 1 the texts that enter the prompt, 3 voice files written atomically and
the start-up sweep, 9 malformed inputs as 4xx, and the others below.  The engine runs the tiny fp32
folder in process; the HTTP API is the real router on a FastAPI test client (no subprocess).
"""

from __future__ import annotations

import dataclasses
import json
import pathlib

import numpy as np
import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from omnivoice_demo.engine.config import Limits
from omnivoice_demo.errors import InvalidInput, ResourceLimitExceeded
from omnivoice_demo.engine.voice import MAX_META_CHARS, Voice
from tests.test_vocabulary import a_voice

LONG_TRANSCRIPT = "word " * 2000    # 10,000 characters: the probe sent 2,000 to 16,000 words


@pytest.fixture(scope="module")
def engine(tiny_fp32_folder):
    from omnivoice_demo.engine.loop import OmniVoiceEngine

    return OmniVoiceEngine(tiny_fp32_folder, verify="size", calibrate=False, backbone="fp32")


@pytest.fixture
def limited(engine):
    """The module's engine with other limits for one test (restored after it)."""
    original = engine.limits

    def set_limits(**fields):
        engine.limits = dataclasses.replace(original, **fields)
        return engine
    yield set_limits
    engine.limits = original


# --- item 1: every text that enters the prompt counts against the limits ------------------------

def test_a_long_reference_transcript_is_refused_before_any_work(engine):
    voice = a_voice(transcript=LONG_TRANSCRIPT)
    with pytest.raises(ResourceLimitExceeded, match="transcript.*max_text_chars") as caught:
        engine.prepare("Hi.", voice=voice, num_step=1)
    assert caught.value.param == "max_text_chars"


def test_prompt_tokens_are_bounded_in_total(engine, limited):
    """Text and transcript each within the characters, together over the prompt's tokens."""
    text, transcript = "one two three four five six. " * 10, "seven eight nine ten eleven. " * 10
    plan = engine.prepare(text, voice=a_voice(transcript=transcript), num_step=1)
    tokens = engine.prompt_tokens(plan)
    assert tokens > len(engine.tokenizer.encode(text).ids) + len(engine.tokenizer.encode(transcript).ids)
    limited(max_prompt_tokens=tokens - 1)
    with pytest.raises(ResourceLimitExceeded, match="max_prompt_tokens") as caught:
        engine.prepare(text, voice=a_voice(transcript=transcript), num_step=1)
    assert caught.value.param == "max_prompt_tokens"
    limited(max_prompt_tokens=tokens)
    engine.prepare(text, voice=a_voice(transcript=transcript), num_step=1)


def test_an_instruct_and_a_clone_transcript_count_too(engine):
    with pytest.raises(ResourceLimitExceeded, match="instruct"):
        engine.prepare("Hi.", instruct="female, " * 1000)
    audio = np.zeros(24000, dtype=np.float32)
    with pytest.raises(ResourceLimitExceeded, match="transcript"):
        engine.clone_voice(audio, 24000, transcript=LONG_TRANSCRIPT)


def test_a_voice_file_with_a_huge_meta_is_refused_before_it_is_read(tmp_path):
    meta = {"format_version": 1, "transcript": "x" * (MAX_META_CHARS + 10), "rms": 0.1}
    path = tmp_path / "big.npz"
    np.savez(path, codes=a_voice().codes, meta=np.array(json.dumps(meta)))
    with pytest.raises(InvalidInput, match="meta"):
        Voice.load(path)


def test_a_loaded_voice_with_a_long_transcript_is_refused(engine, tmp_path):
    path = a_voice(transcript=LONG_TRANSCRIPT).save(tmp_path / "long.npz")
    with pytest.raises(ResourceLimitExceeded, match="transcript"):
        engine.load_voice(path)


@pytest.mark.parametrize("field", ["text", "instruct", "transcript"])
def test_a_lone_surrogate_is_invalid_input_without_echoing_it(engine, field):
    bad = "Hello \ud800 there."
    kwargs = {"text": "Hi.", "num_step": 1}
    if field == "text":
        kwargs["text"] = bad
    elif field == "instruct":
        kwargs["instruct"] = bad
    else:
        kwargs["voice"] = a_voice(transcript=bad)
    with pytest.raises(InvalidInput, match="not valid Unicode") as caught:
        engine.prepare(**kwargs)
    str(caught.value).encode("utf-8")  # the message itself can be sent


# --- item 3: voice files are written whole or not at all; unreadable ones are swept aside -----------

def _fail_midway(error):
    """An ``np.savez`` that writes some bytes and then fails (a kill or a full disk in the middle)."""
    def savez(handle, **arrays):
        handle.write(b"PK\x03\x04 half a voice")
        raise error
    return savez


@pytest.mark.parametrize("error", [OSError(28, "No space left on device"), KeyboardInterrupt()])
def test_a_voice_save_that_fails_midway_leaves_the_old_file(tmp_path, monkeypatch, error):
    from omnivoice_demo.studio import VoiceLibrary

    library = VoiceLibrary(tmp_path / "voices")
    library.save(a_voice(transcript="The first one."), "Anna")
    before = library.path("Anna").read_bytes()
    monkeypatch.setattr(np, "savez", _fail_midway(error))
    expected = (InvalidInput, "full") if isinstance(error, OSError) else (KeyboardInterrupt, None)
    with pytest.raises(expected[0], match=expected[1]):
        library.save(a_voice(transcript="The second one."), "Anna", overwrite=True)
    with pytest.raises(expected[0]):
        a_voice().save(tmp_path / "voices" / "Carl.npz")
    monkeypatch.undo()
    assert library.path("Anna").read_bytes() == before
    assert library.names() == ["Anna"] and sorted(p.name for p in (tmp_path / "voices").iterdir()) == ["Anna.npz"]


def test_a_read_only_voice_folder_is_a_clear_error(tmp_path, monkeypatch):
    """(Tests run as root here, where chmod cannot make a folder read-only: the system's answer is planted.)"""
    import errno

    from omnivoice_demo.storage import atomic
    from omnivoice_demo.studio import VoiceLibrary

    def read_only(*args, **kwargs):
        raise OSError(errno.EROFS, "Read-only file system")
    monkeypatch.setattr(atomic.tempfile, "mkstemp", read_only)
    with pytest.raises(InvalidInput, match="read-only") as caught:
        VoiceLibrary(tmp_path / "voices").save(a_voice(), "Bob")
    assert str(tmp_path) not in str(caught.value)


def test_the_start_up_sweep_quarantines_unreadable_voices(tmp_path):
    from omnivoice_demo.studio import VoiceLibrary

    library = VoiceLibrary(tmp_path / "voices", private=True)
    library.save(a_voice(), "Good", session="api")
    folder = library.folder("api")
    (folder / "Empty.npz").write_bytes(b"")                       # kill -9 during a write in place
    (folder / "Cut.npz").write_bytes(library.path("Good", "api").read_bytes()[:4096][:200])  # a full disk
    (folder / ".Good-abc123.part").write_bytes(b"unfinished")
    assert set(library.names("api")) == {"Good", "Empty", "Cut"}
    moved = library.sweep()
    assert sorted(p.name.split(".npz")[0] for p in moved) == ["Cut", "Empty"]
    assert library.names("api") == ["Good"] and not list(folder.glob("*.part"))
    assert all(p.is_relative_to(tmp_path / "voices" / "quarantine") for p in moved)
    library.save(a_voice(), "Empty", session="api", overwrite=False)  # the name is free again
    assert library.load("Empty", "api").transcript == "Hello there."


# --- item 9: malformed requests are 4xx with a message, never a 500 ----------------------------------

KEY = "hardening-key"


@pytest.fixture
def api(engine, tmp_path):
    """The HTTP API's router in process, over the tiny engine, a voice library in tmp_path and a key."""
    from omnivoice_demo.api.routes import ApiContext, build_router
    from omnivoice_demo.studio import EngineService, ModelManager, VoiceLibrary

    models = ModelManager()
    models.add(engine, label="tiny")
    context = ApiContext(models=models, voices=VoiceLibrary(tmp_path / "voices"), service=EngineService(),
                         api_key=KEY)
    app = FastAPI()
    app.include_router(build_router(context))
    client = TestClient(app, raise_server_exceptions=False)
    client.headers["Authorization"] = f"Bearer {KEY}"
    client.context = context
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


def _patched_npz(tmp_path, change) -> pathlib.Path:
    """A good voice file with ``change(bytearray, offset_of_local_header, offset_of_central_entry)`` applied."""
    path = a_voice().save(tmp_path / "patched.npz")
    data = bytearray(path.read_bytes())
    local, central = data.find(b"PK\x03\x04"), data.find(b"PK\x01\x02")
    change(data, local, central)
    path.write_bytes(bytes(data))
    return path


def _encrypted(data, local, central):
    data[local + 6] |= 1      # general purpose flag: bit 0, encrypted
    data[central + 8] |= 1


def _method_99(data, local, central):
    data[local + 8:local + 10] = (99).to_bytes(2, "little")     # compression method 99 (AES)
    data[central + 10:central + 12] = (99).to_bytes(2, "little")


@pytest.mark.parametrize("change", [_encrypted, _method_99], ids=["encrypted", "compression-99"])
def test_an_npz_that_zipfile_cannot_open_is_invalid_input(tmp_path, change):
    with pytest.raises(InvalidInput, match="cannot be read"):
        Voice.load(_patched_npz(tmp_path, change))


def _run_cli(*args):
    import os
    import subprocess
    import sys

    root = pathlib.Path(__file__).resolve().parent.parent
    env = dict(os.environ, PYTHONPATH=str(root), HF_HUB_OFFLINE="1")
    return subprocess.run([sys.executable, "-m", "omnivoice_demo", *args], capture_output=True, cwd=root, env=env,
                          timeout=120)


@pytest.mark.parametrize("target,message", [("link", b"not a regular file"), ("x.raw", b"'.raw' is not an audio")])
def test_the_cli_checks_its_output_before_synthesis(tmp_path, target, message):
    if target == "link":
        (tmp_path / "out.wav").symlink_to("/dev/full")
        target = "out.wav"
    done = _run_cli("synth", "--model", str(tmp_path / "no-model"), "--text", "Hello.",
                    "--output", str(tmp_path / target))
    assert done.returncode == 2 and message in done.stderr, done.stderr


# --- item 2: the benchmark goes through the one queue and stops when cancelled ------------------------

@pytest.fixture
def studio(engine, tmp_path):
    from omnivoice_demo.studio import EngineService, ModelManager, Studio, VoiceLibrary

    models = ModelManager()
    models.add(engine, label="tiny")
    return Studio(models=models, voices=VoiceLibrary(tmp_path / "voices"), out_dir=tmp_path / "out",
                  service=EngineService(max_running=1, max_waiting=2))


def test_a_cancelled_benchmark_stops_within_a_step_and_frees_the_model(studio):
    from omnivoice_demo.ui.tabs.benchmark import benchmark_updates

    updates = benchmark_updates(studio, [], "long", 64, 10)   # many minutes if it ran to the end
    seen = [next(updates) for _ in range(3)]                  # queued and running: steps go by
    assert studio.service.stats()["running"] == 1, seen
    updates.close()                                           # the visitor cancels (or goes away)
    assert studio.service.wait_idle(timeout=30)
    stats = studio.service.stats()
    assert stats["cancelled"] == 1 and stats["steps_after_cancel"] <= 1, stats
    assert_the_model_is_free(studio)


def assert_the_model_is_free(studio):
    """Nobody holds the active model's lock, and the next job in the queue runs to its end."""
    loaded = studio.models.get()
    assert loaded.lock.acquire(timeout=1)
    loaded.lock.release()
    job = studio.service.submit(lambda: loaded.engine.stream("Next.", num_step=1), label="next")
    assert job.wait(timeout=60) and job.state == "finished"


def test_a_benchmark_waits_its_turn_in_the_queue(studio):
    from omnivoice_demo.errors import Busy
    from omnivoice_demo.ui.tabs.benchmark import benchmark_updates

    running = [benchmark_updates(studio, [], "long", 64, 10) for _ in range(3)]
    for updates in running:
        next(updates)
    try:
        with pytest.raises(Busy):
            next(benchmark_updates(studio, [], "short", 1, 1))    # 1 running + 2 waiting is the most
    finally:
        for updates in running:
            updates.close()
    assert studio.service.wait_idle(timeout=30)


def test_a_cancelled_quality_run_stops_within_a_step_and_frees_the_model(studio, tmp_path, monkeypatch):
    """The Benchmark tab's "quality against the exact model" goes through the same queue (issue 20)."""
    import tempfile

    from omnivoice_demo.eval.quick import QualityProgress
    from omnivoice_demo.ui.tabs.benchmark import quality_updates

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    updates = quality_updates(studio, [], ["balanced", "fast", "streaming"], 5, False)  # 20 generations
    seen = [next(updates) for _ in range(3)]                  # running: a generation starts, steps go by
    assert studio.service.stats()["running"] == 1, seen
    assert all(isinstance(update, QualityProgress) for update in seen)
    assert seen[0].message == "Generating exact en-weather" and seen[-1].message.endswith("of 32"), seen
    assert list((tmp_path / "tmp").iterdir())                 # the run's folder
    updates.close()                                           # the visitor cancels (or goes away)
    assert studio.service.wait_idle(timeout=30)
    stats = studio.service.stats()
    assert stats["cancelled"] == 1 and stats["steps_after_cancel"] <= 1, stats
    assert not list((tmp_path / "tmp").iterdir())             # and it is gone
    assert_the_model_is_free(studio)


def test_a_quality_run_waits_its_turn_in_the_queue(studio):
    from omnivoice_demo.errors import Busy
    from omnivoice_demo.ui.tabs.benchmark import quality_updates

    running = [quality_updates(studio, [], ["balanced", "fast", "streaming"], 5, False) for _ in range(3)]
    first = [next(updates) for updates in running]
    try:
        assert [update.message for update in first[1:]] == ["Waiting: 1 in the queue", "Waiting: 2 in the queue"]
        with pytest.raises(Busy):
            next(quality_updates(studio, [], ["fast"], 1, False))  # 1 running + 2 waiting is the most
    finally:
        for updates in running:
            updates.close()
    assert studio.service.wait_idle(timeout=30)
    assert studio.service.stats()["cancelled"] == 3


# --- items 5 and 4: bodies are counted as they arrive; voices per owner are capped --------------------

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


def test_voices_per_owner_are_capped(tmp_path):
    from omnivoice_demo.studio import VoiceLibrary

    library = VoiceLibrary(tmp_path / "voices", private=True, max_voices=3)
    for name in ("A", "B", "C"):
        library.save(a_voice(), name, session="api")
    with pytest.raises(ResourceLimitExceeded, match="3 saved voices") as caught:
        library.save(a_voice(), "D", session="api")
    assert caught.value.param == "max_voices"
    library.save(a_voice(transcript="Replaced."), "C", session="api", overwrite=True)  # replacing one is no new voice
    library.save(a_voice(), "D", session="other")                        # another owner has room
    library.delete("A", session="api")
    library.save(a_voice(), "D", session="api")


# --- item 6: outputs cannot be guessed; a Gradio session cannot name the HTTP API's voices -------------

def test_output_names_carry_a_random_token(tmp_path):
    from omnivoice_demo.storage.outputs import OutputFolder

    folder = OutputFolder(tmp_path / "out")
    first, second = folder.path("omnivoice-20260101-120000-speak-42-job2", ".wav"), \
        folder.path("omnivoice-20260101-120000-speak-42-job2", ".wav")
    assert first != second and first.parent == tmp_path / "out"
    token = first.name.removeprefix("omnivoice-20260101-120000-speak-42-job2-").removesuffix(".wav")
    assert len(token) >= 24 and int(token, 16) >= 0   # 96 random bits


def test_a_gradio_session_named_api_does_not_list_the_http_apis_voices(tmp_path):
    import types

    from omnivoice_demo.api.routes import API_VOICE_SESSION
    from omnivoice_demo.studio import VoiceLibrary, session_of

    library = VoiceLibrary(tmp_path / "voices", private=True)
    library.save(a_voice(), "Made with the key", session=API_VOICE_SESSION)
    visitor = session_of(types.SimpleNamespace(session_hash=API_VOICE_SESSION))
    assert library.names(visitor) == [] and library.names(API_VOICE_SESSION) == ["Made with the key"]
    assert session_of(None) is None


# --- item 7: batch keys on the model's content, takes the limit flags, and a bad row fails alone ---------

def test_a_batch_items_key_changes_when_the_folders_weights_do(tmp_path, tiny_fp32_folder):
    import shutil

    from omnivoice_demo.batch.worker import ModelSpec

    folder = tmp_path / "model"
    shutil.copytree(tiny_fp32_folder, folder)
    before = ModelSpec(model=str(folder)).identity()
    from omnivoice_demo.storage.manifest import MANIFEST_NAME

    manifest = json.loads((folder / MANIFEST_NAME).read_text())
    manifest["replaced"] = "other weights at the same path"
    (folder / MANIFEST_NAME).write_text(json.dumps(manifest))
    assert ModelSpec(model=str(folder)).identity() != before


def test_batch_honours_the_limit_flags():
    from omnivoice_demo.cli.main import build_parser
    from omnivoice_demo.batch.cli import limits_from_arguments

    parse = build_parser().parse_args
    plain = limits_from_arguments(parse(["batch", "--input", "x.jsonl", "--output", "out"]))
    assert plain == Limits.local()      # a batch's default: one's own machines
    flagged = limits_from_arguments(parse(["batch", "--input", "x.jsonl", "--output", "out",
                                           "--max-text-chars", "300"]))
    assert flagged.max_text_chars == 300


@pytest.mark.parametrize("voice", ["/proc/self/mem", "/dev/zero"])
def test_a_voice_path_that_is_no_file_is_invalid_input(voice):
    with pytest.raises(InvalidInput, match="not a regular file|cannot be read|does not exist"):
        Voice.load(voice)
