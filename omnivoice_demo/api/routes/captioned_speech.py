"""``POST /dev/captioned_speech``: the body of ``/v1/audio/speech`` (``schemas.SpeechBody``: the same fields, limits,
voices and API key) -> the audio with every word's time, in Kokoro-FastAPI's shape (``api.captioned``)."""

from __future__ import annotations

import asyncio

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

from .. import captioned, speech
from ..bodies import read_json
from ..context import Context
from ..headers import capped_response_headers
from ..schemas import SpeechBody
from .models import model_for
from .speech import plan_request, until_done_or_gone

router = APIRouter(tags=["speech"])


@router.post(captioned.ROUTE)
async def captioned_speech(request: Request, body: SpeechBody, context: Context):
    parsed, stream = captioned.parse(await read_json(request))   # ``body`` checked it; stream defaults to true here
    loaded = model_for(context, parsed.model)
    plan, description = await asyncio.to_thread(plan_request, context, loaded, parsed)
    job = context.service.submit(lambda: loaded.engine.run(plan), estimate=loaded.engine.estimate_seconds(plan),
                                 lock=loaded.lock, label="http")
    headers = {"X-OmniVoice-Seed": str(plan.config.seed), "X-OmniVoice-Chunks": str(len(plan.chunks)),
               **speech.description_headers(plan, description)}
    if parsed.speed_note:
        headers["X-OmniVoice-Speed"] = parsed.speed_note
    headers, _ = capped_response_headers(headers, context.details)
    if stream:
        return StreamingResponse(captioned.stream_lines(job, plan, parsed.response_format),
                                 media_type=captioned.NDJSON, headers=headers)
    result = await until_done_or_gone(job, request)
    if result is None:
        return Response(status_code=499)
    answer = await asyncio.to_thread(captioned.whole_body, result, parsed.response_format)
    return JSONResponse(answer, headers=headers)
