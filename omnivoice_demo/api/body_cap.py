"""One body cap in front of every route of the server: an ASGI middleware that counts a request's bytes as they
arrive (issue 49, item 8).

The HTTP API's routes count their own bodies (``bodies.read_body``), but Gradio's routes (``/gradio_api/queue/join``,
``/gradio_api/run/...``, ``/login``, ...) let FastAPI read a body whole before anything looks at it: a 300 MB body
was read into memory, a 50 MB one echoed back in the 422.  ``BodyCap`` stands in front of all of them:

* a declared ``Content-Length`` over the route's cap is a 413 before one byte of the body is read;
* a body without one (chunked) is counted as it arrives; past the cap the route is told the client has gone
  (``http.disconnect``: it stops reading) and the answer is the 413, the connection closed;
* nothing of the body is ever echoed: the answer names the size and the cap.

The cap of a route is its largest legitimate body: ``uploads`` (path prefixes: the upload routes) take the
upload limit, every other route ``default``.  The routes' own, tighter checks still run behind it.
"""

from __future__ import annotations

import json
from typing import Mapping

from .bodies import FORM_OVERHEAD_BYTES

#: the answer's type, as the HTTP API's other errors (``openai_errors``): Gradio's clients read ``error``/``detail``
_HEADERS = [(b"content-type", b"application/json"), (b"connection", b"close")]


#: the routes that take an upload (a clip, a voice file): their cap is the upload limit and a form's overhead
UPLOAD_PREFIXES = ("/gradio_api/upload", "/v1/audio/voices")


def upload_caps(limits, max_upload_mb: float = 0.0) -> dict[str, int]:
    """``BodyCap``'s ``uploads``: each upload route's cap, the larger of ``limits.max_upload_bytes`` and the app's
    ``--max-upload-mb``, plus a form's fields and boundaries (``bodies.FORM_OVERHEAD_BYTES``)."""
    largest = max(int(limits.max_upload_bytes), int(max_upload_mb * 2**20)) + FORM_OVERHEAD_BYTES
    return {prefix: largest for prefix in UPLOAD_PREFIXES}


def too_large_answer(size: int, limit: int, at_least: bool) -> bytes:
    message = (f"The request body is {'over ' if at_least else ''}{size / 2**20:.1f} MB; this server takes at most "
               f"{limit / 2**20:.1f} MB on this route. Send less (files go by upload, within max_upload_bytes).")
    return json.dumps({"error": {"message": message, "type": "invalid_request_error", "param": None,
                                 "code": "limit_exceeded"}, "detail": message}).encode()


class BodyCap:
    """``app`` behind a cap on every request body: ``default`` bytes, or ``uploads[prefix]`` for a path under one of
    its prefixes (the longest prefix that matches)."""

    def __init__(self, app, default: int, uploads: Mapping[str, int] | None = None):
        self.app, self.default = app, int(default)
        self.uploads = sorted((uploads or {}).items(), key=lambda item: -len(item[0]))

    def limit_for(self, path: str) -> int:
        return next((limit for prefix, limit in self.uploads if path.startswith(prefix)), self.default)

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        limit = self.limit_for(scope.get("path", ""))
        length = next((value for name, value in scope.get("headers", ()) if name == b"content-length"), None)
        if length is not None and length.strip().isdigit() and int(length) > limit:
            return await self._refuse(send, int(length), limit, at_least=False)
        received, over, started = 0, False, False

        async def counted():
            nonlocal received, over
            if over:
                return {"type": "http.disconnect"}
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    over = True
                    return {"type": "http.disconnect"}   # the route stops reading, as if the client had gone
            return message

        async def unless_over(message):
            nonlocal started
            if over and not started:
                return   # the 413 below answers instead
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counted, unless_over)
        except Exception:  # noqa: BLE001 - the route's own error on the cut-off body; the 413 answers it
            if not over or started:
                raise
        if over and not started:
            await self._refuse(send, received, limit, at_least=True)

    @staticmethod
    async def _refuse(send, size: int, limit: int, at_least: bool) -> None:
        body = too_large_answer(size, limit, at_least)
        await send({"type": "http.response.start", "status": 413,
                    "headers": [*_HEADERS, (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})
