"""Who a visitor of a shared server is, for their output files: an owner cookie, and the file route behind it.

Gradio serves every file an event returns at ``/gradio_api/file=<path>`` (a copy
in its cache, named as the output) to any client that has the address, and that
route knows no session.  So in shared mode ``OwnerMiddleware`` (an ASGI
middleware of the Gradio app):

* gives every client without one a random owner token in a cookie (HttpOnly;
  one ``SameSite=None; Secure; Partitioned`` for a page inside another site's
  frame, as a Space is, and one ``SameSite=Lax`` for plain http, as Gradio does
  for its own login cookie), and puts it into that first request too;
* answers 404, as if there were no such file, when a client asks the file
  route for an output the studio says is not theirs
  (``Studio.output_hidden_from``: made for another owner, or of no known owner).

The handlers read the token with ``owner_of(request)`` and pass it to
``Studio.output_path``.  A browser sends the cookie with its requests, media
elements included; ``gradio_client`` keeps the cookies of its first response
(``/config``) and sends them with its calls and downloads, so an API client
fetches its own results and no one else's.
"""

from __future__ import annotations

import re
import secrets
from typing import Optional

from starlette.requests import cookie_parser
from starlette.responses import JSONResponse

OWNER_COOKIE = "omnivoice-owner"
#: the same token for plain http (a browser keeps no Secure cookie from an http page but localhost's)
OWNER_COOKIE_LAX = "omnivoice-owner-lax"
#: how long a browser keeps its token (outputs are removed after hours; a week spans any of them)
COOKIE_MAX_AGE = 7 * 24 * 3600
_TOKEN = re.compile(r"[0-9a-f]{32}")
#: Gradio's file routes (the second is its older spelling); what follows is the path or address asked for
_FILE_ROUTE = re.compile(r"/gradio_api/file(?:=|/)(.*)$", re.DOTALL)


def owner_from_cookies(cookies) -> Optional[str]:
    """The owner token of a cookie mapping, when it holds a well-formed one."""
    for name in (OWNER_COOKIE, OWNER_COOKIE_LAX):
        value = (cookies or {}).get(name)
        if isinstance(value, str) and _TOKEN.fullmatch(value):
            return value
    return None


def owner_of(request) -> Optional[str]:
    """The owner token of a Gradio request (``gr.Request``; None outside a request or without the cookie)."""
    return owner_from_cookies(getattr(request, "cookies", None)) if request is not None else None


def _owner_cookies(token: str) -> list[tuple[bytes, bytes]]:
    common = f"Path=/; Max-Age={COOKIE_MAX_AGE}; HttpOnly"
    cookies = [f"{OWNER_COOKIE}={token}; {common}; SameSite=None; Secure; Partitioned",
               f"{OWNER_COOKIE_LAX}={token}; {common}; SameSite=Lax"]
    return [(b"set-cookie", cookie.encode("latin-1")) for cookie in cookies]


def _with_cookie(headers: list, token: str) -> list:
    """``headers`` whose Cookie header also carries the owner token (Starlette reads the first Cookie header)."""
    pair = f"{OWNER_COOKIE_LAX}={token}".encode("latin-1")
    for index, (name, value) in enumerate(headers):
        if name == b"cookie":
            return headers[:index] + [(b"cookie", value + b"; " + pair)] + headers[index + 1:]
    return headers + [(b"cookie", pair)]


class OwnerMiddleware:
    def __init__(self, app, studio):
        self.app, self.studio = app, studio

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = list(scope.get("headers", ()))
        cookie = b"; ".join(value for name, value in headers if name == b"cookie").decode("latin-1")
        owner = owner_from_cookies(cookie_parser(cookie))
        new = owner is None
        if new:  # this request is the owner's already (a first call that makes a file can fetch it)
            owner = secrets.token_hex(16)
            scope = dict(scope, headers=_with_cookie(headers, owner))
        asked = _FILE_ROUTE.search(scope["path"])
        if asked and scope["method"] in ("GET", "HEAD") and self.studio.output_hidden_from(asked.group(1), owner):
            return await JSONResponse({"detail": "Not Found"}, status_code=404)(scope, receive, send)
        if not new:
            return await self.app(scope, receive, send)
        cookies = _owner_cookies(owner)

        async def with_cookies(message):
            if message["type"] == "http.response.start":
                message = dict(message, headers=list(message.get("headers", ())) + cookies)
            await send(message)

        await self.app(scope, receive, with_cookies)
