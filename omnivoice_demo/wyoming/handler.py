"""One Wyoming connection: ``describe``, ``synthesize`` and the streaming-text events.

* ``synthesize`` -> ``audio-start``, ``audio-chunk``s (16-bit 24 kHz mono PCM; each decoded chunk of
  the engine's sentence streaming is sent at once), ``audio-stop``.  The audio of each engine chunk is
  ``stream_audio.chunk_output``, as the HTTP API streams it; a text of one chunk is exactly the
  engine's result.
* ``synthesize-start``, ``synthesize-chunk``s, ``synthesize-stop``: the sentences completed by each
  chunk of text are synthesised while the text still arrives (sentences completed while the engine is
  busy are spoken together next), each piece as ``audio-start``/``audio-chunk``s/``audio-stop``, then
  ``synthesize-stopped``.  Without a saved voice the first piece's first chunk (its codes and text)
  is the reference of the later pieces, as the engine's own chunking does, so the speaker stays;
  one seed serves the whole stream.  The ``synthesize`` a client sends inside a stream for older
  servers is ignored.  The stream's whole text is bounded by the server's ``max_text_chars``.
* A ``synthesize`` text that starts with ``<speak`` is SSML (``text/ssml.py``): each finished segment's
  audio (with its pauses) is sent as it comes; a streamed text is read as written.
* A wrong request, a full queue or a failed generation is an ``error`` event with the message every
  front end shows (``studio.messages.error_text``) and a code (``invalid_value``, ``limit_exceeded``,
  ``busy``, ``model_not_ready``, ``internal_error``).  An event that breaks the protocol (``framing``: a
  header that is not a JSON object, data that is not one, a length that is not a whole number of bytes)
  is an ``error`` with the code ``invalid_event`` and one line in the log; when the stream has no frame
  left after it the connection is closed.
* Events are read while audio is made (one worker task per connection), so a client that
  disconnects is seen at once: its worker is cancelled, which cancels the job in the queue
  (``Job.aevents``), and the engine stops after the step in flight.  A client that only ends its
  writing side (``shutdown(SHUT_WR)`` after ``synthesize``) still gets its audio: see
  ``SpeechHandler._finish_after_eof``.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import dataclasses
import functools
import logging
import secrets
import socket
from typing import TYPE_CHECKING, Callable, Optional

from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.error import Error
from wyoming.event import Event
from wyoming.info import Describe
from wyoming.ping import Ping
from wyoming.server import AsyncEventHandler
from wyoming.tts import Synthesize, SynthesizeChunk, SynthesizeStart, SynthesizeStop, SynthesizeStopped

from ..settings.generation import NORMALIZE_AUTO, GenerationConfig
from ..settings.presets import QUICK_START_SECONDS, VOICE_ASSISTANT_PRESET
from ..text.normalize_choice import normalization_note
from ..constants import SAMPLE_RATE
from ..errors import (Busy, InvalidInput, ModelFolderError, ModelNotAvailable, ResourceLimitExceeded,
                      StoreUnavailable, excerpt)
from ..studio.stream_audio import chunk_output, pcm16
from ..studio.messages import error_text
from ..studio.variants import read_voice_description
from ..studio.vocabulary import resolve_voice
from ..storage.voice_file import Voice
from .framing import MalformedEvent, read_event
from .info import DEFAULT_VOICE, build_info
from .requests import SpeechRequest, parse_request
from ..text.ssml import looks_like_ssml
from .text_stream import TextStream

if TYPE_CHECKING:
    from ..studio import ModelManager, VoiceLibrary
    from ..studio.service import EngineService

log = logging.getLogger(__name__)

#: 16-bit mono: bytes per sample; samples per ``audio-chunk`` event (Wyoming's usual 1024)
SAMPLE_WIDTH, CHANNELS, SAMPLES_PER_EVENT = 2, 1, 1024
LISTED_BY = "the voices of this server's Wyoming info (Home Assistant's voice menu)"
#: how often a client that closed its side is looked at while its work goes on (seconds)
PEER_CHECK_SECONDS = 0.2
#: how long a connection closed for a malformed event reads what the client still sends (seconds)
LINGER_SECONDS = 2.0
#: how long ``describe`` waits for the saved voices (seconds); after it, the built-in voices are offered alone
DESCRIBE_STORE_SECONDS = 2.0


@dataclasses.dataclass
class WyomingContext:
    """What the connections work on: the studio's models, saved voices and queue (shared with the other front ends)."""

    models: ModelManager
    voices: VoiceLibrary
    service: EngineService
    redact: Callable[[str], str] = str      # shared mode: no server paths in messages
    session: Optional[str] = None           # the voice library's session when it is per session
    guard: bool = False                     # check each sentence (the engine's sentence check, --guard)
    lexicon: Optional[object] = None        # text.lexicon.Lexicon of --lexicon: every request's pronunciations
    preset: str = VOICE_ASSISTANT_PRESET    # the speed preset of every request (--preset; Wyoming has no field)
    quick_start: float = QUICK_START_SECONDS  # the first chunk's seconds (--quick-start; 0: the first sentence)

    def saved_names(self) -> list[str]:
        return self.voices.names(self.session)

    def _label(self) -> str:
        try:
            return self.models.get().label
        except Exception:  # noqa: BLE001 - no model yet: the voices are listed all the same
            return ""

    def info_event(self) -> Event:
        """The info: the saved voices (a page at a time, one query each, with their tags) and the built-in ones."""
        tags: dict[str, list[str]] = {}
        after, more = None, True
        while more:
            entries, more = self.voices.listing(self.session, limit=1000, after=after)
            tags.update((entry.name, entry.tags) for entry in entries)
            after = entries[-1].name if entries else None
            more = more and after is not None
        return build_info(list(tags), self._label(), tags=tags).event()

    async def describe(self) -> Event:
        """``info_event`` off the event loop, waited for ``DESCRIBE_STORE_SECONDS`` at most: a voice store that is
        down or stalled leaves the built-in voices offered alone (logged), never a client that waits on it."""
        try:
            return await asyncio.wait_for(asyncio.to_thread(self.info_event), DESCRIBE_STORE_SECONDS)
        except (asyncio.TimeoutError, StoreUnavailable) as exc:
            log.warning("Wyoming describe: the saved voices are left out (%s)",
                        self.redact(str(exc)) or f"the voice store did not answer in {DESCRIBE_STORE_SECONDS:g} s")
            return build_info([], self._label()).event()


@dataclasses.dataclass
class Stream:
    """One streamed text (``synthesize-start`` .. ``synthesize-stop``)."""

    request: SpeechRequest
    text: TextStream = dataclasses.field(default_factory=TextStream)
    reference: Optional[Voice] = None   # the first piece's first chunk, for the later pieces
    failed: bool = False                # an error was sent: the rest of the stream is dropped


@dataclasses.dataclass
class Piece:
    """Text to speak: a whole ``synthesize`` (``stream`` None) or sentences of a stream."""

    text: str
    request: SpeechRequest
    stream: Optional[Stream] = None


_STOPPED = object()   # queued after a stream's last piece: send synthesize-stopped


class SpeechHandler(AsyncEventHandler):
    def __init__(self, context: WyomingContext, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        super().__init__(reader, writer)
        peer = writer.get_extra_info("peername")
        self.peer = str(peer[0]) if isinstance(peer, (tuple, list)) and peer else "(local socket)"
        self.context = context
        self._stream: Optional[Stream] = None
        self._todo: collections.deque = collections.deque()
        self._worker: Optional[asyncio.Task] = None

    # --- reading ---------------------------------------------------------------------------

    async def run(self) -> None:
        """Read events until the client ends its side (then finish its requests: a client that only
        half-closed still reads) or breaks the protocol in a way that leaves the stream without a frame."""
        self._is_running = True
        try:
            while self._is_running:
                try:
                    event = await read_event(self.reader)
                except MalformedEvent as exc:   # one line per event, however many a client sends
                    log.warning("Wyoming client %s: %s", self.peer, exc)
                    await self._send_error(exc)
                    if exc.fatal:
                        await self._close_gently()
                        break
                    continue
                if event is None:
                    if self._is_running:
                        await self._finish_after_eof()
                    break
                if not await self.handle_event(event):
                    break
        except ConnectionError:   # the client reset the connection: nobody to tell
            log.debug("Wyoming client %s reset the connection", self.peer)
        finally:
            await self.disconnect()
            self.writer.close()

    async def _close_gently(self) -> None:
        """End a connection whose stream has no frame left, so that the client reads the error first: shut the
        writing side, then read and drop what the client still sends (for at most ``LINGER_SECONDS``); closing
        with unread bytes would reset the connection, and a reset discards what the client had not read yet."""
        # asyncio.wait_for, not asyncio.timeout (Python 3.11+): requires-python is 3.10, where asyncio.TimeoutError
        # is not yet the builtin TimeoutError
        with contextlib.suppress(OSError, RuntimeError, TimeoutError, asyncio.TimeoutError):
            if self.writer.can_write_eof():
                self.writer.write_eof()
            await asyncio.wait_for(self._drain_reader(), LINGER_SECONDS)

    async def _drain_reader(self) -> None:
        while await self.reader.read(1 << 16):
            pass

    async def _finish_after_eof(self) -> None:
        """The work asked for before the client's end of stream, while the client is there.

        A client that closed its socket entirely looks the same as one that only shut down its writing side,
        until something is written to it: a ``ping`` event at once (its reset sets the socket's error), and
        the socket's error is looked at every ``PEER_CHECK_SECONDS`` while the work goes on."""
        if self._worker is None or self._worker.done():
            return
        with contextlib.suppress(ConnectionError):
            await self.write_event(Ping(text="end of stream").event())
        sock = self.writer.get_extra_info("socket")
        while not self._worker.done() and not self.writer.is_closing():
            if sock is not None and sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR):
                log.debug("Wyoming client %s went away with work pending", self.peer)
                return
            await asyncio.wait({self._worker}, timeout=PEER_CHECK_SECONDS)

    async def handle_event(self, event: Event) -> bool:
        try:
            if Describe.is_type(event.type):
                await self.write_event(await self.context.describe())
            elif Synthesize.is_type(event.type):
                if self._stream is None:  # inside a stream it is the copy for older servers
                    self._queue(Piece(text_of(event), parse_request(event.data)))
            elif SynthesizeStart.is_type(event.type):
                request = parse_request(event.data)
                self._stream = Stream(request, TextStream(request.language))
            elif SynthesizeChunk.is_type(event.type):
                self._add_text(text_of(event))
            elif SynthesizeStop.is_type(event.type):
                stream, self._stream = self._require_stream("synthesize-stop"), None
                rest = stream.text.finish()
                if rest:
                    self._queue(Piece(rest, stream.request, stream))
                self._queue(_STOPPED)
        except Exception as exc:  # noqa: BLE001 - a malformed event is an error event, the connection stays
            if self._stream is not None:
                self._stream.failed = True
            await self._send_error(exc)
        return True

    def _add_text(self, text: str) -> None:
        stream = self._require_stream("synthesize-chunk")
        if stream.failed:
            return
        limit = self._limits().max_text_chars
        if stream.text.total + len(text) > limit:   # before the text is cut into sentences
            raise ResourceLimitExceeded(f"The streamed text is over {limit} characters, the most this server speaks "
                                        "in one request (max_text_chars); the rest of it is not spoken.",
                                        param="max_text_chars")
        done = stream.text.add(text)
        if done:
            self._queue(Piece(done, stream.request, stream))

    def _require_stream(self, what: str) -> Stream:
        if self._stream is None:
            raise InvalidInput(f"{what} came without synthesize-start; send synthesize-start first (or one "
                               "synthesize event with the whole text).")
        return self._stream

    def _limits(self):
        return self.context.models.get().engine.limits

    def _queue(self, item) -> None:
        if isinstance(item, Piece) and item.stream is not None and item.stream.request.seed is None:
            # one seed for the whole stream: its pieces are one voice
            item.stream.request.seed = secrets.randbelow(2**31)
        self._todo.append(item)
        if self._worker is None or self._worker.done():
            self._worker = asyncio.create_task(self._work(), name="omnivoice wyoming synthesis")

    async def disconnect(self) -> None:
        """The client went away: stop its generation (the job is cancelled when its reader is)."""
        self._todo.clear()
        if self._worker is not None and not self._worker.done():
            self._worker.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._worker

    # --- speaking ----------------------------------------------------------------------------

    async def _work(self) -> None:
        try:
            await self._work_through()
        except ConnectionError:  # the client went away while audio was written: nobody to tell
            log.debug("a Wyoming client disconnected during synthesis")

    async def _work_through(self) -> None:
        while self._todo:
            item = self._todo.popleft()
            if item is _STOPPED:
                await self.write_event(SynthesizeStopped().event())
                continue
            while (item.stream is not None and self._todo and isinstance(self._todo[0], Piece)
                   and self._todo[0].stream is item.stream):   # completed while the engine was busy: one piece
                item = Piece(f"{item.text} {self._todo.popleft().text}", item.request, item.stream)
            if item.stream is not None and item.stream.failed:
                continue
            try:
                await self._speak(item)
            except (ConnectionError, asyncio.CancelledError):
                raise
            except Exception as exc:  # noqa: BLE001 - told to the client, who may send the next request
                if item.stream is not None:
                    item.stream.failed = True
                await self._send_error(exc)

    async def _speak(self, piece: Piece) -> None:
        loaded = self.context.models.get()
        plan = await asyncio.to_thread(self._plan, loaded, piece)
        job = self.context.service.submit(lambda: loaded.engine.run(plan),
                                          estimate=loaded.engine.estimate_seconds(plan), lock=loaded.lock,
                                          label="wyoming")
        audio_format = dict(rate=SAMPLE_RATE, width=SAMPLE_WIDTH, channels=CHANNELS)
        await self.write_event(AudioStart(**audio_format).event())
        rms = plan.voice.rms if plan.voice is not None else None
        async for event in job.aevents():   # leaving this loop early (cancelled, write failed) cancels the job
            if event.kind == "segment":   # SSML: the next stretch of the joined audio, as it is
                await self._send_audio(pcm16(event.audio), audio_format)
            if event.kind != "chunk":
                continue
            stream = piece.stream
            if stream is not None and stream.reference is None and plan.voice is None and event.chunk == 0:
                stream.reference = Voice(codes=event.codes.copy(), transcript=plan.chunks[0], rms=None,
                                         name="stream reference")
            await self._send_audio(pcm16(chunk_output(event.audio, rms, plan.config)), audio_format)
        await self.write_event(AudioStop().event())

    async def _send_audio(self, data: bytes, audio_format: dict) -> None:
        step = SAMPLES_PER_EVENT * SAMPLE_WIDTH * CHANNELS
        for offset in range(0, len(data), step):
            await self.write_event(AudioChunk(audio=data[offset:offset + step], **audio_format).event())

    def _plan(self, loaded, piece: Piece):
        """The engine's plan of a piece (every check of the engine and its limits, before the queue)."""
        engine = loaded.engine
        max_frames = engine.limits.max_reference_frames
        voices = functools.partial(resolve_voice, saved_names=functools.partial(self.context.voices.find,
                                                                                session=self.context.session),
                                   load_saved=lambda name: self.context.voices.load(name, self.context.session,
                                                                                    max_frames=max_frames),
                                   listed_by=LISTED_BY, auto_name=DEFAULT_VOICE)
        voice, design = voices(piece.request.voice)
        voice, description = read_voice_description(voice, piece.request.instructions, limits=engine.limits,
                                                    param="instructions")
        if description.why:
            log.info("%s", description.note())
        instruct = description.instruct or design
        if voice is None and piece.stream is not None:
            voice = piece.stream.reference
        config = GenerationConfig.preset(self.context.preset).replace(
            seed=piece.request.seed, sentence_streaming=True, quick_start=self.context.quick_start,
            normalize_text=NORMALIZE_AUTO,   # by the text's language (en, zh)
            guard=self.context.guard)
        # a text that starts with <speak is SSML: a whole one (synthesize), or a streamed one, which TextStream
        # keeps whole until its </speak>; other streamed text is read as it comes
        ssml = None if piece.stream is None or looks_like_ssml(piece.text) else False
        # read_ahead: the first sentence's numbers are read now, the later ones while it is generated
        plan = engine.prepare(piece.text, language=piece.request.language, instruct=instruct, voice=voice,
                              config=config, ssml=ssml, voices=voices,
                              pronunciations=self.context.lexicon, read_ahead=True)
        log.info("Numbers: %s", normalization_note(plan))   # Wyoming has no field for it: the server's log says
        return plan

    async def _send_error(self, exc: BaseException) -> None:
        text = self.context.redact(" ".join(error_text(exc, "the Wyoming server").split()))
        with contextlib.suppress(ConnectionError):
            await self.write_event(Error(text=text, code=error_code(exc)).event())


def text_of(event: Event) -> str:
    """The ``text`` of a ``synthesize`` or ``synthesize-chunk`` event (``InvalidInput`` when it is not a string)."""
    text = event.data.get("text")
    if not isinstance(text, str):
        got = "no text" if text is None else f"{type(text).__name__} {excerpt(text)}"
        raise InvalidInput(f"The text of a {event.type} event must be a string, got {got}.", param="text")
    return text


def error_code(exc: BaseException) -> str:
    """The ``error`` event's code, the HTTP API's names (``invalid_event``: an event that breaks the protocol)."""
    if isinstance(exc, MalformedEvent):
        return "invalid_event"
    if isinstance(exc, Busy):
        return "busy"
    if isinstance(exc, ResourceLimitExceeded):
        return "limit_exceeded"
    if isinstance(exc, InvalidInput):
        return "invalid_value"
    if isinstance(exc, (ModelNotAvailable, ModelFolderError)) or type(exc).__name__ == "ModelNotReady":
        return "model_not_ready"
    return "invalid_value" if isinstance(exc, ValueError) else "internal_error"
