"""``POST /v1/audio/speech``: text -> audio, streamed as OpenAI does (``stream_format`` audio|sse) or whole
(``stream: false``).  The body is ``schemas.SpeechBody``; ``api.speech`` plans it and streams it."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
from typing import Optional

from fastapi import APIRouter, Request
from fastapi.responses import Response, StreamingResponse

from ...text.descriptions import read_description
from ...studio.results import checks_header, details
from ...studio.vocabulary import SavedNames, resolve_voice
from .. import encoding, speech
from ..context import ApiContext, Context
from ..headers import capped_response_headers
from ..openai_errors import ApiError
from ..schemas import SpeechBody
from .models import model_for

router = APIRouter(tags=["speech"])


@router.post("/v1/audio/speech")
async def create_speech(request: Request, body: SpeechBody, context: Context):
    parsed = body.request()
    loaded = model_for(context, parsed.model)
    plan, description = await asyncio.to_thread(plan_request, context, loaded, parsed)
    job = context.service.submit(lambda: loaded.engine.run(plan), estimate=loaded.engine.estimate_seconds(plan),
                                 lock=loaded.lock, label="http")
    headers = {"X-OmniVoice-Seed": str(plan.config.seed), "X-OmniVoice-Chunks": str(len(plan.chunks)),
               **speech.description_headers(plan, description)}
    if parsed.speed_note:
        headers["X-OmniVoice-Speed"] = parsed.speed_note
    if parsed.stream_format:
        media = "text/event-stream" if parsed.stream_format == "sse" else encoding.media_type(parsed.response_format)
        headers, whole = capped_response_headers(headers, context.details)
        body_iter = speech.stream_body(job, plan, parsed.response_format, parsed.stream_format, details=whole)
        return StreamingResponse(body_iter, media_type=media, headers=headers)
    result = await until_done_or_gone(job, request)
    if result is None:
        return Response(status_code=499)
    info = details(result, loaded.label)
    data = await asyncio.to_thread(encoding.encode, result.audio, parsed.response_format, result.sample_rate)
    headers.update({"X-OmniVoice-Codes-SHA256": info["codes_sha256"],
                    "X-OmniVoice-Duration": str(info["duration_s"])})
    if "checks" in info:  # the sentence check: per chunk its CER, takes and the kept one
        headers["X-OmniVoice-Checks"] = checks_header(info["checks"])
    if result.turns:  # a script: who speaks when
        headers["X-OmniVoice-Turns"] = speech.turns_header(result.turns)
    headers, _ = capped_response_headers(headers, context.details)
    return Response(data, media_type=encoding.media_type(parsed.response_format), headers=headers)


@router.get("/v1/audio/speech/details/{token}")
async def speech_details(token: str, context: Context):
    """The whole ``X-OmniVoice-*`` values a response had to cut (``api.headers``: each header at most 1 KB)."""
    kept = context.details.get(token)
    if kept is None:
        raise ApiError(404, "No such details: they are kept for the newest responses whose X-OmniVoice headers "
                            "were cut; take them from the X-OmniVoice-Details header of the response.",
                       code="not_found")
    return {"headers": kept}


def plan_request(context: ApiContext, loaded, parsed: speech.SpeechRequest, names: Optional[SavedNames] = None):
    """(the engine's plan, the voice description) of a checked request (in a worker thread): its voices resolved
    (``vocabulary.choose_voice``: a built-in voice or design without asking the store; a saved one by one query of
    ``VoiceStore.find``, or among ``names`` when given), the server's lexicon under the request's pronunciations."""
    max_frames = loaded.engine.limits.max_reference_frames
    if names is None:
        names = functools.partial(_find_saved, context)
    voices = functools.partial(resolve_voice, saved_names=names, load_saved=lambda name: context.voices.load(
        name, context.session(), max_frames=max_frames))
    if context.lexicon:
        parsed = dataclasses.replace(parsed, pronunciations=context.lexicon.merged(parsed.pronunciations))
    if parsed.script:
        return speech.script_plan_for(loaded.engine, parsed, voices), read_description(None)
    voice, design = voices(parsed.voice)
    voice, instruct, description = speech.instruct_for(loaded.engine, parsed, voice, design)
    return speech.plan_for(loaded.engine, parsed, voice, instruct, voices), description


def _find_saved(context: ApiContext, name: str) -> Optional[str]:
    return context.voices.find(name, context.session())


async def until_done_or_gone(job, request: Request):
    """The job's result; the job is cancelled when the client disconnects first (None then)."""
    async def watch():
        while not job.done:
            if await request.is_disconnected():
                job.cancel()
                return
            await asyncio.sleep(0.25)

    watcher = asyncio.create_task(watch())
    result = None
    try:
        async for event in job.aevents():
            if event.kind == "result":
                result = event
    finally:
        watcher.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watcher
    return result if job.state == "finished" else None
