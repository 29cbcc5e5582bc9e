"""Cross-origin calls of the HTTP API on the Gradio app's server: any origin, never with credentials.

Gradio's CORS middleware answers every route, ``/v1`` included, with the caller's origin and
``Access-Control-Allow-Credentials: true`` (any origin once the server is reached by a name other than
localhost).  The API is called with a Bearer key, not cookies, so ``ApiCors`` answers ``/v1`` and
``/health`` with Starlette's ``CORSMiddleware`` (any origin, the ``Authorization`` header, no credentials) and
keeps the request's origin from Gradio's.  It has to sit in front of Gradio's middleware, which Gradio
adds last: ``front_lifespan`` puts it there when the server starts, before it listens.
"""

from __future__ import annotations

import contextlib

from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware

API_PATHS, API_PREFIX = {"/health"}, "/v1/"


class ApiCors:
    def __init__(self, app):
        self.app = app
        self.cors = CORSMiddleware(self._without_origin, allow_origins=["*"], allow_credentials=False,
                                   allow_methods=["GET", "POST", "DELETE"],
                                   allow_headers=["Authorization", "Content-Type"])

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http" and (scope["path"] in API_PATHS or scope["path"].startswith(API_PREFIX)):
            return await self.cors(scope, receive, send)
        await self.app(scope, receive, send)

    async def _without_origin(self, scope, receive, send):
        headers = [(name, value) for name, value in scope.get("headers", ()) if name != b"origin"]
        await self.app(dict(scope, headers=headers), receive, send)


def front_lifespan(*middleware: Middleware):
    """A lifespan for ``app_kwargs`` that puts ``middleware`` in front of all the app's own (Gradio's CORS
    included) when the server starts, before it takes a request."""
    @contextlib.asynccontextmanager
    async def lifespan(app):
        app.user_middleware[:0] = middleware
        app.middleware_stack = app.build_middleware_stack()
        yield

    return lifespan
