"""Request bodies, counted as they arrive: a JSON body or a multipart upload within its cap.

FastAPI would read a body whole before anything checks its size; the route class
(``api.openai_route``) reads a JSON body through ``read_json`` first (413 as soon as it passes
``MAX_JSON_BYTES``; a body that is not JSON is a 400 saying so), and the upload routes read their
form through ``read_upload`` after their own checks (403, 404, 503), so a refused upload is never read.
"""

from __future__ import annotations

import pathlib
from typing import Optional

from fastapi import Request

from ..errors import InvalidInput
from ..studio import json_bodies
from .openai_errors import ApiError

#: the largest JSON body of a request (a speech request is text of at most a few hundred kilobytes)
MAX_JSON_BYTES = 1024 * 1024
#: what a multipart upload may add to its file (the other form fields, the boundaries)
FORM_OVERHEAD_BYTES = 64 * 1024
#: what a multipart upload may hold (the clip and its few fields)
FORM_MAX_FILES, FORM_MAX_FIELDS = 2, 16


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
    request._body = body  # starlette reads a cached body for .json() and .form() (FastAPI's too)
    return body


def _too_large(size: int, limit: int, what: str, param: Optional[str], at_least: bool = False) -> ApiError:
    return ApiError(413, f"The {what} is {'over ' if at_least else ''}{size / 2**20:.1f} MB; this server's limit is "
                         f"{limit / 2**20:.1f} MB (max_upload_bytes for uploads).", param=param,
                    code="limit_exceeded")


async def read_json(request: Request, example: str = ""):
    """The request's JSON body (at most ``MAX_JSON_BYTES``); a body that is not JSON, or nested too
    deeply to parse, is a 400."""
    return parse_json(await read_body(request, MAX_JSON_BYTES, "request body"), example)


def parse_json(body, example: str = ""):
    """``body`` (bytes or text) as strict JSON, whatever the request's Content-Type said; a 400 if it is not (NaN,
    Infinity and a key given twice included: ``studio.json_bodies``)."""
    return json_bodies.loads(body, example)


async def read_form(request: Request, limit: int):
    """A multipart form of at most ``limit`` bytes, its file in memory; a malformed one is a 400."""
    await read_body(request, limit + FORM_OVERHEAD_BYTES, "upload", param="file")
    try:
        return await request.form(max_files=FORM_MAX_FILES, max_fields=FORM_MAX_FIELDS)
    except Exception as exc:  # noqa: BLE001 - starlette and python-multipart raise several kinds
        detail = getattr(exc, "detail", None) or getattr(exc, "message", None) or type(exc).__name__
        raise InvalidInput(f"The upload is not a well-formed multipart form ({str(detail)[:120]}); send "
                           "multipart/form-data with the fields 'file', 'name' (or 'tag'), 'transcript' and "
                           "'consent'.", param="file") from None


async def read_upload(request: Request, model, limit: int):
    """A clip upload (multipart, at most ``limit`` bytes of clip) checked by its request ``model``
    (``schemas.VoiceUpload`` or ``schemas.VariantUpload``): (the model, the clip's bytes, its file ending)."""
    form = await read_form(request, limit)
    upload = model.checked({name: form.get(name) for name in model.model_fields})
    data = await upload.clip.read(limit + 1)
    if len(data) > limit:
        raise ApiError(413, f"The upload is over this server's limit of {limit / 2**20:.0f} MB (max_upload_bytes).",
                       param="file", code="limit_exceeded")
    return upload, data, pathlib.Path(upload.clip.filename or "x").suffix
