"""The OpenAI-compatible HTTP API's routes: one module per resource, each a FastAPI ``APIRouter``.

    POST /v1/audio/speech     text -> audio                                  (routes/speech.py)
    POST /dev/captioned_speech  the same body -> audio with each word's time (Kokoro-FastAPI's shape)
    GET  /v1/audio/speech/details/{token}  the whole X-OmniVoice-* values a response had to cut (api/headers.py)
    GET|POST /v1/audio/voices, GET|PATCH|DELETE /v1/audio/voices/{id}        (routes/voices.py)
    POST /v1/audio/voices/{id}/variants, DELETE .../variants/{tag}          (routes/variants.py)
    GET  /v1/models           the models that answer                         (routes/models.py)
    GET  /health              model state and queue (no auth)                (routes/health.py)

``build_router(context)`` returns one ``APIRouter`` with them all, whose routes are of the class
``OpenAIRoute.serving(context)`` (``api.openai_route``: the context, the key, the body caps, OpenAI's
errors); the Gradio app and ``omnivoice serve`` both mount it, with the same ``EngineService`` as the
UI.  A route's module defines it on its module's ``router`` with ``context: Context`` among its
parameters and its body as a request model of ``api.schemas``; a new resource is a new module here,
added to ``RESOURCES``.  Errors are OpenAI's (``api.openai_errors``).
"""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.routing import APIRoute

from ..bodies import MAX_JSON_BYTES  # noqa: F401 - the caps, where the routes are
from ..context import API_KEY_ENV, API_VOICE_SESSION, ApiContext, api_key_from  # noqa: F401
from ..openai_route import OpenAIRoute
from . import captioned_speech, health, models, speech, variants, voices
from .speech import plan_request as _plan  # noqa: F401 - the name tests reach the planning by

#: the resources' routers, in the order their routes are matched
RESOURCES = (health.router, models.router, speech.router, captioned_speech.router, voices.router, variants.router)


def build_router(context: ApiContext) -> APIRouter:
    """All the API's routes, serving ``context``."""
    router = APIRouter(route_class=OpenAIRoute.serving(context))
    for resource in RESOURCES:
        for route in resource.routes:
            assert isinstance(route, APIRoute)   # a resource's router holds API routes only
            router.add_api_route(route.path, route.endpoint, methods=route.methods, name=route.name,
                                 tags=route.tags, dependencies=route.dependencies, status_code=route.status_code,
                                 openapi_extra=route.openapi_extra)
    return router
