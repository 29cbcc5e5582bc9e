"""Who may call the HTTP API: the Bearer key on ``/v1``, and who may change saved voices."""

from __future__ import annotations

import asyncio
import hmac
import math

from fastapi import Request

from .context import API_KEY_ENV, ApiContext, Context
from .openai_errors import ApiError


async def check_key(context: ApiContext, request: Request) -> None:
    """401 unless the request carries ``Authorization: Bearer <the server's key>`` (no key: open).  A client's
    wrong keys slow its next ones down, as the login's do: one throttle (``studio.throttle``) for both."""
    if not context.api_key:
        return
    client = request.client.host if request.client else "unknown"   # the peer, not X-Forwarded-For
    wait = context.throttle.before_check(client)
    if wait:
        await asyncio.sleep(wait)
    given = request.headers.get("authorization", "")
    scheme, _, token = given.partition(" ")
    if scheme.lower() != "bearer" or not hmac.compare_digest(token.strip().encode(), context.api_key.encode()):
        retry = math.ceil(context.throttle.failed(client))
        raise ApiError(401, "Incorrect or missing API key: send 'Authorization: Bearer <key>' with the key this "
                            "server was started with (--api-key or OMNIVOICE_API_KEY).", code="invalid_api_key",
                       headers={"WWW-Authenticate": "Bearer", **({"Retry-After": str(retry)} if retry else {})})
    context.throttle.succeeded(client)


def may_change_voices(context: Context) -> None:
    """403 on a shared server without an API key: anyone could change the voices (a route's dependency)."""
    if context.shared and not context.api_key:
        raise ApiError(403, "Changing voices on a shared server needs an API key: start it with --api-key "
                            f"(or {API_KEY_ENV}).", "permission_error", code="api_key_required")
