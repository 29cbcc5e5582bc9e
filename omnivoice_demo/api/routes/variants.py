"""A saved voice's style variants: ``/v1/audio/voices/{voice_id}/variants``.

    POST   /v1/audio/voices/{id}/variants        a style variant from a clip (multipart ``schemas.VariantUpload``)
    DELETE /v1/audio/voices/{id}/variants/{tag}  delete a style variant
"""

from __future__ import annotations

import asyncio

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from ...errors import excerpt
from ...studio.variants import add_variant, check_room, remove_variant
from ...text.voice_names import find_name
from ..bodies import read_upload
from ..context import Context
from ..openai_errors import ApiError
from ..schemas import VariantUpload, form_schema
from ..store_calls import store_call
from .voices import CHANGES_VOICES, SavedVoice, clone_upload, saved_voice_object

router = APIRouter(tags=["voices"])


@router.post("/v1/audio/voices/{voice_id}/variants", dependencies=CHANGES_VOICES,
             openapi_extra=form_schema(VariantUpload), status_code=201)
async def create_variant(request: Request, voice_id: SavedVoice, context: Context):
    loaded = context.models.get()
    upload, data, suffix = await read_upload(request, VariantUpload, loaded.engine.limits.max_upload_bytes)
    tag, most = upload.value, context.voices.max_variants
    saved = await store_call(context, context.voices.load, voice_id, context.session())
    check_room(saved, tag, most)  # before the work; added checks again
    clip = await asyncio.to_thread(clone_upload, context, loaded, data, suffix, upload.transcript, tag)

    def add() -> dict:   # the store off the event loop (api.store_calls)
        voice = context.voices.change(voice_id, lambda saved: add_variant(saved, tag, clip, most), context.session())
        return saved_voice_object(context, voice)

    return JSONResponse(await store_call(context, add), status_code=201)


@router.delete("/v1/audio/voices/{voice_id}/variants/{tag}", dependencies=CHANGES_VOICES)
async def delete_variant(voice_id: SavedVoice, tag: str, context: Context):
    if find_name(tag, await store_call(context, context.voices.tags, voice_id, context.session())) is None:
        raise ApiError(404, f"The voice {excerpt(voice_id)} has no style {excerpt(tag)}; GET "
                            f"/v1/audio/voices/{voice_id} lists its variants.", param="tag",
                       code="variant_not_found")
    def remove() -> dict:
        voice = context.voices.change(voice_id, lambda saved: remove_variant(saved, tag), context.session())
        return saved_voice_object(context, voice)

    return JSONResponse(await store_call(context, remove))
