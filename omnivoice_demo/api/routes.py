"""The OpenAI-compatible HTTP API: routes, Bearer auth and OpenAI-style errors.

    POST /v1/audio/speech     text -> audio (streamed as OpenAI does: stream_format audio|sse; stream=false: whole)
    GET  /v1/audio/voices     saved voices and named voice designs (OpenAI's names included)
    POST /v1/audio/voices     a voice from an uploaded clip (multipart: name, file, transcript, consent)
    GET  /v1/audio/voices/{id}    one saved voice, with its style variants' lengths and transcripts
    PATCH /v1/audio/voices/{id}   rename a saved voice ({"name": "new name"})
    DELETE /v1/audio/voices/{id}  delete a saved voice
    POST /v1/audio/voices/{id}/variants        a style variant from a clip (multipart: tag, file, transcript, consent)
    DELETE /v1/audio/voices/{id}/variants/{tag}  delete a style variant
    GET  /v1/models           the models that answer
    GET  /health              model state and queue (no auth)

``build_router(context)`` returns a FastAPI ``APIRouter``; the Gradio app and
``omnivoice serve`` both mount it, with the same ``EngineService`` as the UI.
Errors are ``{"error": {"message", "type", "param", "code"}}`` with status
400 (a wrong request), 401 (API key), 403 (not allowed here), 404 (no such
model), 413 (over a limit), 429 (queue full), 503 (no model loaded), 500
(internal; the details go to the log only).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import hmac
import logging
import os
import pathlib
import tempfile
import time
from typing import Callable, Optional

from fastapi import Request  # at module level: the routes' annotations are resolved from here

from ..errors import (Busy, InvalidInput, ModelFolderError, ModelNotAvailable, OmniVoiceError, ResourceLimitExceeded,
                      excerpt, one_line)
from ..text.descriptions import read_description
from ..studio.results import checks_header, details
from ..studio.service import EngineService
from ..studio.variants import add_variant, check_room, listed_variants, remove_variant, variant_listing
from ..studio.vocabulary import VOICE_OBJECT, resolve_voice, voice_list, voice_object
from ..text.voice_names import check_free, clean_name, find_name
from . import encoding, speech

log = logging.getLogger(__name__)

API_KEY_ENV = "OMNIVOICE_API_KEY"
#: voices created through the API live here when the library is per session (shared mode)
API_VOICE_SESSION = "api"


@dataclasses.dataclass
class ApiContext:
    """What the routes work on: the app's models, saved voices and engine queue."""

    models: object                        # studio.ModelManager
    voices: object                        # studio.VoiceLibrary
    service: EngineService
    api_key: Optional[str] = None         # Bearer key for /v1 (None: open)
    shared: bool = False                  # a shared server: creating voices needs an API key
    transcribe: Optional[Callable] = None  # (audio [C, N], rate) -> text, when a recogniser is installed
    redact: Callable[[str], str] = str    # applied to every error message (shared mode: no server paths)
    lexicon: Optional[object] = None      # text.lexicon.Lexicon of --lexicon: under each request's pronunciations

    def session(self) -> Optional[str]:
        return API_VOICE_SESSION if getattr(self.voices, "private", False) else None


class ApiError(Exception):
    def __init__(self, status: int, message: str, type_: str = "invalid_request_error",
                 param: Optional[str] = None, code: Optional[str] = None, headers: Optional[dict] = None):
        super().__init__(message)
        self.status, self.message, self.type, self.param, self.code = status, message, type_, param, code
        self.headers = headers or {}


def api_error(exc: BaseException) -> ApiError:
    """Our exceptions -> status and OpenAI error fields; anything else is an internal error (logged)."""
    if isinstance(exc, ApiError):
        return exc
    if isinstance(exc, Busy):
        return ApiError(429, one_line(exc), "rate_limit_error", code="busy", headers={"Retry-After": "5"})
    if isinstance(exc, ResourceLimitExceeded):
        return ApiError(413, one_line(exc), param=exc.param, code="limit_exceeded")
    if isinstance(exc, InvalidInput):
        return ApiError(400, one_line(exc), param=exc.param, code="invalid_value")
    if isinstance(exc, (ModelNotAvailable, ModelFolderError)) or type(exc).__name__ == "ModelNotReady":
        return ApiError(503, one_line(exc), "server_error", code="model_not_ready")
    if isinstance(exc, (OmniVoiceError, ValueError)):
        return ApiError(400, one_line(exc), code="invalid_value")
    log.error("internal error in the HTTP API", exc_info=exc)
    return ApiError(500, "Internal error; the details are in the server log.", "server_error", code="internal_error")


def error_response(error: ApiError):
    from fastapi.responses import JSONResponse

    # a message that quotes a request's lone surrogate could not be encoded: escape it instead
    message = error.message.encode("utf-8", "backslashreplace").decode("utf-8")
    body = {"error": {"message": message, "type": error.type, "param": error.param, "code": error.code}}
    return JSONResponse(body, status_code=error.status, headers=error.headers)


#: the largest JSON body of a request (a speech request is text of at most a few hundred kilobytes)
MAX_JSON_BYTES = 1024 * 1024
#: what a multipart upload may add to its file (the other form fields, the boundaries)
FORM_OVERHEAD_BYTES = 64 * 1024


async def read_body(request: Request, limit: int, what: str, param: Optional[str] = None) -> bytes:
    """The request's body, counted as it arrives: 413 as soon as it passes ``limit`` bytes (a declared
    Content-Length over the limit before anything is read; a chunked body without one is cut off too)."""
    length = request.headers.get("content-length")
    if length and length.isdigit() and int(length) > limit:
        raise _too_large(int(length), limit, what, param)
    received, parts = 0, []
    async for part in request.stream():
        received += len(part)
        if received > limit:
            raise _too_large(received, limit, what, param, at_least=True)
        parts.append(part)
    body = b"".join(parts)
    request._body = body  # starlette reads a cached body for .json() and .form()
    return body


def _too_large(size: int, limit: int, what: str, param: Optional[str], at_least: bool = False) -> ApiError:
    return ApiError(413, f"The {what} is {'over ' if at_least else ''}{size / 2**20:.1f} MB; this server's limit is "
                         f"{limit / 2**20:.1f} MB (max_upload_bytes for uploads).", param=param,
                    code="limit_exceeded")


async def read_json(request: Request, example: str = ""):
    """The request's JSON body (at most ``MAX_JSON_BYTES``); a body that is not JSON, or nested too
    deeply to parse, is a 400."""
    import json

    body = await read_body(request, MAX_JSON_BYTES, "request body")
    try:
        return json.loads(body)
    except (ValueError, RecursionError) as exc:
        reason = "nested too deeply" if isinstance(exc, RecursionError) else "not valid JSON"
        raise InvalidInput(f"The request body is {reason}{'; send ' + example if example else ''}.") from None


async def read_form(request: Request, limit: int):
    """A multipart form of at most ``limit`` bytes, its file in memory; a malformed one is a 400."""
    await read_body(request, limit + FORM_OVERHEAD_BYTES, "upload", param="file")
    try:
        return await request.form(max_files=2, max_fields=16)
    except Exception as exc:  # noqa: BLE001 - starlette and python-multipart raise several kinds
        detail = getattr(exc, "detail", None) or getattr(exc, "message", None) or type(exc).__name__
        raise InvalidInput(f"The upload is not a well-formed multipart form ({str(detail)[:120]}); send "
                           "multipart/form-data with the fields 'file', 'name' (or 'tag'), 'transcript' and "
                           "'consent'.", param="file") from None


async def read_clip_form(request: Request, limit: int, label: str) -> tuple:
    """(the clip's bytes, its file ending, its transcript or None, the value of the form field ``label``) of a
    voice or variant upload, in the order a client fills it: the clip, ``label``, consent."""
    form = await read_form(request, limit)
    upload = form.get("file") or form.get("audio_sample")
    value = str(form.get(label) or "").strip()
    transcript = str(form.get("transcript") or "").strip() or None
    consent = str(form.get("consent") or "").strip().lower() in ("true", "1", "yes", "on")
    if upload is None or not hasattr(upload, "read"):
        raise InvalidInput("Send the reference clip as the multipart file field 'file'.", param="file")
    if not value:
        what = "the voice a name" if label == "name" else "the style a tag (such as cheerful)"
        raise InvalidInput(f"Give {what}: form field '{label}'.", param=label)
    if not consent:
        raise InvalidInput("Set consent=true to confirm you have the right to use this voice (your own, or one "
                           "you have permission to use).", param="consent")
    data = await upload.read(limit + 1)
    if len(data) > limit:
        raise ApiError(413, f"The upload is over this server's limit of {limit / 2**20:.0f} MB (max_upload_bytes).",
                       param="file", code="limit_exceeded")
    return data, pathlib.Path(upload.filename or "x").suffix, transcript, value


def build_router(context: ApiContext):
    from fastapi import APIRouter
    from fastapi.responses import JSONResponse, Response, StreamingResponse

    router = APIRouter()

    def check_key(request: Request) -> None:
        if not context.api_key:
            return
        given = request.headers.get("authorization", "")
        scheme, _, token = given.partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(token.strip().encode(), context.api_key.encode()):
            raise ApiError(401, "Incorrect or missing API key: send 'Authorization: Bearer <key>' with the key this "
                                "server was started with (--api-key or OMNIVOICE_API_KEY).", code="invalid_api_key",
                           headers={"WWW-Authenticate": "Bearer"})

    def answer(fn):
        """Run a route body; map every exception to an OpenAI-style JSON error."""

        @functools.wraps(fn)
        async def route(request: Request):
            try:
                if request.url.path.startswith("/v1"):
                    check_key(request)
                return await fn(request)
            except Exception as exc:  # noqa: BLE001 - every error becomes a JSON answer
                error = api_error(exc)
                error.message = context.redact(error.message)
                return error_response(error)
        return route

    def model_for(name: str):
        if name in (speech.DEFAULT_MODEL, *speech.OPENAI_MODELS):
            return context.models.get()
        if name in context.models.labels():
            return context.models.get(name)
        raise ApiError(404, f"The model {excerpt(name)} does not exist here; use 'omnivoice' (the active model) or one "
                            f"of GET /v1/models.", param="model", code="model_not_found")

    def saved_names() -> list[str]:
        return context.voices.names(context.session())

    @router.get("/health")
    @answer
    async def health(request: Request):
        state = context.models.status.state
        try:
            active = context.models.get().label
        except Exception:  # noqa: BLE001 - no model is an answer here, not an error
            active = None
        answer = {"status": "ok" if active else state, "model_loaded": active is not None, "model": active,
                  "queue": context.service.stats(), "formats": encoding.formats()}
        if active is None and state in ("error", "loading"):  # why there is no model, or how far the load is
            answer["message"] = context.redact(context.models.status.message)
        return JSONResponse(answer)

    @router.get("/v1/models")
    @answer
    async def models(request: Request):
        created = int(time.time())
        labels = context.models.labels()
        ids = ([speech.DEFAULT_MODEL] + labels) if labels else []  # "omnivoice" is the active model: none, none
        return JSONResponse({"object": "list", "data": [
            {"id": name, "object": "model", "created": created, "owned_by": "omnivoice-onnx-studio"} for name in ids]})

    @router.get("/v1/audio/voices")
    @answer
    async def voices(request: Request):
        session = context.session()
        items = voice_list(saved_names(), lambda name: context.voices.created_at(name, session),
                           lambda name: listed_variants(name, context.voices.tags(name, session)))
        return JSONResponse({"object": "list", "data": items, "voices": items})

    @router.post("/v1/audio/voices")
    @answer
    async def create_voice(request: Request):
        check_may_change_voices()
        loaded = context.models.get()
        data, suffix, transcript, name = await read_clip_form(request, loaded.engine.limits.max_upload_bytes, "name")
        name = check_free(clean_name(name), saved_names())  # before the work; save checks again
        voice = await asyncio.to_thread(_clone, context, loaded, data, suffix, transcript, name)
        context.voices.save(voice, name, context.session())
        return JSONResponse(voice_object(voice.name, "saved", time.time(), seconds=round(voice.seconds, 2),
                                         transcript=voice.transcript), status_code=201)

    @router.get("/v1/audio/voices/{voice_id}")
    @answer
    async def one_voice(request: Request):
        voice_id = saved_voice_id(request)
        voice = context.voices.load(voice_id, context.session())
        voice.name = voice_id   # as listed: the file's name
        return JSONResponse(saved_voice_object(voice))

    @router.post("/v1/audio/voices/{voice_id}/variants")
    @answer
    async def create_variant(request: Request):
        check_may_change_voices()
        voice_id = saved_voice_id(request)
        loaded = context.models.get()
        data, suffix, transcript, tag = await read_clip_form(request, loaded.engine.limits.max_upload_bytes, "tag")
        most = context.voices.max_variants
        check_room(context.voices.load(voice_id, context.session()), tag, most)  # before the work; added checks again
        clip = await asyncio.to_thread(_clone, context, loaded, data, suffix, transcript, tag)
        voice = context.voices.change(voice_id, lambda saved: add_variant(saved, tag, clip, most), context.session())
        return JSONResponse(saved_voice_object(voice), status_code=201)

    @router.delete("/v1/audio/voices/{voice_id}/variants/{tag}")
    @answer
    async def delete_variant(request: Request):
        check_may_change_voices()
        voice_id, tag = saved_voice_id(request), request.path_params["tag"]
        if find_name(tag, context.voices.tags(voice_id, context.session())) is None:
            raise ApiError(404, f"The voice {excerpt(voice_id)} has no style {excerpt(tag)}; GET "
                                f"/v1/audio/voices/{voice_id} lists its variants.", param="tag",
                           code="variant_not_found")
        voice = context.voices.change(voice_id, lambda saved: remove_variant(saved, tag), context.session())
        return JSONResponse(saved_voice_object(voice))

    def saved_voice_object(voice) -> dict:
        return voice_object(voice.name, "saved", context.voices.created_at(voice.name, context.session()),
                            seconds=round(voice.seconds, 2), transcript=voice.transcript,
                            variants=variant_listing(voice, details=True))

    def check_may_change_voices() -> None:
        if context.shared and not context.api_key:
            raise ApiError(403, "Changing voices on a shared server needs an API key: start it with --api-key "
                                f"(or {API_KEY_ENV}).", "permission_error", code="api_key_required")

    def saved_voice_id(request: Request) -> str:
        voice_id = find_name(request.path_params["voice_id"], saved_names())
        if voice_id is None:
            raise ApiError(404, f"There is no saved voice {excerpt(request.path_params['voice_id'])}; "
                                "GET /v1/audio/voices lists them (named designs cannot be changed).",
                           param="voice_id", code="voice_not_found")
        return voice_id

    @router.patch("/v1/audio/voices/{voice_id}")
    @answer
    async def rename_voice(request: Request):
        check_may_change_voices()
        voice_id = saved_voice_id(request)
        body = await read_json(request, example='{"name": "new name"}')
        new_name = body.get("name") if isinstance(body, dict) else None
        if not isinstance(new_name, str) or not new_name.strip():
            raise InvalidInput("Send the new name as {\"name\": \"new name\"}.", param="name")
        name = context.voices.rename(voice_id, new_name, context.session())
        return JSONResponse(voice_object(name, "saved", context.voices.created_at(name, context.session())))

    @router.delete("/v1/audio/voices/{voice_id}")
    @answer
    async def delete_voice(request: Request):
        check_may_change_voices()
        voice_id = saved_voice_id(request)
        context.voices.delete(voice_id, context.session())
        return JSONResponse({"id": voice_id, "object": VOICE_OBJECT, "deleted": True})

    @router.post("/v1/audio/speech")
    @answer
    async def create_speech(request: Request):
        parsed = speech.parse(await read_json(request))
        loaded = model_for(parsed.model)
        names = saved_names()
        plan, description = await asyncio.to_thread(_plan, context, loaded, parsed, names)
        job = context.service.submit(lambda: loaded.engine.run(plan), estimate=loaded.engine.estimate_seconds(plan),
                                     lock=loaded.lock, label="http")
        headers = {"X-OmniVoice-Seed": str(plan.config.seed), "X-OmniVoice-Chunks": str(len(plan.chunks)),
                   **speech.description_headers(plan, description)}
        if parsed.speed_note:
            headers["X-OmniVoice-Speed"] = parsed.speed_note
        if parsed.stream_format:
            media = "text/event-stream" if parsed.stream_format == "sse" else encoding.media_type(parsed.response_format)
            body_iter = speech.stream_body(job, plan, parsed.response_format, parsed.stream_format)
            return StreamingResponse(body_iter, media_type=media, headers=headers)
        result = await _until_done_or_gone(job, request)
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
        return Response(data, media_type=encoding.media_type(parsed.response_format), headers=headers)

    return router


def _plan(context: ApiContext, loaded, parsed: speech.SpeechRequest, names: list[str]):
    max_frames = loaded.engine.limits.max_reference_frames
    voices = functools.partial(resolve_voice, saved_names=names, load_saved=lambda name: context.voices.load(
        name, context.session(), max_frames=max_frames))
    if context.lexicon:
        parsed = dataclasses.replace(parsed, pronunciations=context.lexicon.merged(parsed.pronunciations))
    if parsed.script:
        return speech.script_plan_for(loaded.engine, parsed, voices), read_description(None)
    voice, design = voices(parsed.voice)
    voice, instruct, description = speech.instruct_for(loaded.engine, parsed, voice, design)
    return speech.plan_for(loaded.engine, parsed, voice, instruct, voices), description


def _clone(context: ApiContext, loaded, data: bytes, suffix: str, transcript: Optional[str], name: str):
    """The voice of an uploaded clip (not saved: the route saves it, as a voice or a variant)."""
    from ..audio import processing as audio_ops
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
        try:
            transcript = context.transcribe(audio, rate)
        except OmniVoiceError as exc:
            raise InvalidInput(f"No transcript was sent and the speech recogniser could not run ({one_line(exc)}); "
                               "send what is said in the clip as 'transcript'.", param="transcript") from None
    with loaded.lock:
        return loaded.engine.clone_voice(audio, rate, transcript, name=name)


async def _until_done_or_gone(job, request):
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


def api_key_from(value: Optional[str]) -> Optional[str]:
    """``--api-key`` or the environment variable; empty means none."""
    key = value if value is not None else os.environ.get(API_KEY_ENV)
    return key.strip() if key and key.strip() else None
