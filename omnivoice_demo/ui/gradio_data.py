"""Gradio's own routes answer a malformed body with a 4xx that says what to send, never a 500 nor the body.

Gradio parses and checks its routes' bodies itself, and some malformed ones end in a 500 (issues 43 and 49):

* an event handler given fewer values than it has inputs raises inside Gradio (a bare 500, ``{"error": null}``);
* ``NaN`` or ``Infinity`` in a body: Python reads them, then no answer can carry them back (500 on 8 routes);
* ``/gradio_api/call/v2/{name}`` with a missing, unknown or duplicate field (Gradio's ``construct_args`` raises a
  ``TypeError``: a 500), or a name that is no endpoint (a ``KeyError``);
* FastAPI's 422 quotes the body it refused, whole (a 50 MB body came back in the answer).

``GradioDataCheck`` (an ASGI middleware of the app, behind the server's ``BodyCap``) reads the JSON body of every
POST to a Gradio route (not the HTTP API's ``/v1`` and ``/dev``, which read theirs within their caps, nor a form or
an upload) strictly (``studio.json_bodies``: a 400 for NaN, Infinity, a key twice or a body that is not JSON) and
checks the endpoint calls (``/run``, ``/api``, ``/call``, ``/call/v2``): a 404 for a name that is no endpoint, a 400
naming the inputs for ``data`` too short or for fields of ``/call/v2`` missing or unknown.  Everything else goes on
to Gradio unchanged (the body replayed as it came).  ``validation_answer`` is the app's handler of FastAPI's 422:
the fields and what is wrong with them, never the input.
"""

from __future__ import annotations

import json
from typing import Optional

from starlette.responses import JSONResponse

from ..constants import NUM_CODEBOOKS
from ..errors import InvalidInput
from ..studio import json_bodies
from ..studio.lexicons import MAX_OWNER_ENTRIES
from ..studio.sharing import MAX_BROWSER_VOICES
from ..text.lexicon import MAX_SAY_CHARS, MAX_WORD_CHARS

#: the endpoint calls, by the prefix of their path (``/gradio_api/call/v2/`` before ``/gradio_api/call/``)
CALL_PREFIXES = ("/gradio_api/call/v2/", "/gradio_api/run/", "/gradio_api/api/", "/gradio_api/call/")
#: the routes that are not Gradio's (they read their bodies themselves)
NOT_GRADIO = ("/v1/", "/dev/")
#: bodies that are not JSON: Gradio's forms and uploads
FORM_TYPES = ("multipart/form-data", "application/x-www-form-urlencoded")
#: what a 422 keeps of each of FastAPI's errors: a field name's characters, a message's, and how many errors
SHOWN_CHARS, SHOWN_ERRORS = 60, 5


def largest_call_bytes(limits, shared: bool) -> int:
    """The largest body a call of the app's own page sends on a Gradio route: in shared mode each call carries the
    visitor's browser state, up to ``MAX_BROWSER_VOICES`` voices of ``max_voice_variants`` variants each (codes as
    base64, the transcript JSON-escaped at 6 bytes a character) and the visitor's lexicon, plus 1 MiB for the
    call's own values; never under 8 MiB (not shared: the voices stay on the server, 8 MiB).  The server's ``BodyCap`` holds every Gradio route to it."""
    frames = limits.max_reference_frames
    voice = 4 * -(-NUM_CODEBOOKS * frames * 2 // 3) + 6 * limits.max_text_chars + 4096
    voices = MAX_BROWSER_VOICES * (1 + limits.max_voice_variants) * voice
    lexicon = MAX_OWNER_ENTRIES * 6 * (MAX_WORD_CHARS + MAX_SAY_CHARS + 16)
    return max(8 * 2**20, voices + lexicon + 2**20) if shared else 8 * 2**20


def endpoints(app) -> dict:
    """The Gradio endpoints of ``app`` by ``api_name``: the labels of their inputs and the parameters of their API
    (name -> whether it has a default), as Gradio's ``/info`` lists them."""
    blocks = getattr(app, "get_blocks", lambda: None)()
    if blocks is None:
        return {}
    found = {}
    info = (getattr(app, "api_info", None) or blocks.get_api_info()).get("named_endpoints", {})
    for fn in getattr(blocks, "fns", {}).values():
        name = getattr(fn, "api_name", None)
        if not name:
            continue
        labels = [str(getattr(block, "label", None) or type(block).__name__) for block in fn.inputs]
        parameters = {p["parameter_name"]: bool(p.get("parameter_has_default"))
                      for p in info.get(f"/{name}", {}).get("parameters", []) if p.get("parameter_name")}
        found[name] = {"inputs": labels, "parameters": parameters, "public": f"/{name}" in info}
    return found


def data_problem(payload, inputs: list[str], name: str) -> Optional[str]:
    """What is wrong with ``data`` of a ``/run`` or ``/call`` body for an endpoint of ``inputs`` (None: nothing
    this check sees; Gradio checks the rest)."""
    data = payload.get("data") if isinstance(payload, dict) else None
    if isinstance(data, list) and len(data) < len(inputs):
        return (f"The Gradio API's /{name} takes {len(inputs)} values in data ({', '.join(inputs)}); got "
                f"{len(data)}. Send {{\"data\": [...]}} with one value per input, in that order "
                "(gradio_client's predict does).")
    return None


def named_problem(payload, parameters: dict, name: str) -> Optional[str]:
    """What is wrong with a ``/call/v2/{name}`` body (its parameters by name) for an endpoint of ``parameters``."""
    if not isinstance(payload, dict):
        return f"/call/v2/{name} takes a JSON object of its parameters by name ({', '.join(parameters)})."
    unknown = [key for key in payload if key not in parameters and key != "oauth_token"]
    if unknown:
        shown = ", ".join(json.dumps(key[:SHOWN_CHARS]) for key in unknown[:3])
        return (f"/call/v2/{name} has no parameter {shown}; its parameters are {', '.join(parameters)}.")
    missing = [key for key, has_default in parameters.items() if not has_default and key not in payload]
    if missing:
        return f"/call/v2/{name} needs {', '.join(missing)} (its parameters are {', '.join(parameters)})."
    return None


def _json_body(scope) -> bool:
    """Whether FastAPI would read the body as JSON: no Content-Type, or a JSON one (FastAPI's own rule)."""
    kind = next((value.decode("latin-1") for key, value in scope.get("headers", ()) if key == b"content-type"), "")
    kind = kind.split(";")[0].strip().lower()
    return not kind.startswith(FORM_TYPES) and (not kind or kind.endswith("/json") or kind.endswith("+json"))


class GradioDataCheck:
    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        path = scope.get("path", "") if scope["type"] == "http" else ""
        if scope.get("method") != "POST" or not path or path.startswith(NOT_GRADIO) or not _json_body(scope):
            return await self.app(scope, receive, send)
        messages, parts = [], []
        while True:   # bounded: the server's BodyCap stands in front
            message = await receive()
            messages.append(message)
            parts.append(message.get("body", b""))
            if message["type"] != "http.request" or not message.get("more_body"):
                break
        problem = None
        if messages[-1]["type"] == "http.request" and any(parts):
            problem = self._problem(scope, path, b"".join(parts))
        if problem is not None:
            status, text = problem
            return await JSONResponse({"error": text, "detail": text}, status_code=status)(scope, receive, send)

        async def replay():
            return messages.pop(0) if messages else await receive()
        await self.app(scope, replay, send)

    def _problem(self, scope, path: str, body: bytes) -> Optional[tuple[int, str]]:
        try:
            payload = json_bodies.loads(body)
        except InvalidInput as exc:
            return 400, str(exc)
        prefix = next((p for p in CALL_PREFIXES if path.startswith(p)), None)
        if prefix is None:
            return None
        name = path[len(prefix):].strip("/")
        if "/" in name:   # not a call (Gradio's own 404 or 405)
            return None
        app = scope.get("app")
        known = endpoints(app)
        if name not in known:
            if prefix != "/gradio_api/call/v2/" and isinstance(payload, dict) and payload.get("fn_index") is not None:
                return _by_index(app, payload["fn_index"])   # Gradio's call by fn_index (its old /run/predict)
            public = [n for n, endpoint in known.items() if endpoint["public"]]
            return 404, (f"The Gradio API has no endpoint /{name[:SHOWN_CHARS]}; its endpoints are "
                         f"{', '.join('/' + n for n in public)} (see /gradio_api/info).")
        endpoint = known[name]
        if prefix == "/gradio_api/call/v2/":
            text = named_problem(payload, endpoint["parameters"], name)
        else:
            text = data_problem(payload, endpoint["inputs"], name)
        return (400, text) if text else None


def _by_index(app, index) -> Optional[tuple[int, str]]:
    """A call by ``fn_index``: a 400 unless it names a function of the app that runs on the server."""
    fns = getattr(getattr(app, "get_blocks", lambda: None)(), "fns", {})
    fn = fns.get(index) if isinstance(index, int) and not isinstance(index, bool) else None
    if fn is None or not getattr(fn, "fn", None):
        return 400, (f"fn_index {json.dumps(index)[:SHOWN_CHARS]} names no function of this app that runs on the "
                     "server; call an endpoint by its name (see /gradio_api/info).")
    return None


async def validation_answer(request, exc) -> JSONResponse:
    """FastAPI's 422 for a body its model refused, without the body: each error's field and message (at most
    ``SHOWN_ERRORS``, each part cut to ``SHOWN_CHARS``), and one line saying what to send."""
    errors = []
    for error in list(exc.errors())[:SHOWN_ERRORS]:
        loc = [part if isinstance(part, int) else str(part)[:SHOWN_CHARS] for part in error.get("loc", ())]
        errors.append({"loc": loc, "msg": str(error.get("msg", ""))[:200], "type": str(error.get("type", ""))[:60]})
    fields = "; ".join(f"{'.'.join(str(p) for p in e['loc'] if p != 'body') or 'the body'}: {e['msg']}" for e in errors)
    return JSONResponse({"detail": errors, "error": f"The request body was refused ({fields}); send the fields this "
                                                    "route takes (Gradio's API: see /gradio_api/info)."},
                        status_code=422)
