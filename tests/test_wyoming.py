"""The Wyoming server (Home Assistant), driven by the ``wyoming`` library's own client.

A server on 127.0.0.1 (a free port) over a studio core with the tiny fp32 model: describe lists the
voices (one saved here) and languages; synthesize's audio is the engine's for the same text, voice and
seed; the first audio of a three-sentence text arrives before its last sentence is generated; streamed
text is spoken sentence by sentence while it arrives; a disconnect cancels the job; a wrong request is
an ``error`` event; an event that declares a huge length is refused before it is read.
"""

from __future__ import annotations

import asyncio
import sys
import threading
import time

import numpy as np
import pytest
from wyoming.audio import AudioChunk, AudioStart
from wyoming.client import AsyncTcpClient
from wyoming.error import Error
from wyoming.info import Describe, Info
from wyoming.tts import (Synthesize, SynthesizeChunk, SynthesizeStart, SynthesizeStop,
                         SynthesizeVoice)

from omnivoice_demo.text.sentences import sentence_texts
from omnivoice_demo.text.voice_design import resolve_instruct
from omnivoice_demo.errors import InvalidInput
from omnivoice_demo.studio.vocabulary import DESIGNS
from omnivoice_demo.studio.stream_audio import chunk_output, pcm16
from omnivoice_demo.studio import EngineService, ModelManager, VoiceLibrary
from omnivoice_demo.wyoming.requests import parse_request, wyoming_language
from omnivoice_demo.wyoming.server import WyomingServer, make_context, start_beside
from omnivoice_demo.wyoming.text_stream import TextStream

from tests.support.app_server import free_port
from tests.support.planted_normalizer import held_reading  # noqa: F401 - a fixture
from tests.support.signals import speech_like

SAVED = "Test Voice"
SEED = 1234
ONE_SENTENCE = "Hello from Home Assistant."
THREE_SENTENCES = ("The first sentence is here, and it goes on for a while. The second sentence follows it. "
                   "The third sentence comes last.")
TIMEOUT = 120.0


@pytest.fixture(scope="module")
def core(tiny_fp32_folder, tmp_path_factory):
    root = tmp_path_factory.mktemp("wyoming")
    models = ModelManager(cache_dir=root / "cache", offline=True)
    loaded = models.load(str(tiny_fp32_folder), "fp32")
    voices = VoiceLibrary(root / "voices")
    clip = speech_like(3.0, 24000, seed=5)
    with loaded.lock:
        voice = loaded.engine.clone_voice(clip, 24000, "This is the reference clip.")
    voices.save(voice, SAVED)
    return models, voices, EngineService(max_running=1, max_waiting=4)


@pytest.fixture(scope="module")
def server(core):
    models, voices, service = core
    port = free_port()
    running = WyomingServer(f"tcp://127.0.0.1:{port}", make_context(models, voices, service)).start_in_thread()
    running.port = port
    yield running
    running.stop_thread()


@pytest.fixture
def engine(core):
    return core[0].get().engine


def talk(port: int, send, until=("audio-stop", "error"), after=None):
    """Send ``send``'s events, then read events (time received, event) until one of type ``until``.

    ``after(client, received)``, when given, is awaited after each event read (to send more)."""
    async def run():
        async with AsyncTcpClient("127.0.0.1", port) as client:
            for event in send:
                await client.write_event(event.event())
            received = []
            while True:
                event = await asyncio.wait_for(client.read_event(), TIMEOUT)
                assert event is not None, f"the server closed the connection after {[e.type for _, e in received]}"
                received.append((time.monotonic(), event))
                if after is not None:
                    await after(client, received)
                if event.type in until:
                    return received
    return asyncio.run(run())


def audio_of(received) -> bytes:
    return b"".join(AudioChunk.from_event(e).audio for _, e in received if AudioChunk.is_type(e.type))


def synthesize(text: str, voice: str | None = None, **extension) -> Synthesize:
    event = Synthesize(text=text, voice=SynthesizeVoice(name=voice) if voice else None)
    return _Extended(event, extension)


class _Extended:
    """An event with our extension fields (``seed``, ``language``) next to Wyoming's."""

    def __init__(self, eventable, extension: dict):
        self.eventable, self.extension = eventable, extension

    def event(self):
        event = self.eventable.event()
        event.data.update(self.extension)
        return event


def recording_run(engine, monkeypatch, hold=None):
    """Replace ``engine.run`` by one recording each plan and its chunk events' times.

    ``hold(plan, event)``, when given, is called after each chunk event is handed on (to hold the engine)."""
    original = engine.run
    record = {"plans": [], "chunks": [], "closed_early": 0, "original": original}

    def run(plan):
        record["plans"].append(plan)
        finished = False
        try:
            for event in original(plan):
                if event.kind == "chunk":
                    record["chunks"].append((plan, event.chunk, event.num_chunks, time.monotonic()))
                yield event
                if event.kind == "chunk" and hold is not None:
                    hold(plan, event)
            finished = True
        finally:
            if not finished:
                record["closed_early"] += 1

    monkeypatch.setattr(engine, "run", run)
    return record


# --- describe --------------------------------------------------------------------------------------

def test_describe_lists_saved_voices_designs_default_and_languages(server):
    received = talk(server.port, [Describe()], until=("info",))
    info = Info.from_event(received[-1][1])
    (program,) = info.tts
    names = [voice.name for voice in program.voices]
    assert names[0] == SAVED and {"alloy", "whisper", "default"} <= set(names)
    assert program.supports_synthesize_streaming
    from omnivoice_demo.constants import app_version

    assert program.version == app_version() and program.version not in (None, "", "unknown")
    languages = set(program.voices[0].languages)
    assert {"en", "de", "fr", "zh", "ja"} <= languages and all(len(code) == 2 for code in languages)


def test_requests_accept_any_language_by_code_or_name_and_the_seed_extension():
    assert wyoming_language("en-US") == "en" and wyoming_language("pt_BR") == "pt"
    assert wyoming_language("yue") == "yue" and wyoming_language("Cantonese") == "yue"
    assert wyoming_language("German") == "de" and wyoming_language(None) is None
    with pytest.raises(InvalidInput, match="Unknown language"):
        wyoming_language("xx-YY")
    request = parse_request({"text": "x", "voice": {"name": "alloy", "speaker": "42"}, "language": "de-DE"})
    assert (request.voice, request.language, request.seed) == ("alloy", "de", 42)
    assert parse_request({"text": "x", "seed": 7, "voice": {"language": "fr"}}).seed == 7
    with pytest.raises(InvalidInput, match="speaker"):
        parse_request({"text": "x", "voice": {"name": "alloy", "speaker": "Bob"}})
    with pytest.raises(InvalidInput, match="seed"):
        parse_request({"text": "x", "seed": -1})


def test_text_stream_completes_sentences_only_at_a_boundary():
    """A sentence is given out once the splitter cuts after it and no later text can move the cut: 30 bytes of
    whole words have come after it (``text_stream.released_sentences``; more in tests/test_wyoming_text_stream.py)."""
    stream = TextStream("en")
    assert stream.add("It costs 3.") == ""            # "3." may go on as "3.5"
    assert stream.add("5 euros. And th") == ""
    assert stream.add("en?” More") == ""              # "More" may still be "More." or "Moreover"
    assert stream.add(" of it comes later, much later, ") == "It costs 3.5 euros. And then?”"
    assert stream.add("when it is done. ") == ""
    assert stream.finish() == "More of it comes later, much later, when it is done."
    assert stream.total == len("It costs 3.5 euros. And then?” More of it comes later, much later, when it is done. ")
    chinese = TextStream("zh")
    assert chinese.add("你好。再") == "" and chinese.add("见，我们明天一起去公园散步。") == "你好。"
    assert chinese.finish() == "再见，我们明天一起去公园散步。"


# --- synthesize -----------------------------------------------------------------------------------

def test_synthesize_is_the_engines_audio_for_the_same_text_voice_and_seed(server, engine):
    received = talk(server.port, [synthesize(ONE_SENTENCE, SAVED, seed=SEED)])
    types = [event.type for _, event in received]
    assert types[0] == "audio-start" and types[-1] == "audio-stop" and "audio-chunk" in types, types
    start = AudioStart.from_event(received[0][1])
    assert (start.rate, start.width, start.channels) == (24000, 2, 1)
    voice = server.context.voices.load(SAVED)
    # the server's default: the voice assistant's preset (Fast) with a quick start
    expected = engine.generate(ONE_SENTENCE, voice=voice, seed=SEED, sentence_streaming=True, quick_start=1.2,
                               num_step=8, guidance_every=2, prompt_refresh=4)
    assert len(expected.chunks) == 1
    assert audio_of(received) == pcm16(expected.audio)   # one chunk: exactly the engine's result


def test_a_longer_text_is_the_engines_chunks_and_the_design_seed_and_language_are_used(server, engine, monkeypatch):
    record = recording_run(engine, monkeypatch)
    received = talk(server.port, [synthesize(THREE_SENTENCES, "alloy", seed=SEED, language="en-GB")])
    (plan,) = record["plans"]
    assert plan.config.seed == SEED and plan.language == "en" and "female" in plan.instruct
    assert len(plan.chunks) >= 2   # sentence streaming: the first sentence alone
    expected = b"".join(pcm16(chunk_output(event.audio, None, plan.config))
                        for event in record["original"](plan) if event.kind == "chunk")
    assert audio_of(received) == expected


def test_the_first_audio_of_three_sentences_arrives_before_the_last_sentence_is_generated(server, engine,
                                                                                           monkeypatch):
    first_audio = threading.Event()

    def hold(plan, event):
        # hold the engine after the first chunk until the client has its audio (a server that sent the
        # audio only at the end would never get past here; the wait gives up after a minute)
        if event.chunk == 0 and event.num_chunks > 1:
            first_audio.wait(60)

    async def note_audio(client, received):
        if AudioChunk.is_type(received[-1][1].type):
            first_audio.set()

    record = recording_run(engine, monkeypatch, hold)
    received = talk(server.port, [synthesize(THREE_SENTENCES, seed=SEED)], after=note_audio)
    (plan,) = record["plans"]
    assert len(plan.chunks) >= 2 and plan.chunks[-1].endswith("The third sentence comes last.")
    first_chunk_at = next(at for at, event in received if AudioChunk.is_type(event.type))
    last_generated_at = record["chunks"][-1][3]
    assert record["chunks"][-1][1] == len(plan.chunks) - 1
    assert first_chunk_at < last_generated_at, (first_chunk_at, last_generated_at)
    assert received[-1][1].type == "audio-stop"


def test_the_first_sentence_is_generated_while_the_later_ones_are_read_as_words(server, engine, monkeypatch,
                                                                               held_reading):
    """Numbers read as words (Wyoming's default for English): the first sentence's steps start before the later
    sentences are read (a planted normaliser holds each later reading until the engine's first step; reading the
    whole text before planning, the server read it in one call and nothing waited), and the audio comes."""
    first_step, reads = held_reading
    original = engine.run

    def run(plan):
        for event in original(plan):
            if event.kind == "step":
                first_step.set()
            yield event

    monkeypatch.setattr(engine, "run", run)
    text = "The first of 3 sentences is here, and it goes on. The second one has 3 more words. The third ends it."
    received = talk(server.port, [synthesize(text, "alloy", seed=SEED, language="en")])
    assert received[-1][1].type == "audio-stop" and audio_of(received)
    assert reads[0][0].startswith("The first of 3 sentences") and "second" not in reads[0][0]
    later = reads[1:]
    assert later and all(waited for _, waited in later), reads


def test_streamed_text_is_spoken_sentence_by_sentence_while_it_arrives(server, engine, monkeypatch):
    record = recording_run(engine, monkeypatch)
    parts = ["The first sentence is here, and it goes on for a while. The second sentence follows it, slowly. The th",
             "ird sentence comes last, as it should", " be."]
    sent = {"next": 1}

    async def feed(client, received):
        # the next text goes out only once the audio of the sentences completed so far has ended:
        # a server that waited for synthesize-stop would never answer, and the read would time out
        if received[-1][1].type == "audio-stop" and sent["next"] < len(parts):
            await client.write_event(SynthesizeChunk(text=parts[sent["next"]]).event())
            sent["next"] += 1
            if sent["next"] == len(parts):
                await client.write_event(Synthesize(text="".join(parts), voice=None).event())  # the copy for old servers
                await client.write_event(SynthesizeStop().event())

    start = _Extended(SynthesizeStart(), {"seed": SEED})
    received = talk(server.port, [start, SynthesizeChunk(text=parts[0])], until=("synthesize-stopped", "error"),
                    after=feed)
    types = [event.type for _, event in received]
    assert types[-1] == "synthesize-stopped" and "error" not in types, types
    texts = [plan.text for plan in record["plans"]]
    assert texts == ["The first sentence is here, and it goes on for a while.", "The second sentence follows it, slowly.",
                     "The third sentence comes last, as it should be."]
    assert types.count("audio-start") == types.count("audio-stop") == 3
    assert {plan.config.seed for plan in record["plans"]} == {SEED}
    # one speaker: the first piece's first chunk is the reference of the later pieces
    first = record["plans"][0]
    first_codes = [event.codes for event in record["original"](first) if event.kind == "chunk"][0]
    for later in record["plans"][1:]:
        assert later.voice is not None and np.array_equal(later.voice.codes, first_codes)
        assert later.voice.transcript == first.chunks[0]


#: a quoted question the sentence goes on from (streamed, it was cut in two, its quote spoken with the sentence before)
QUOTED_QUESTION = 'It is late. "Are you coming?" she asked from the door. Nobody answered her for a long while.'


def test_a_streamed_quoted_question_is_synthesised_as_the_whole_text_s_sentences(server, engine, monkeypatch):
    """Issue 58, point 5, through the real server: the text in chunks of three characters, as a model streams it;
    every piece the engine speaks is whole sentences of the whole text (the quoted question is not cut from the
    words that go on from it), all of them once, in order (more in tests/test_wyoming_text_stream.py)."""
    record = recording_run(engine, monkeypatch)
    chunks = [SynthesizeChunk(text=QUOTED_QUESTION[i:i + 3]) for i in range(0, len(QUOTED_QUESTION), 3)]
    start = _Extended(SynthesizeStart(), {"seed": SEED, "language": "en"})
    received = talk(server.port, [start, *chunks, SynthesizeStop()], until=("synthesize-stopped", "error"))
    types = [event.type for _, event in received]
    assert types[-1] == "synthesize-stopped" and "error" not in types, types
    pieces = [squeezed(plan.text) for plan in record["plans"]]   # the engine's text (its spaces tidied)
    assert types.count("audio-start") == types.count("audio-stop") == len(pieces)
    sentences = sentence_texts(QUOTED_QUESTION, "en")
    assert sentences[1] == '"Are you coming?" she asked from the door.'
    at = 0
    for piece in pieces:                     # each piece: the next sentences of the whole text, whole
        taken = next((n for n in range(1, len(sentences) - at + 1) if squeezed(*sentences[at:at + n]) == piece),
                     None)
        assert taken is not None, (piece, pieces)
        at += taken
    assert at == len(sentences), pieces


def squeezed(*texts: str) -> str:
    return "".join("".join(texts).split())


def test_text_stream_keeps_ssml_whole_until_its_end():
    stream = TextStream()
    assert stream.add("<speak>Hello there. <break time=") == ""       # no sentence cut out of markup
    assert stream.add('"200ms"/>Second part.</speak> ') == '<speak>Hello there. <break time="200ms"/>Second part.</speak>'
    assert stream.add("Plain text. Then more") == ""                    # plain text after it: sentence by sentence
    assert stream.add(" words come, enough to decide the cut") == "Plain text."


def test_ssml_over_streamed_text_is_read_as_ssml(server, engine, monkeypatch):
    """SSML sent as synthesize-chunks (Home Assistant streams an LLM's answer) is spoken as SSML: its pause is a
    pause and its tags are not read out."""
    from omnivoice_demo.engine.segments import SegmentsPlan

    record = recording_run(engine, monkeypatch)
    start = _Extended(SynthesizeStart(), {"seed": SEED})
    parts = ['<speak>Hello there. <break time="300ms"/>', "The second part.</speak>"]
    received = talk(server.port, [start] + [SynthesizeChunk(text=part) for part in parts] + [SynthesizeStop()],
                    until=("synthesize-stopped", "error"))
    types = [event.type for _, event in received]
    assert types[-1] == "synthesize-stopped" and "error" not in types, types
    whole = [plan for plan in record["plans"] if isinstance(plan, SegmentsPlan)]
    assert len(whole) == 1 and record["plans"][0] is whole[0]   # one document (its segments run as its parts)
    spoken = " ".join(item.text for item in whole[0].items if hasattr(item, "text"))
    assert "Hello there." in spoken and "second part" in spoken and "<" not in spoken and "break" not in spoken


# --- errors and disconnects ---------------------------------------------------------------------------

def test_an_unknown_voice_and_a_bad_language_are_error_events_and_the_connection_goes_on(server):
    async def then_describe(client, received):
        if received[-1][1].type == "error":
            await client.write_event(Describe().event())

    received = talk(server.port, [synthesize(ONE_SENTENCE, "nobody")], until=("info",), after=then_describe)
    error = Error.from_event(received[0][1])
    assert error.code == "invalid_value" and "'nobody'" in error.text and "alloy" in error.text
    assert ", default (" in error.text and ", auto (" not in error.text  # as the info's voices call it
    assert [event.type for _, event in received] == ["error", "info"]   # no audio was started
    error = Error.from_event(talk(server.port, [synthesize(ONE_SENTENCE, language="klingonese")])[0][1])
    assert "Unknown language 'klingonese'" in error.text
    error = Error.from_event(talk(server.port, [SynthesizeChunk(text="Hello.")])[0][1])
    assert "synthesize-start" in error.text


def test_instructions_describe_the_voice_and_what_is_ignored_is_logged(server, engine, monkeypatch, caplog):
    record = recording_run(engine, monkeypatch)
    with caplog.at_level("INFO", logger="omnivoice_demo.wyoming.handler"):
        talk(server.port, [synthesize(ONE_SENTENCE, "alloy", seed=SEED, instructions="a deep, cheerful British man")])
        talk(server.port, [synthesize(ONE_SENTENCE, "alloy", seed=SEED, instructions="cheerful")])
    described, kept = record["plans"]
    assert described.instruct == "low pitch, british accent, male"
    assert kept.instruct == resolve_instruct(DESIGNS["alloy"])       # no item: the voice keeps its design
    assert sum("voice description:" in r.getMessage() and "cheerful" in r.getMessage() for r in caplog.records) == 2
    error = Error.from_event(talk(server.port, [synthesize(ONE_SENTENCE, instructions="<b>male</b>")])[0][1])
    assert error.code == "invalid_value" and "markup" in error.text


def test_a_text_over_the_limit_is_an_error_before_any_work(server, core):
    service = core[2]
    before = service.stats()["submitted"]
    limit = core[0].get().engine.limits.max_text_chars
    error = Error.from_event(talk(server.port, [synthesize("word " * (limit // 4))])[0][1])
    assert error.code == "limit_exceeded" and "max_text_chars" in error.text
    assert service.stats()["submitted"] == before


def test_a_disconnect_mid_synthesis_stops_the_engine(server, core, engine, monkeypatch):
    service = core[2]
    jobs = []
    submit = service.submit
    monkeypatch.setattr(service, "submit", lambda *a, **k: jobs.append(submit(*a, **k)) or jobs[-1])
    gone = threading.Event()

    def hold(plan, event):
        if event.chunk == 0:
            gone.wait(60)   # the engine waits here until the client has gone and the server has seen it

    record = recording_run(engine, monkeypatch, hold)
    cancelled_before = service.stats()["cancelled"]
    talk(server.port, [synthesize(THREE_SENTENCES, seed=SEED)], until=("audio-chunk",))   # then it disconnects
    (job,) = jobs
    deadline = time.monotonic() + 30
    while not job.cancel_requested and time.monotonic() < deadline:
        time.sleep(0.02)
    assert job.cancel_requested, "the server did not cancel the job of a client that disconnected"
    gone.set()
    assert job.wait(30) and job.state == "cancelled"
    assert record["closed_early"] == 1 and len(record["chunks"]) == 1   # no chunk after the first
    assert service.stats()["cancelled"] == cancelled_before + 1 and job.steps_after_cancel <= 1


def test_a_full_queue_is_a_busy_error(server, core, engine, monkeypatch):
    service = core[2]
    release = threading.Event()
    monkeypatch.setattr(service, "max_waiting", 0)
    recording_run(engine, monkeypatch, lambda plan, event: release.wait(60))

    async def two_clients():
        async with AsyncTcpClient("127.0.0.1", server.port) as first, \
                AsyncTcpClient("127.0.0.1", server.port) as second:
            await first.write_event(synthesize(THREE_SENTENCES, seed=SEED).event())
            while (await asyncio.wait_for(first.read_event(), TIMEOUT)).type != "audio-chunk":
                pass   # the first one runs (held after its first chunk)
            await second.write_event(synthesize(ONE_SENTENCE, seed=SEED).event())
            answer = await asyncio.wait_for(second.read_event(), TIMEOUT)
            release.set()
            return answer

    try:
        answer = asyncio.run(two_clients())
    finally:
        release.set()
    assert Error.from_event(answer).code == "busy" and "busy" in Error.from_event(answer).text
    assert service.wait_idle(60)


# --- flags -------------------------------------------------------------------------------------------

def test_zeroconf_needs_a_wyoming_uri_and_its_package(core, monkeypatch):
    import argparse

    models, voices, service = core
    with pytest.raises(SystemExit, match="--wyoming-uri"):
        start_beside(argparse.Namespace(wyoming_uri=None, zeroconf=""), models, voices, service)
    assert start_beside(argparse.Namespace(wyoming_uri=None, zeroconf=None), models, voices, service) is None
    monkeypatch.setitem(sys.modules, "zeroconf", None)
    monkeypatch.setitem(sys.modules, "zeroconf.asyncio", None)
    monkeypatch.delitem(sys.modules, "wyoming.zeroconf", raising=False)
    args = argparse.Namespace(wyoming_uri=f"tcp://127.0.0.1:{free_port()}", zeroconf="")
    with pytest.raises(SystemExit, match=r"omnivoice-onnx-studio\[zeroconf\]"):
        start_beside(args, models, voices, service)


def test_a_wrong_uri_is_one_error_line():
    with pytest.raises(SystemExit, match="tcp://HOST:PORT"):
        WyomingServer("http://127.0.0.1:10200", None)
    with pytest.raises(SystemExit, match="tcp://HOST:PORT"):
        WyomingServer("tcp://127.0.0.1", None)


def test_the_servers_preset_sets_every_requests_steps(core, server, engine, monkeypatch):
    """Home Assistant sends no generation settings: the server answers at the voice assistant's Fast preset, and
    ``--preset reference`` gives the exact model's steps."""
    models, voices, service = core
    record = recording_run(engine, monkeypatch)
    talk(server.port, [synthesize(ONE_SENTENCE, "alloy", seed=SEED)])
    port = free_port()
    fast = WyomingServer(f"tcp://127.0.0.1:{port}", make_context(models, voices, service, preset="Reference")
                         ).start_in_thread()
    try:
        received = talk(port, [synthesize(ONE_SENTENCE, "alloy", seed=SEED)])
    finally:
        fast.stop_thread()
    assert received[-1][1].type == "audio-stop"
    default, quick = (plan.config for plan in record["plans"])
    assert (default.num_step, default.guidance_every, default.prompt_refresh) == (8, 2, 4)   # Fast by default
    assert (quick.num_step, quick.guidance_every) == (32, 1)   # Reference a flag away
    assert quick.sentence_streaming and quick.seed == SEED == default.seed


def test_the_preset_flags_of_the_wyoming_server(capsys):
    from omnivoice_demo.cli.main import build_parser

    parser = build_parser()
    assert parser.parse_args(["wyoming"]).wyoming_preset == "fast"
    assert parser.parse_args(["wyoming", "--preset", "FAST"]).wyoming_preset == "fast"
    assert parser.parse_args(["serve", "--wyoming-uri", "tcp://127.0.0.1:10200", "--wyoming-preset", "hd"]
                             ).wyoming_preset == "hd"
    assert make_context(None, None, None, preset="hd").preset == "reference"   # the alias means its preset
    with pytest.raises(SystemExit):
        parser.parse_args(["wyoming", "--preset", "turbo"])
    assert "invalid choice: 'turbo'" in capsys.readouterr().err


def test_serve_takes_the_wyoming_flags_and_starts_it_beside_the_http_api():
    from omnivoice_demo.cli.main import build_parser

    args = build_parser().parse_args(["serve", "--wyoming-uri", "tcp://127.0.0.1:10200", "--zeroconf"])
    assert args.wyoming_uri == "tcp://127.0.0.1:10200" and args.zeroconf == "" and args.start_beside is start_beside
    assert build_parser().parse_args(["wyoming"]).uri == "tcp://127.0.0.1:10200"


@pytest.mark.slow  # the app in a subprocess, as the HTTP API's tests
def test_the_app_serves_wyoming_on_its_own_queue(tiny_fp32_folder, tmp_path):
    import httpx

    from tests.support.app_server import AppProcess

    port = free_port()
    with AppProcess(["--model", str(tiny_fp32_folder), "--precision", "fp32", "--wyoming-uri",
                     f"tcp://127.0.0.1:{port}"], tmp_path) as app:
        app.wait_serving(timeout=180)
        deadline = time.monotonic() + 120
        while not httpx.get(app.url + "health", timeout=10).json().get("model_loaded"):
            assert time.monotonic() < deadline, app.log_text()
            time.sleep(0.3)
        # the server listened before the model was loaded and warms up once it is (its one job in the queue)
        while "Wyoming server warmed up" not in app.log_text():
            assert time.monotonic() < deadline, app.log_text()
            time.sleep(0.3)
        before = httpx.get(app.url + "health", timeout=10).json()["queue"]["finished"]
        info = Info.from_event(talk(port, [Describe()], until=("info",))[-1][1])
        assert "alloy" in [voice.name for voice in info.tts[0].voices]
        received = talk(port, [synthesize(ONE_SENTENCE, "alloy", seed=SEED)])
        assert received[-1][1].type == "audio-stop" and audio_of(received)
        # the generation went through the app's one queue, which /health reports
        assert httpx.get(app.url + "health", timeout=10).json()["queue"]["finished"] == before + 1


# --- an event's declared length is checked before it is read ----------------------------------------------

@pytest.fixture
def wyoming_port(tmp_path):
    """A Wyoming server with no model loaded (the length is refused before any request is made)."""
    port = free_port()
    context = make_context(ModelManager(cache_dir=tmp_path / "cache", offline=True), VoiceLibrary(tmp_path / "voices"),
                           EngineService(max_running=1, max_waiting=1))
    running = WyomingServer(f"tcp://127.0.0.1:{port}", context).start_in_thread()
    yield port
    running.stop_thread()


@pytest.mark.parametrize("field", ["data_length", "payload_length"])
def test_a_wyoming_event_declaring_a_huge_length_is_refused_before_it_is_read(wyoming_port, field, caplog):
    import json
    import socket

    with socket.create_connection(("127.0.0.1", wyoming_port), timeout=10) as client:
        client.sendall(json.dumps({"type": "synthesize", field: 2**40}).encode() + b"\n")
        refused, sent = False, 0
        client.settimeout(5)
        try:
            for _ in range(64):  # up to 64 MiB while the server should have hung up at once
                client.sendall(b"\0" * 2**20)
                sent += 2**20
            answer = b""
            while chunk := client.recv(65536):  # an error event may come first; then the server hangs up
                answer += chunk
            refused = b'"error"' in answer or answer == b""
        except (ConnectionResetError, BrokenPipeError):
            refused = True
        except socket.timeout:  # before: still reading, buffering every byte towards the 1 TiB declared
            refused = False
    assert refused, f"the server kept the connection after {sent} bytes of a 1 TiB event"
    assert f"got {2**40}; the connection is closed" in caplog.text, caplog.text  # said in the log, never read


def test_numbers_are_read_as_words_by_default(server, engine, monkeypatch):
    from omnivoice_demo.text.normalize import normalize_text

    record = recording_run(engine, monkeypatch)
    talk(server.port, [synthesize("It costs $4.99 today.", "alloy", seed=SEED, language="en")])
    (plan,) = record["plans"]
    assert plan.config.normalize_text and plan.text == normalize_text("It costs $4.99 today.", "en")
    assert "four" in plan.text and "$" not in plan.text


def test_numbers_in_other_languages_are_never_read_with_english_words(server, engine, monkeypatch):
    """German, French, Spanish and Russian with no language given, and a mixed English/German text: read as
    written under Wyoming's default (``auto``), the model given no language, the log saying why."""
    from tests.test_normalize_language import ENGLISH_WORDS, FOREIGN, MIXED, english_words_in

    record = recording_run(engine, monkeypatch)
    texts = [*FOREIGN.values(), MIXED]
    for text in texts:
        talk(server.port, [synthesize(text, "alloy", seed=SEED)])
    assert [plan.text for plan in record["plans"]] == texts
    for plan in record["plans"]:
        assert plan.normalization.language is None and plan.language is None
        assert not english_words_in(plan.text) and ENGLISH_WORDS
