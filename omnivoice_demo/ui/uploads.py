"""Gradio's upload route under the studio's ``UploadQuota``: an ASGI middleware of the Gradio app.

A body with a Content-Length is charged before it is read and refused (413)
when that passes the visitor's or the server's budget; a chunked body is charged
as it arrives and cut off at the budget.  The visitor is the request's client:
the peer of its connection, or behind a proxy named by ``--forwarded-allow-ips``
the address that proxy saw (``settings.network``); a forged X-Forwarded-For
names no one else (issue 49).
"""

from __future__ import annotations

from starlette.responses import PlainTextResponse

from ..studio.uploads import UploadQuota

UPLOAD_PATHS = ("/gradio_api/upload",)


def visitor_of(scope) -> str:
    client = scope.get("client")
    return client[0] if client else "unknown"


class UploadQuotaMiddleware:
    def __init__(self, app, quota: UploadQuota):
        self.app, self.quota = app, quota

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope["method"] != "POST" or not scope["path"].endswith(UPLOAD_PATHS):
            return await self.app(scope, receive, send)
        visitor = visitor_of(scope)
        length = dict(scope["headers"]).get(b"content-length", b"")
        if length.isdigit():  # the server reads no more than declared
            refused = self.quota.charge(visitor, int(length))
            if refused:
                return await PlainTextResponse(refused, status_code=413)(scope, receive, send)
            return await self.app(scope, receive, send)
        refused = None

        async def counted():
            nonlocal refused
            message = await receive()
            if message["type"] == "http.request" and refused is None:
                refused = self.quota.charge(visitor, len(message.get("body", b"")))
                if refused:  # the route stops reading as if the visitor had gone
                    return {"type": "http.disconnect"}
            return message

        async def unless_refused(message):
            if refused is None:
                await send(message)

        try:
            await self.app(scope, counted, unless_refused)
        except Exception:  # noqa: BLE001 - the route's own error on the cut-off body; the 413 answers it
            if refused is None:
                raise
        if refused:
            await PlainTextResponse(refused, status_code=413)(scope, receive, send)
