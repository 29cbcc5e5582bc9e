"""The saved voices: ``/v1/audio/voices`` and ``/v1/audio/voices/{voice_id}``.

    GET    /v1/audio/voices        saved voices a page at a time (``limit``, ``after``), then the named voice
                                   designs (OpenAI's names included) on the last page
    POST   /v1/audio/voices        a voice from an uploaded clip (multipart ``schemas.VoiceUpload``)
    GET    /v1/audio/voices/{id}   one saved voice, with its style variants' lengths and transcripts
    PATCH  /v1/audio/voices/{id}   rename a saved voice (``schemas.RenameVoiceBody``)
    DELETE /v1/audio/voices/{id}   delete a saved voice

Changing voices on a shared server needs an API key (``auth.may_change_voices``); an upload is read
(``bodies.read_upload``) only after that and the other checks of its route.  Every use of the store runs off
the event loop, bounded in time (``api.store_calls``): a stalled database is a 503, never a server that hangs.
"""

from __future__ import annotations

import asyncio
import pathlib
import tempfile
import time
from typing import Annotated, Optional

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import JSONResponse

from ...errors import InvalidInput, OmniVoiceError, excerpt, one_line
from ...studio.variants import listed_variants, variant_listing
from ...studio.vocabulary import VOICE_OBJECT, voice_list, voice_object
from ...studio.voices import check_not_built_in
from ...text.voice_names import MAX_NAME_LENGTH, check_free, clean_name
from ..auth import may_change_voices
from ..bodies import read_upload
from ..context import ApiContext, Context
from ..openai_errors import ApiError
from ..schemas import RenameVoiceBody, VoiceUpload, form_schema
from ..store_calls import store_call

router = APIRouter(tags=["voices"])


#: saved voices one page of ``GET /v1/audio/voices`` lists by default, and at most
DEFAULT_PAGE, MAX_PAGE = 100, 1000


async def saved_voice(voice_id: str, context: Context) -> str:
    """The saved voice of the path's ``voice_id`` as listed (names compare as voice names do); else 404."""
    found = await store_call(context, context.voices.find, voice_id, context.session())
    if found is None:
        raise ApiError(404, f"There is no saved voice {excerpt(voice_id)}; GET /v1/audio/voices lists them (named "
                            "designs cannot be changed).", param="voice_id", code="voice_not_found")
    return found


#: a route's ``voice_id: SavedVoice`` is a saved voice's name as listed
SavedVoice = Annotated[str, Depends(saved_voice)]
#: the dependency of every route that changes voices
CHANGES_VOICES = [Depends(may_change_voices)]


@router.get("/v1/audio/voices")
async def list_voices(context: Context,
                      limit: Annotated[int, Query(ge=1, le=MAX_PAGE, description="saved voices a page holds")] =
                      DEFAULT_PAGE,
                      after: Annotated[Optional[str], Query(max_length=4 * MAX_NAME_LENGTH, description=(
                          "the last_id of the page before: the saved voices after it"))] = None):
    """A page of the saved voices (one query; ordered by name as names compare), OpenAI's list shape: ``data``,
    ``has_more``, ``first_id``, ``last_id`` (give it as ``after`` for the next page).  The built-in voices (the
    named designs and ``auto``) follow the saved ones on the last page."""
    entries, more = await store_call(context, context.voices.listing, context.session(), limit, after)
    items = [voice_object(entry.name, "saved", entry.created_at, variants=listed_variants(entry.name, entry.tags))
             for entry in entries]
    if not more:
        items += voice_list([])
    return JSONResponse({"object": "list", "data": items, "voices": items, "has_more": more,
                         "first_id": items[0]["id"] if items else None, "last_id": items[-1]["id"] if items else None})


@router.post("/v1/audio/voices", dependencies=CHANGES_VOICES, openapi_extra=form_schema(VoiceUpload),
             status_code=201)
async def create_voice(request: Request, context: Context):
    loaded = context.models.get()
    upload, data, suffix = await read_upload(request, VoiceUpload, loaded.engine.limits.max_upload_bytes)
    name = check_not_built_in(clean_name(upload.value))
    check_free(name, await store_call(context, context.saved_names))  # before the work; save checks again
    voice = await asyncio.to_thread(clone_upload, context, loaded, data, suffix, upload.transcript, name)
    await store_call(context, context.voices.save, voice, name, context.session())
    return JSONResponse(voice_object(voice.name, "saved", time.time(), seconds=round(voice.seconds, 2),
                                     transcript=voice.transcript), status_code=201)


@router.get("/v1/audio/voices/{voice_id}")
async def one_voice(voice_id: SavedVoice, context: Context):
    def read() -> dict:
        voice = context.voices.load(voice_id, context.session())
        voice.name = voice_id   # as listed: the file's name
        return saved_voice_object(context, voice)

    return JSONResponse(await store_call(context, read))


@router.patch("/v1/audio/voices/{voice_id}", dependencies=CHANGES_VOICES)
async def rename_voice(voice_id: SavedVoice, body: RenameVoiceBody, context: Context):
    def rename() -> dict:
        name = context.voices.rename(voice_id, body.name, context.session())
        return voice_object(name, "saved", context.voices.created_at(name, context.session()))

    return JSONResponse(await store_call(context, rename))


@router.delete("/v1/audio/voices/{voice_id}", dependencies=CHANGES_VOICES)
async def delete_voice(voice_id: SavedVoice, context: Context):
    await store_call(context, context.voices.delete, voice_id, context.session())
    return JSONResponse({"id": voice_id, "object": VOICE_OBJECT, "deleted": True})


def saved_voice_object(context: ApiContext, voice) -> dict:
    """A saved voice as the API shows it: its length, transcript and style variants."""
    return voice_object(voice.name, "saved", context.voices.created_at(voice.name, context.session()),
                        seconds=round(voice.seconds, 2), transcript=voice.transcript,
                        variants=variant_listing(voice, details=True))


def clone_upload(context: ApiContext, loaded, data: bytes, suffix: str, transcript: Optional[str], name: str):
    """The voice of an uploaded clip (not saved: the route saves it, as a voice or a variant)."""
    from ...audio import processing as audio_ops
    from ...audio.best_part import best_part_of_long

    with tempfile.TemporaryDirectory(prefix="omnivoice-upload-") as folder:
        path = pathlib.Path(folder) / f"reference{suffix if suffix.isascii() and len(suffix) <= 6 else ''}"
        path.write_bytes(data)
        limits = loaded.engine.limits
        audio, rate = audio_ops.load_audio_file(path, max_seconds=limits.max_reference_seconds,
                                                max_bytes=limits.max_upload_bytes, what="reference clip")
    if transcript is None:
        if context.transcribe is None:
            raise InvalidInput("The transcript is required: send what is said in the clip as the form field "
                               "'transcript' (this server has no speech recogniser).", param="transcript")
        audio, _ = best_part_of_long(audio, rate)   # as the Clone tab's "Keep the best 10 s": recognised and cloned
        try:
            transcript = context.transcribe(audio, rate)
        except OmniVoiceError as exc:
            raise InvalidInput(f"No transcript was sent and the speech recogniser could not run ({one_line(exc)}); "
                               "send what is said in the clip as 'transcript'.", param="transcript") from None
    with loaded.lock:
        return loaded.engine.clone_voice(audio, rate, transcript, name=name)
