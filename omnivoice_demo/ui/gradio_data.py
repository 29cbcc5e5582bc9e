"""A Gradio API call with too few values in ``data`` is a 400 that says what the endpoint takes.

Gradio checks the shape of a ``/gradio_api/run/{name}`` (or ``/call/{name}``) body itself (422 for a body that
is not ``{"data": [...]}``), but an event handler given fewer values than it has inputs raises inside Gradio
and the client gets a bare 500 with ``{"error": null}`` (issue 43, item 7).  ``GradioDataCheck`` (an ASGI
middleware of the app) reads such a body (bounded: ``MAX_BODY_BYTES``, which a call of ours never needs to
pass), and answers 400 naming the endpoint's inputs when ``data`` is short; everything else goes on to Gradio
unchanged (the body replayed as it came).
"""

from __future__ import annotations

import json
from typing import Optional

from starlette.responses import JSONResponse

PREFIXES = ("/gradio_api/run/", "/gradio_api/call/")
#: the most bytes of a Gradio API call's body read for the check (files go by upload, not in the body)
MAX_BODY_BYTES = 1024 * 1024


def endpoint_inputs(app, name: str) -> Optional[list[str]]:
    """The labels of the inputs of the Gradio endpoint ``name`` of ``app`` (None: no such endpoint)."""
    blocks = getattr(app, "get_blocks", lambda: None)()
    for fn in getattr(blocks, "fns", {}).values():
        if getattr(fn, "api_name", None) == name:
            return [str(getattr(block, "label", None) or type(block).__name__) for block in fn.inputs]
    return None


def data_problem(body: bytes, inputs: list[str], name: str) -> Optional[str]:
    """What is wrong with ``data`` for an endpoint of ``inputs`` (None: nothing this check sees)."""
    try:
        payload = json.loads(body)
    except (ValueError, RecursionError):
        return None   # Gradio's own 422 says so
    data = payload.get("data") if isinstance(payload, dict) else None
    if isinstance(data, list) and len(data) < len(inputs):
        return (f"The Gradio API's /{name} takes {len(inputs)} values in data ({', '.join(inputs)}); got "
                f"{len(data)}. Send {{\"data\": [...]}} with one value per input, in that order "
                "(gradio_client's predict does).")
    return None


class GradioDataCheck:
    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        path = scope.get("path", "") if scope["type"] == "http" else ""
        if scope.get("method") != "POST" or not path.startswith(PREFIXES):
            return await self.app(scope, receive, send)
        name = path.rstrip("/").rsplit("/", 1)[-1]
        inputs = endpoint_inputs(scope.get("app"), name)
        if inputs is None:
            return await self.app(scope, receive, send)
        messages, size = [], 0
        while True:
            message = await receive()
            messages.append(message)
            size += len(message.get("body", b""))
            if message["type"] != "http.request" or not message.get("more_body") or size > MAX_BODY_BYTES:
                break
        if size <= MAX_BODY_BYTES and messages[-1]["type"] == "http.request":
            problem = data_problem(b"".join(m.get("body", b"") for m in messages), inputs, name)
            if problem:
                return await JSONResponse({"error": problem}, status_code=400)(scope, receive, send)

        async def replay():
            return messages.pop(0) if messages else await receive()
        await self.app(scope, replay, send)
