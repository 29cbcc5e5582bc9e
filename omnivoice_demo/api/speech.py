"""``POST /v1/audio/speech``: an OpenAI request -> a validated plan -> audio bytes, whole or streamed.

The request's fields (OpenAI's, then ours):

* ``input`` (required), ``model`` (``omnivoice``, a loaded model's label, or
  OpenAI's ``tts-1``/``tts-1-hd``/``gpt-4o-mini-tts`` meaning the active model),
  ``voice`` (see ``studio.vocabulary``), ``response_format`` (``api.encoding``),
  ``speed`` (OpenAI's 0.25-4.0, clamped to the model's 0.5-2.0; the ``X-OmniVoice-Speed``
  header says what was used), ``instructions`` (a voice described in words, read by
  ``text.descriptions``: its items replace the voice's own design; with no item the voice stays as it
  is; a word that is one of a saved voice's style tags speaks with that clip, ``studio.variants``;
  the ``X-OmniVoice-Instruct``, ``X-OmniVoice-Ignored`` and ``X-OmniVoice-Style`` headers say what was
  applied, what was not understood and which style clip spoke), ``strict`` (true: refuse instructions
  with any word not understood),
  ``stream_format`` (as OpenAI: ``audio`` by default, the file's bytes as each chunk is
  decoded; ``sse``: ``speech.audio.delta`` events with base64 audio, then ``speech.audio.done``); a stream
  is sentence streaming with a quick start by default (``stream_config``: a first chunk of a clause or a few
  words, then the sentences; ``quick_start: 0`` makes the first chunk the first sentence,
  ``sentence_streaming: false`` the reference's chunker at ``STREAM_CHUNK_SECONDS``);
* ``stream: false``: one whole file instead (the exact output of the text in one plan, with the
  codes digest and duration headers); ``stream: true`` without a ``stream_format`` means OpenAI's default, ``audio`` (the file's bytes, never SSE text);
  a ``wav`` request that says nothing of streaming is a whole file too (its header then states its
  length; ``encoding.streamed_by_default``), pcm, mp3 and opus stream;
* ``language``, ``seed``, ``steps`` or ``preset`` (the presets of ``studio.vocabulary``:
  ``reference``/``balanced``/``fast``, and the aliases ``quality``/``hd``) and any
  ``GenerationConfig`` field by name (``guidance_scale``, ``num_step``, ``guard`` for the sentence
  check, ...);
  ``normalize_text`` is ``"auto"`` by default here: numbers are read as words where the text's language (given,
  or else detected) is English or Chinese (text/normalize_choice.py); the ``X-OmniVoice-Normalized`` header
  says the language they were read in, or ``off``;
  ``pronunciations``: ``{"word": "[B EY1 S]"}`` or a list of ``{"word", "say", "match_case"}``;
  ``script: true``: ``input`` is a dialogue script (``Name: text`` lines, ``text.script``), each name a
  voice, or mapped to one by ``speakers`` (``{"Anna": "alloy", "Ben": "my voice"}``); the whole file's
  ``X-OmniVoice-Turns`` header says who speaks when.
  An ``input`` that starts with ``<speak`` is SSML (text/ssml.py): its ``<voice name>``s are the names
  ``voice`` takes; what was read otherwise than written is in the ``X-OmniVoice-SSML-Notes`` header.
  With ``guard``, a whole file's response has the ``X-OmniVoice-Checks`` header (JSON:
  per chunk its CER, the kept take, whether it passed, each take's score) and the SSE stream's
  ``speech.audio.done`` event a ``checks`` field (the same with each take's transcript).
  ``loudness`` (LUFS, EBU R128, true peak under -1 dBTP) applies to a whole file (``stream: false``).
  Unknown fields are ignored (clients send their own extras).

The body's model is ``schemas.SpeechBody`` (its fields' checks, its ``/openapi.json`` schema); the
settings go through ``GenerationConfig.from_mapping`` and the engine's ``prepare`` (its ``Limits``),
before the request takes a place in the queue.
"""

from __future__ import annotations

import base64
import json
import urllib.parse
from typing import AsyncIterator, Optional

from ..settings.generation import GenerationConfig
from ..settings.presets import QUICK_START_SECONDS
from ..errors import ResourceLimitExceeded
from ..text.normalize_choice import normalize_failures, normalized_header
from ..text.descriptions import Description
from ..text.script import plan_script
from ..studio.variants import read_voice_description
from ..studio.stream_audio import chunk_output
from . import encoding
from .schemas import DEFAULT_MODEL, OPENAI_MODELS, SpeechBody, SpeechRequest  # noqa: F401 - this module's names too

#: when streaming, texts are split at about this many seconds of speech so the first audio comes early
STREAM_CHUNK_SECONDS = 4.0


def parse(body) -> SpeechRequest:
    """Check a request body's fields and types by its model (``schemas.SpeechBody``; values are checked by the
    config and the engine)."""
    return SpeechBody.checked(body).request()


def config_for(request: SpeechRequest, engine=None) -> GenerationConfig:
    """The request's settings (``normalize_text`` not given: ``"auto"``, decided by the engine per text)."""
    return GenerationConfig.from_mapping(request.settings)


def instruct_for(engine, request: SpeechRequest, voice, design: Optional[str]):
    """(the voice, the instruct, the description) of a request: its ``instructions`` read as a description
    (strict if asked; a word that is a style of the saved ``voice`` picks that clip, ``studio.variants``), whose
    items replace the voice's ``design``; the description, for the headers."""
    voice, description = read_voice_description(voice, request.instructions, strict=request.strict,
                                                limits=engine.limits, param="instructions")
    return voice, description.instruct or design, description


def description_headers(plan, description: Description) -> dict:
    """``X-OmniVoice-Instruct`` (the items the model was given), ``X-OmniVoice-Ignored`` (the words left out)
    and ``X-OmniVoice-Style`` (the saved voice's style variant spoken with), empty when none, and
    ``X-OmniVoice-SSML-Notes`` when SSML was read otherwise than written; latin-1 safe: characters outside
    printable ASCII (Chinese items) and ``%`` are percent-encoded as UTF-8 (``urllib.parse.unquote`` reads
    them back)."""
    headers = {"X-OmniVoice-Normalized": normalized_header(plan),
               "X-OmniVoice-Instruct": header_text(plan.instruct or ""),
               "X-OmniVoice-Ignored": header_text(", ".join(description.ignored)),
               "X-OmniVoice-Style": header_text(description.style or "")}
    failed = normalize_failures(plan)
    if failed:   # the normaliser failed on some of the text, which was read as written there
        headers["X-OmniVoice-Normalize-Failed"] = str(failed)
    if getattr(plan, "notes", None):   # SSML read otherwise than written
        headers["X-OmniVoice-SSML-Notes"] = header_text("; ".join(plan.notes))
    return headers


#: printable ASCII but ``%``: what a header value keeps as it is
_HEADER_SAFE = "".join(chr(c) for c in range(0x20, 0x7F) if chr(c) != "%")


def header_text(value: str) -> str:
    return urllib.parse.quote(value, safe=_HEADER_SAFE)


def stream_config(request: SpeechRequest, config: GenerationConfig) -> GenerationConfig:
    """A stream's settings: sentence streaming with ``quick_start`` at ``QUICK_START_SECONDS`` (a first chunk of a
    clause or a few words, so a voice assistant's reply starts sooner; BENCHMARKS.md, "First audio for a voice
    assistant"), where the request sets neither; a whole file (``stream: false``) keeps the request's."""
    if not request.stream_format:
        return config
    given = request.settings
    if "sentence_streaming" not in given:
        config = config.replace(sentence_streaming=True)
    if "quick_start" not in given and config.sentence_streaming:
        config = config.replace(quick_start=QUICK_START_SECONDS)
    return config


def plan_for(engine, request: SpeechRequest, voice, instruct: Optional[str], voices=None):
    """The engine's plan of a request (SSML when its input starts with ``<speak``, its voice names resolved by
    ``voices``).  Streaming (``stream_config``) splits the text at about ``STREAM_CHUNK_SECONDS`` of
    speech (longer chunks where that would pass the server's chunk limit) unless the request sets
    ``chunk_duration``/``chunk_threshold`` itself."""
    config = stream_config(request, config_for(request, engine))
    plan = engine.prepare(request.text, language=request.language, instruct=instruct, voice=voice, config=config,
                          pronunciations=request.pronunciations, ssml=None, voices=voices)
    if not request.stream_format or {"chunk_duration", "chunk_threshold"} & set(request.settings):
        return plan
    chunk = STREAM_CHUNK_SECONDS
    while chunk < config.chunk_duration:
        shorter = plan.config.replace(chunk_duration=chunk, chunk_threshold=min(config.chunk_threshold, chunk))
        try:   # the seed of the first plan stays
            return engine.prepare(request.text, language=request.language, instruct=instruct, voice=voice,
                                  config=shorter, pronunciations=request.pronunciations, ssml=None, voices=voices)
        except ResourceLimitExceeded as exc:
            if exc.param != "max_chunks":
                raise
            chunk *= 2
    return plan


def script_plan_for(engine, request: SpeechRequest, resolve):
    """The turns of a script request (``script: true``), each name's voice read by ``resolve``."""
    return plan_script(engine, request.text, resolve, request.speakers, language=request.language,
                       config=config_for(request, engine), pronunciations=request.pronunciations)


def turns_header(turns: list[dict]) -> str:
    """Who speaks when (a script's result): compact JSON of speaker, start and end seconds, latin-1 safe."""
    return json.dumps([{"speaker": t["speaker"], "start": round(t["start"], 3), "end": round(t["end"], 3)}
                       for t in turns], ensure_ascii=True, separators=(",", ":"))


async def stream_body(job, plan, response_format: str, stream_format: str, on_done=None,
                      details: Optional[dict] = None) -> AsyncIterator[bytes]:
    """The streamed response: audio bytes (or SSE events) as each chunk is decoded; ``details``, the whole values
    of headers that were cut (``api.headers``), go in the SSE ``speech.audio.done`` event.

    Closing it (the client went away) cancels the job: ``job.aevents`` does so on exit."""
    encoder = encoding.StreamEncoder(response_format)
    rms = plan.voice.rms if plan.voice is not None else None
    checks = []
    try:
        async for event in job.aevents():
            if event.kind == "chunk":
                data = encoder.add(chunk_output(event.audio, rms, plan.config))
            elif event.kind == "segment":   # SSML: the next stretch of the joined audio, as it is
                data = encoder.add(event.audio)
            elif event.kind == "result":
                data = encoder.finish()
                # the whole result's checks: a plain text's chunks, and an SSML text's segments' (whose chunks
                # come out as segments)
                checks = [check.to_dict() for check in getattr(event, "checks", None) or []]
                if on_done is not None:
                    on_done(event)
            else:
                continue
            if data:
                yield _sse_delta(data) if stream_format == "sse" else data
        if stream_format == "sse":
            # usage in OpenAI's shape: characters of text in, frames of codes out
            done = {"type": "speech.audio.done",
                    "usage": {"input_tokens": len(plan.text), "output_tokens": plan.target_frames,
                              "total_tokens": len(plan.text) + plan.target_frames}}
            if details:
                done["details"] = details
            yield _sse(dict(done, checks=checks) if plan.config.guard else done)
    finally:
        encoder.close()


def _sse(payload: dict) -> bytes:
    return f"data: {json.dumps(payload)}\n\n".encode()


def _sse_delta(data: bytes) -> bytes:
    return _sse({"type": "speech.audio.delta", "audio": base64.b64encode(data).decode("ascii")})
