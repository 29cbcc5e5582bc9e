"""``--api-key-scope all``: every route of the app asks for the key but those the login page needs.

Gradio's own ``auth`` guards its page and its event routes, and leaves others open (cancelling a job,
heartbeats, ``/openapi.json``, the app id, start-up events, ...).  ``KeyGate`` (an ASGI middleware of the
Gradio app) lets a request through when it is logged in (Gradio's session cookie, made by its login with
the key as the password); without it, only what is on the allow-list passes:

* the login page and what it loads: ``GET /`` (Gradio answers the login form there), its assets, the
  ``POST /login`` itself;
* the probes ``/health``, ``/ready`` and ``/metrics`` (docs/deploy.md: a Space's health check and a scrape need
  no key; they say nothing private), and the HTTP API under ``/v1`` and ``/dev``, which asks for the Bearer key
  itself (its own 401);
* ``/gradio_api/startup-events`` until it has run once: the launch calls it on the server it just started.

Everything else is a 401 that says how to log in.  Wrong passwords are slowed down (``LoginThrottle``).
"""

from __future__ import annotations

import asyncio
import math

from starlette.requests import cookie_parser
from starlette.responses import JSONResponse

from ..studio.throttle import LoginThrottle

#: what passes without the key, by method: exact paths, and paths under a prefix
OPEN_PATHS = {("GET", "/"), ("HEAD", "/"), ("POST", "/login"), ("POST", "/login/"), ("GET", "/favicon.ico"),
              ("GET", "/manifest.json"), ("GET", "/robots.txt"), ("GET", "/theme.css"),
              ("GET", "/gradio_api/theme.css")}
OPEN_PREFIXES = ("/assets/", "/static/", "/svelte/")
#: routes that answer for themselves: the probes are public, /v1 and /dev ask for the Bearer key (their own 401)
SELF_GUARDED_PATHS, SELF_GUARDED_PREFIX = {"/health", "/ready", "/metrics"}, ("/v1/", "/dev/")
STARTUP_EVENTS = "/gradio_api/startup-events"
LOGIN_PATHS = ("/login", "/login/")
NEEDS_KEY = ("This server needs its API key: log in on its page (any user name, the key as the password; "
             "gradio_client: auth=('any name', KEY)); the HTTP API under /v1 takes 'Authorization: Bearer <key>'.")


class KeyGate:
    def __init__(self, app, throttle: LoginThrottle | None = None):
        self.app = app
        self.throttle = throttle or LoginThrottle()

    async def __call__(self, scope, receive, send):
        if scope["type"] not in ("http", "websocket"):
            return await self.app(scope, receive, send)
        method, path = scope.get("method", "GET"), scope["path"]
        if path in LOGIN_PATHS and method == "POST":
            return await self._login(scope, receive, send)
        if self._passes(scope, method, path):
            return await self.app(scope, receive, send)
        if scope["type"] == "websocket":
            return await send({"type": "websocket.close", "code": 1008})
        await JSONResponse({"detail": NEEDS_KEY}, status_code=401)(scope, receive, send)

    def _passes(self, scope, method: str, path: str) -> bool:
        if (method, path) in OPEN_PATHS or (method in ("GET", "HEAD") and path.startswith(OPEN_PREFIXES)):
            return True
        if path in SELF_GUARDED_PATHS or path.startswith(SELF_GUARDED_PREFIX):
            return True
        app = scope.get("app")
        if path == STARTUP_EVENTS and not getattr(app, "startup_events_triggered", True):
            return True
        return self._logged_in(scope, app)

    @staticmethod
    def _logged_in(scope, app) -> bool:
        """Gradio's session cookie (either of its two) names a session its login made."""
        cookie = b"; ".join(value for name, value in scope.get("headers", ()) if name == b"cookie")
        cookies = cookie_parser(cookie.decode("latin-1"))
        cookie_id, tokens = getattr(app, "cookie_id", None), getattr(app, "tokens", {})
        return cookie_id is not None and any(
            cookies.get(f"{name}-{cookie_id}") in tokens for name in ("access-token", "access-token-unsecure"))

    async def _login(self, scope, receive, send):
        """Gradio's login, after this client's wait; a failed one says in Retry-After how long the next waits."""
        client = (scope.get("client") or ("unknown",))[0]   # the peer: X-Forwarded-For is anyone's to write
        wait = self.throttle.attempt(client)
        if wait:
            await asyncio.sleep(wait)

        async def counted(message):
            if message["type"] == "http.response.start":
                if message["status"] == 200:
                    self.throttle.succeeded(client)
                else:
                    retry = math.ceil(self.throttle.wait_for(self.throttle.failures(client)))
                    message = dict(message, headers=[*message.get("headers", ()),
                                                     (b"retry-after", str(retry).encode())])
            await send(message)

        await self.app(scope, receive, counted)
