"""``POST /dev/captioned_speech``'s answers: speech with every word's time, in Kokoro-FastAPI's shape (the route
is ``routes.captioned_speech``).

The body is ``/v1/audio/speech``'s (``api.speech.parse``: the same fields, limits, voices and API key), with
word timing always on (``GenerationConfig.word_timestamps``: each chunk aligned with its own text by the
speech recogniser, ``engine.word_times``).  As Kokoro-FastAPI answers, so its clients work unchanged:

* ``stream: false``: one JSON object ``{"audio": base64 of the whole file, "audio_format": "mp3",
  "timestamps": [{"word", "start_time", "end_time"}, ...]}`` (seconds in the file; each word also has its
  ``probability``, and its ``speaker`` in a dialogue script);
* ``stream: true`` (the default, as Kokoro-FastAPI's): ``application/x-ndjson``, one such object per line, each
  with the next piece of the file (base64; the pieces end to end are the file) and the words of that piece,
  times in the whole stream; the last line carries the file's end and no words.

``stream_format`` (OpenAI's audio/sse) does not apply here and is refused.
"""

from __future__ import annotations

import base64
import json
from typing import AsyncIterator

from ..constants import SAMPLE_RATE
from ..engine.word_times import place_words, shifted
from ..errors import InvalidInput, excerpt
from ..studio.stream_audio import chunk_output
from . import encoding, speech

ROUTE = "/dev/captioned_speech"
NDJSON = "application/x-ndjson"


def timestamps(words) -> list[dict]:
    """Words in Kokoro-FastAPI's form: ``word``, ``start_time``, ``end_time`` (s), with ``probability`` (and
    ``speaker`` in a script)."""
    out = []
    for word in words:
        entry = {"word": word.word, "start_time": word.start, "end_time": word.end,
                 "probability": round(word.probability, 4)}
        if word.speaker is not None:
            entry["speaker"] = word.speaker
        out.append(entry)
    return out


def parse(body) -> tuple[speech.SpeechRequest, bool]:
    """The speech request with word timing on, and whether to stream (default true, as Kokoro-FastAPI)."""
    if isinstance(body, dict) and body.get("stream_format") is not None:
        raise InvalidInput("stream_format does not apply to captioned speech: send \"stream\": true for NDJSON lines "
                           "(each an audio piece and its words) or false for one JSON object.", param="stream_format")
    stream = body.get("stream", True) if isinstance(body, dict) else True
    if not isinstance(stream, bool):
        raise InvalidInput(f"stream must be true or false, got {excerpt(stream)}.", param="stream")
    parsed = speech.parse(dict(body, stream=False) if isinstance(body, dict) else body)
    parsed.settings["word_timestamps"] = True
    if stream:
        if parsed.settings.get("loudness") is not None:
            raise InvalidInput("loudness normalises the whole file: send \"stream\": false with it.", param="loudness")
        parsed.stream_format = "audio"   # planned in short chunks, as a streamed speech request
    return parsed, stream


def whole_body(result, response_format: str) -> dict:
    data = encoding.encode(result.audio, response_format, result.sample_rate)
    return {"audio": base64.b64encode(data).decode("ascii"), "audio_format": response_format,
            "timestamps": timestamps(result.words)}


async def stream_lines(job, plan, response_format: str) -> AsyncIterator[bytes]:
    """NDJSON lines as each chunk is decoded: its piece of the file and its words on the stream's time line.
    Closing it (the client went away) cancels the job (``job.aevents``)."""
    encoder = encoding.StreamEncoder(response_format)
    rms = plan.voice.rms if plan.voice is not None else None
    sent = 0   # samples of audio sent so far: where the next piece starts
    try:
        async for event in job.aevents():
            if event.kind == "chunk":
                piece = chunk_output(event.audio, rms, plan.config)
                words = shifted(place_words([event.words or []], [event.audio], plan.config, len(piece)),
                                sent / SAMPLE_RATE)
            elif event.kind == "segment":   # SSML: the next stretch of the joined audio; its words are placed
                piece, words = event.audio, event.words or []
            elif event.kind == "result":
                yield _line(encoder.finish(), response_format, [])
                continue
            else:
                continue
            sent += len(piece)
            yield _line(encoder.add(piece), response_format, words)
    finally:
        encoder.close()


def _line(data: bytes, response_format: str, words) -> bytes:
    return (json.dumps({"audio": base64.b64encode(data).decode("ascii"), "audio_format": response_format,
                        "timestamps": timestamps(words)}) + "\n").encode()
