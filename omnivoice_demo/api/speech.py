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
  decoded; ``sse``: ``speech.audio.delta`` events with base64 audio, then ``speech.audio.done``);
* ``stream: false``: one whole file instead (the exact output of the text in one plan, with the
  codes digest and duration headers); ``stream: true`` without a ``stream_format`` means ``sse``;
* ``language``, ``seed``, ``steps`` or ``preset`` (the presets of ``studio.vocabulary``:
  ``reference``/``balanced``/``fast``, and the aliases ``quality``/``hd``) and any
  ``GenerationConfig`` field by name (``guidance_scale``, ``num_step``, ``guard`` for the sentence
  check, ...);
  ``normalize_text`` is on by default here when its extra is installed (text/normalize.py);
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

Settings go through ``GenerationConfig.from_mapping`` and the engine's ``prepare``
(its ``Limits``), before the request takes a place in the queue.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import urllib.parse
from typing import AsyncIterator, Optional

from ..settings.generation import GenerationConfig
from ..errors import InvalidInput, ResourceLimitExceeded, excerpt
from ..text.lexicon import Lexicon, from_mapping
from ..text.normalize import typed_default
from ..settings.presets import under_preset
from ..text.descriptions import Description
from ..text.script import check_speakers, plan_script
from ..studio.variants import read_voice_description
from ..studio.stream_audio import chunk_output
from . import encoding

#: model names OpenAI clients send: they mean the active model
OPENAI_MODELS = ("tts-1", "tts-1-hd", "gpt-4o-mini-tts")
DEFAULT_MODEL = "omnivoice"
#: when streaming, texts are split at about this many seconds of speech so the first audio comes early
STREAM_CHUNK_SECONDS = 4.0
STREAM_FORMATS = ("audio", "sse")
#: the ``speed`` OpenAI accepts; values outside the model's range are clamped to it
OPENAI_SPEED = (0.25, 4.0)


@dataclasses.dataclass
class SpeechRequest:
    text: str
    model: str
    voice: object
    response_format: str
    stream_format: Optional[str]
    language: Optional[str]
    instructions: Optional[str]
    settings: dict
    speed_note: Optional[str] = None   # the X-OmniVoice-Speed header when the speed asked for was clamped
    strict: bool = False               # refuse instructions with words not understood
    pronunciations: Optional[Lexicon] = None   # our extension: {"word": "[B EY1 S]"} (text/lexicon.py)
    normalize_by_default: bool = False         # normalize_text not given: on, within the server's bound
    script: bool = False                       # our extension: input is a dialogue script (text/script.py)
    speakers: Optional[dict] = None            # the script's names -> voices


def _text_field(body: dict, name: str, required: bool = False) -> Optional[str]:
    value = body.get(name)
    if value is None or (isinstance(value, str) and not value.strip() and not required):
        if required:
            raise InvalidInput(f"{name} is required: give the text to speak.", param=name)
        return None
    if not isinstance(value, str):
        raise InvalidInput(f"{name} must be a string, got {type(value).__name__}.", param=name)
    return value


def parse(body) -> SpeechRequest:
    """Check a request body's fields and types (values are checked by the config and the engine)."""
    if not isinstance(body, dict):
        raise InvalidInput("The request body must be a JSON object.")
    text = _text_field(body, "input", required=True)
    model = _text_field(body, "model") or DEFAULT_MODEL
    default_format = "mp3" if "mp3" in encoding.formats() else "wav"
    response_format = encoding.check_format(body.get("response_format") or default_format)
    stream_format = _stream_format(body)
    settings = {name: body[name] for name in GenerationConfig.names() if name in body}
    settings.setdefault("normalize_text", typed_default())   # on where installed: people type "$4.99" here
    speed_note = None
    if body.get("speed") is not None:
        settings["speed"], speed_note = _openai_speed(body["speed"])
    if body.get("steps") is not None:
        settings["num_step"] = body["steps"]
    preset = body.get("preset")
    if preset is not None:
        settings = under_preset(preset, settings)
    strict = body.get("strict", False)
    if not isinstance(strict, bool):
        raise InvalidInput(f"strict must be true or false, got {strict!r}.", param="strict")
    if settings.get("loudness") is not None and stream_format:
        raise InvalidInput("loudness normalises the whole file: send \"stream\": false with it.", param="loudness")
    script = body.get("script", False)
    if not isinstance(script, bool):
        raise InvalidInput(f"script must be true or false, got {excerpt(script)}.", param="script")
    if not script and body.get("speakers") is not None:
        raise InvalidInput("speakers maps the names of a script to voices: send \"script\": true with it.",
                           param="speakers")
    if script and body.get("instructions"):
        raise InvalidInput("instructions do not apply to a script: give each speaker its voice in speakers, e.g. "
                           "{\"Anna\": \"female, low pitch\"}.", param="instructions")
    return SpeechRequest(text=text, model=model, voice=body.get("voice"), response_format=response_format,
                         stream_format=stream_format, language=_text_field(body, "language"),
                         instructions=_text_field(body, "instructions"), settings=settings, speed_note=speed_note,
                         strict=strict, pronunciations=from_mapping(body.get("pronunciations")),
                         normalize_by_default="normalize_text" not in body, script=script,
                         speakers=check_speakers(body.get("speakers")) if script else None)


def _stream_format(body: dict) -> Optional[str]:
    """OpenAI's default is to stream the audio as it is made; ``stream: false`` asks for one whole file."""
    stream, stream_format = body.get("stream"), body.get("stream_format")
    if stream is not None and not isinstance(stream, bool):
        raise InvalidInput(f"stream must be true or false, got {excerpt(stream)}.", param="stream")
    if stream_format is None:
        return None if stream is False else ("sse" if stream is True else "audio")
    if stream_format not in STREAM_FORMATS:
        raise InvalidInput(f"stream_format must be 'audio' or 'sse', got {excerpt(stream_format)} (send \"stream\": false "
                           "for one whole file).", param="stream_format")
    if stream is False:
        raise InvalidInput("stream is false but stream_format is given; send one of them.", param="stream")
    return stream_format


def _openai_speed(value) -> tuple[float, Optional[str]]:
    """OpenAI's ``speed`` (0.25-4.0) -> the model's (clamped to its range) and the header saying so, if clamped."""
    low, high = OPENAI_SPEED
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
        raise InvalidInput(f"speed must be a number from {low:g} to {high:g} (OpenAI's range), got {excerpt(value)}.",
                           param="speed")
    setting = GenerationConfig.setting("speed")
    used = min(max(float(value), setting.low), setting.high)
    if used == value:
        return used, None
    return used, f"{used:g}; asked {value:g}, clamped to the model's {setting.low:g}-{setting.high:g}"


def config_for(request: SpeechRequest, engine=None) -> GenerationConfig:
    """The request's settings; with the ``engine``, ``normalize_text`` not given is on within its bound."""
    config = GenerationConfig.from_mapping(request.settings)
    if engine is not None and request.normalize_by_default and config.normalize_text:
        config = config.replace(normalize_text=typed_default(request.text, engine.limits))
    return config


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
    headers = {"X-OmniVoice-Instruct": header_text(plan.instruct or ""),
               "X-OmniVoice-Ignored": header_text(", ".join(description.ignored)),
               "X-OmniVoice-Style": header_text(description.style or "")}
    if getattr(plan, "notes", None):   # SSML read otherwise than written
        headers["X-OmniVoice-SSML-Notes"] = header_text("; ".join(plan.notes))
    return headers


#: printable ASCII but ``%``: what a header value keeps as it is
_HEADER_SAFE = "".join(chr(c) for c in range(0x20, 0x7F) if chr(c) != "%")


def header_text(value: str) -> str:
    return urllib.parse.quote(value, safe=_HEADER_SAFE)


def plan_for(engine, request: SpeechRequest, voice, instruct: Optional[str], voices=None):
    """The engine's plan of a request (SSML when its input starts with ``<speak``, its voice names resolved by
    ``voices``).  Streaming splits the text at about ``STREAM_CHUNK_SECONDS`` of
    speech (longer chunks where that would pass the server's chunk limit) unless the request sets
    ``chunk_duration``/``chunk_threshold`` itself."""
    config = config_for(request, engine)
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


async def stream_body(job, plan, response_format: str, stream_format: str, on_done=None) -> AsyncIterator[bytes]:
    """The streamed response: audio bytes (or SSE events) as each chunk is decoded.

    Closing it (the client went away) cancels the job: ``job.aevents`` does so on exit."""
    encoder = encoding.StreamEncoder(response_format)
    rms = plan.voice.rms if plan.voice is not None else None
    checks = []
    try:
        async for event in job.aevents():
            if event.kind == "chunk":
                data = encoder.add(chunk_output(event.audio, rms, plan.config))
                if event.check is not None:
                    checks.append(event.check.to_dict())
            elif event.kind == "segment":   # SSML: the next stretch of the joined audio, as it is
                data = encoder.add(event.audio)
            elif event.kind == "result":
                data = encoder.finish()
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
            yield _sse(dict(done, checks=checks) if plan.config.guard else done)
    finally:
        encoder.close()


def _sse(payload: dict) -> bytes:
    return f"data: {json.dumps(payload)}\n\n".encode()


def _sse_delta(data: bytes) -> bytes:
    return _sse({"type": "speech.audio.delta", "audio": base64.b64encode(data).decode("ascii")})
