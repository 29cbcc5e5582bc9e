"""The sentence check (``guard``): a planted recogniser mis-transcribes chosen takes.

``Planted`` implements the recogniser's interface (``transcribe(audio, rate) -> Transcript``)
and is given to the engine as any recogniser is (``OmniVoiceEngine(..., recognizer=...)``); it
answers each call from a script, so a test decides which takes fail and by how much.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from omnivoice_demo.asr import LazyRecognizer, Transcript
from omnivoice_demo.settings.generation import GenerationConfig
from omnivoice_demo.settings.limits import Limits
from omnivoice_demo.engine.events import ChunkEvent, GenerationResult, StepEvent
from omnivoice_demo.engine.guard import audio_problems
from omnivoice_demo.engine.loop import OmniVoiceEngine
from omnivoice_demo.errors import InvalidInput, ModelNotAvailable, ResourceLimitExceeded
from tests.support.signals import speech_like

TEXT = "The first sentence is here. And then a second sentence follows it, somewhat longer than the first one."
#: two chunks (sentence streaming), greedy so that takes differ only by the seed's position choices
SETTINGS = dict(sentence_streaming=True, num_step=4, seed=7)


class Planted:
    """A recogniser that answers from a script, one transcript per call, and records the audio it heard."""

    def __init__(self):
        self.script: list[str] = []
        self.heard: list[np.ndarray] = []

    def transcribe(self, audio, sample_rate, language=None) -> Transcript:
        self.heard.append(np.asarray(audio).copy())
        if not self.script:
            raise AssertionError("the planted recogniser was called more often than scripted")
        return Transcript(text=self.script.pop(0), language="en", seconds=0.0)


@pytest.fixture(scope="module")
def planted():
    return Planted()


@pytest.fixture(scope="module")
def guarded(tiny_fp32_folder, planted):
    return OmniVoiceEngine(tiny_fp32_folder, verify="size", calibrate=False, backbone="fp32", recognizer=planted)


@pytest.fixture(autouse=True)
def _fresh(planted, monkeypatch):
    planted.script, planted.heard = [], []
    # the tiny random model's audio is noise: the audio's own checks are tested on signals below, and here
    # only what the planted transcripts decide counts
    monkeypatch.setattr("omnivoice_demo.engine.guard.audio_problems", lambda audio, frames: ())


def chunks_of(engine) -> list[str]:
    return engine.prepare(TEXT, **SETTINGS).chunks


def events(engine, **overrides):
    return list(engine.stream(TEXT, **dict(SETTINGS, **overrides)))


def takes_codes(evts) -> dict[tuple[int, int], np.ndarray]:
    """(chunk, take) -> the take's final codes, from the step events."""
    return {(e.chunk, e.take): e.codes for e in evts if isinstance(e, StepEvent)}


def test_with_the_guard_off_nothing_is_transcribed_and_the_output_is_unchanged(guarded, planted):
    plain = events(guarded)
    assert planted.heard == []
    assert plain[-1].checks == [] and all(e.check is None for e in plain if isinstance(e, ChunkEvent))
    # the guard on, every take passing: the same codes and audio as without it (take 1 is the plain draw)
    planted.script = list(chunks_of(guarded))
    checked = events(guarded, guard=True)
    assert len(planted.heard) == 2 and planted.script == []
    for a, b in zip(plain[-1].codes, checked[-1].codes):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(plain[-1].audio, checked[-1].audio)
    assert [c.kept for c in checked[-1].checks] == [1, 1] and all(c.passed for c in checked[-1].checks)


def test_a_failing_chunk_is_retried_and_the_passing_take_is_kept(guarded, planted):
    first, second = chunks_of(guarded)
    planted.script = ["something else entirely", "The first", first, second]
    evts = events(guarded, guard=True, guard_tries=3)
    result = evts[-1]
    assert isinstance(result, GenerationResult)
    check0, check1 = result.checks
    assert [t.number for t in check0.takes] == [1, 2, 3] and check0.kept == 3 and check0.passed
    assert check0.takes[0].cer > 0.5 and 0 < check0.takes[1].cer < 1 and check0.takes[2].cer == 0
    assert [t.seed for t in check0.takes] == [None, 8, 9]          # the next seeds after 7
    assert len(check1.takes) == 1 and check1.kept == 1
    codes = takes_codes(evts)
    np.testing.assert_array_equal(result.codes[0], codes[(0, 3)])   # the kept take is what comes out
    assert not np.array_equal(codes[(0, 1)], codes[(0, 3)])
    # the kept take's audio is the one the recogniser passed, and the chunk is sent once, after its last take
    chunk_events = [e for e in evts if isinstance(e, ChunkEvent)]
    assert [e.chunk for e in chunk_events] == [0, 1]
    np.testing.assert_array_equal(chunk_events[0].audio, planted.heard[2])
    assert chunk_events[0].check is check0
    order = [(e.chunk, getattr(e, "take", None), e.kind) for e in evts[:-1]]
    assert order.index((0, None, "chunk")) > max(i for i, o in enumerate(order) if o[:2] == (0, 3))
    assert order.index((0, None, "chunk")) < min(i for i, o in enumerate(order) if o[0] == 1)


def test_takes_are_bounded_and_the_best_failing_take_is_kept(guarded, planted):
    first, second = chunks_of(guarded)
    planted.script = ["nothing like it", "The first sentence", "no", second]
    result = events(guarded, guard=True, guard_tries=3, guard_cer=0.1)[-1]
    check0 = result.checks[0]
    assert len(check0.takes) == 3 and check0.kept == 2 and not check0.passed
    assert check0.cer == min(t.cer for t in check0.takes)
    assert planted.script == []                         # 3 takes for chunk 0, then 1 for chunk 1: no more
    assert result.checks[1].passed
    as_dict = check0.to_dict()
    assert as_dict["kept"] == 2 and len(as_dict["takes"]) == 3 and as_dict["passed"] is False


def test_one_try_means_no_retry(guarded, planted):
    planted.script = ["wrong", "wrong"]
    result = events(guarded, guard=True, guard_tries=1)[-1]
    assert [len(c.takes) for c in result.checks] == [1, 1] and not any(c.passed for c in result.checks)


def test_a_cancel_mid_retry_stops_the_retries(guarded, planted):
    planted.script = ["wrong", "wrong", "wrong"]
    stream = guarded.stream(TEXT, guard=True, guard_tries=3, **SETTINGS)
    seen = []
    for event in stream:
        seen.append(event)
        if isinstance(event, StepEvent) and event.take == 2:
            stream.close()  # what the queue does on cancel
            break
    assert len(planted.heard) == 1 and planted.script == ["wrong", "wrong"]
    assert not any(isinstance(e, ChunkEvent) for e in seen)
    with pytest.raises(StopIteration):
        next(stream)


def test_the_queues_cancel_stops_the_retries(guarded, planted):
    """The takes run in the request's one job: cancelling it mid-retry ends the job with no further take."""
    from omnivoice_demo.studio import EngineService

    service = EngineService()
    planted.script = ["wrong", "wrong", "wrong"]
    plan = guarded.prepare(TEXT, guard=True, guard_tries=3, **SETTINGS)
    job = service.submit(lambda: guarded.run(plan), label="test")
    for event in job.events():
        if isinstance(event, StepEvent) and event.take == 2:
            job.cancel()
    assert job.wait(60) and job.state == "cancelled"
    assert len(planted.heard) == 1 and service.stats()["running"] == 0


@pytest.mark.parametrize("setting, value", [("guard_cer", math.nan), ("guard_cer", -0.1), ("guard_cer", 1.5),
                                            ("guard_tries", 0), ("guard_tries", 9), ("guard_tries", 2.5)])
def test_bad_guard_settings_are_named(guarded, setting, value):
    with pytest.raises(InvalidInput, match=setting):
        guarded.prepare(TEXT, guard=True, **{setting: value})


def test_the_takes_count_against_the_request_limit(guarded, planted):
    seconds = guarded.prepare(TEXT).target_frames / 25
    old = guarded.limits
    guarded.limits = Limits(max_audio_seconds=seconds * 2.5)
    try:
        guarded.prepare(TEXT, guard=True, guard_tries=2)        # 2 x planned: within
        with pytest.raises(ResourceLimitExceeded, match="max_audio_seconds") as caught:
            guarded.prepare(TEXT, guard=True, guard_tries=3)    # 3 x planned: over
        assert "guard_tries" in str(caught.value)
        guarded.prepare(TEXT, guard=False)
    finally:
        guarded.limits = old


def test_no_recogniser_refuses_the_guard_before_any_work(tiny_fp32_folder, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("OMNIVOICE_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("OMNIVOICE_ASR_MODEL", raising=False)
    engine = OmniVoiceEngine(tiny_fp32_folder, verify="size", calibrate=False, backbone="fp32",
                             recognizer=LazyRecognizer("owner/not-cached", offline=True))
    with pytest.raises(ModelNotAvailable) as caught:
        engine.prepare(TEXT, guard=True)
    message = str(caught.value)
    assert "sentence check" in message and "download" in message and "guard" in message
    engine.prepare(TEXT)   # without the check nothing is loaded


# --- what a recogniser cannot see, on measured signals ------------------------------------

def test_audio_problems_of_clean_short_gapped_and_clipped_speech():
    rate = 24000
    speech = speech_like(3.0, rate, seed=1)[0]
    frames = int(3.0 * 25)
    assert audio_problems(speech, frames) == ()
    short = np.concatenate([speech[: rate // 2], np.zeros(int(2.5 * rate), np.float32)])
    assert audio_problems(short, frames) == ("short",)
    gapped = np.concatenate([speech[: rate], np.zeros(int(1.5 * rate), np.float32), speech[: rate]])
    assert audio_problems(gapped, int(3.5 * 25)) == ("silence",)
    clipped = np.clip(speech * 8, -1, 1)
    assert "clipped" in audio_problems(clipped, frames)
    assert audio_problems(np.zeros(3 * rate, np.float32), frames) == ("short",)


# --- batch: the per-item record and the summary's counts ----------------------------------

def test_the_batch_records_each_items_checks_and_counts_retries(tiny_fp32_folder, planted, tmp_path):
    import dataclasses
    import json

    from omnivoice_demo.batch.items import read_items
    from omnivoice_demo.batch.local import InlineBackend
    from omnivoice_demo.batch.plan import BatchPlan
    from omnivoice_demo.batch.runner import run_batch
    from omnivoice_demo.batch.worker import Job, ModelSpec

    @dataclasses.dataclass(frozen=True)
    class PlantedSpec(ModelSpec):
        def open(self, threads):   # the batch's engine, given the planted recogniser as any engine is given one
            return OmniVoiceEngine(self.folder, verify="size", calibrate=False, backbone="fp32", recognizer=planted)

    texts = ["A short first item.", "And a second one."]
    source = tmp_path / "items.jsonl"
    source.write_text("".join(json.dumps({"id": f"item{i}", "text": t, "seed": i}) + "\n" for i, t in enumerate(texts)))
    items = read_items(source, base=GenerationConfig(num_step=2, guard=True, guard_tries=2))
    planted.script = ["a hot mist", texts[0], "nothing", "at all"]
    summary = run_batch(BatchPlan(items=tuple(items), job=Job(output=str(tmp_path / "out"))),
                        backend=lambda: InlineBackend(PlantedSpec(folder=str(tiny_fp32_folder))), progress=False).summary
    assert summary.done == 2 and planted.script == []
    assert (summary.checked_chunks, summary.retried_chunks, summary.unpassed_chunks) == (2, 2, 1)
    assert any("2 retried, 1 never passed" in line for line in summary.lines())
    first = json.loads((tmp_path / "out" / "item0.json").read_text())["checks"]
    second = json.loads((tmp_path / "out" / "item1.json").read_text())["checks"]
    assert [(c["kept"], c["passed"], len(c["takes"])) for c in first] == [(2, True, 2)]
    assert [(c["passed"], len(c["takes"])) for c in second] == [(False, 2)]


# --- the HTTP API: the field, the header, the SSE summary ---------------------------------

@pytest.fixture
def api(guarded, tmp_path):
    from omnivoice_demo.studio import VoiceLibrary
    from tests.support.api_client import router_client

    return router_client(guarded, VoiceLibrary(tmp_path / "voices"))


def test_the_http_api_reports_the_checks_in_a_header_and_the_sse_done_event(api, guarded, planted):
    import json

    first, second = chunks_of(guarded)
    body = dict(input=TEXT, guard=True, guard_tries=2, stream=False, response_format="wav", **SETTINGS)
    planted.script = ["Thé fïrst", first, second]
    response = api.post("/v1/audio/speech", json=body)
    assert response.status_code == 200, response.text
    header = response.headers["X-OmniVoice-Checks"]
    header.encode("ascii")                                           # latin-1 safe, whatever the transcripts
    checks = json.loads(header)
    assert [(c["chunk"], c["kept"], c["passed"], len(c["takes"])) for c in checks] == [(0, 2, True, 2),
                                                                                       (1, 1, True, 1)]
    planted.script = ["wrong", "wrong", second]
    # the stream in the non-streamed request's chunks (a stream's default is sentence streaming with a quick start)
    streamed = api.post("/v1/audio/speech", json=dict(body, stream=True, stream_format="sse", sentence_streaming=False))
    done = [json.loads(line[6:]) for line in streamed.text.splitlines() if '"speech.audio.done"' in line][0]
    assert [(c["kept"], c["passed"]) for c in done["checks"]] == [(1, False), (1, True)]
    assert [t["transcript"] for t in done["checks"][0]["takes"]] == ["wrong", "wrong"]
    assert "X-OmniVoice-Checks" not in api.post("/v1/audio/speech", json=dict(body, guard=False)).headers


@pytest.mark.parametrize("field, value", [("guard_cer", 2), ("guard_tries", 0), ("guard", "maybe")])
def test_bad_guard_fields_are_a_400_naming_the_field(api, field, value):
    response = api.post("/v1/audio/speech", json={"input": TEXT, "guard": True, field: value, "stream": False})
    assert response.status_code == 400 and field in response.json()["error"]["message"]


# --- the Wyoming server's option and the command line's flag --------------------------------

def test_the_wyoming_server_checks_each_sentence_with_its_option(guarded, planted, tmp_path):
    import asyncio

    from wyoming.client import AsyncTcpClient
    from wyoming.tts import Synthesize

    from omnivoice_demo.studio import EngineService, ModelManager, VoiceLibrary
    from omnivoice_demo.wyoming.server import WyomingServer, make_context
    from tests.support.app_server import free_port

    models = ModelManager()
    models.add(guarded, label="tiny")
    port = free_port()
    server = WyomingServer(f"tcp://127.0.0.1:{port}", make_context(models, VoiceLibrary(tmp_path / "v"),
                                                                   EngineService(), guard=True)).start_in_thread()
    planted.script = ["not it", "Hello from the guard."]

    async def talk():
        async with AsyncTcpClient("127.0.0.1", port) as client:
            await client.write_event(Synthesize(text="Hello from the guard.").event())
            while True:
                event = await asyncio.wait_for(client.read_event(), 120)
                if event.type in ("audio-stop", "error"):
                    return event.type
    try:
        assert asyncio.run(talk()) == "audio-stop"
    finally:
        server.stop_thread()
    assert len(planted.heard) == 2 and planted.script == []


def test_the_command_lines_have_the_guard_flags():
    import argparse

    from omnivoice_demo.settings.generation import add_config_arguments, config_from_arguments

    parser = argparse.ArgumentParser()
    add_config_arguments(parser)
    config = config_from_arguments(parser.parse_args(["--guard", "--guard-tries", "4", "--guard-cer", "0.1"]))
    assert (config.guard, config.guard_tries, config.guard_cer) == (True, 4, 0.1)
    assert config_from_arguments(parser.parse_args([])).guard is False
