"""The route class of every HTTP API route (FastAPI's ``APIRoute``, customised the documented way).

Around FastAPI's own handling of a request it adds, in this order: the server's ``ApiContext`` in the
request's scope (what ``context: Context`` receives), the Bearer key on ``/v1`` (``auth.check_key``),
a JSON body read within its cap and parsed before FastAPI parses it (``bodies.read_json``: 413 as it
arrives, 400 for a body that is not JSON), and every exception, a request model's refusal included,
answered in OpenAI's error shape (``openai_errors``) with the context's ``redact`` applied.
"""

from __future__ import annotations

from typing import Optional

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute

from ..errors import OmniVoiceError
from . import bodies
from .auth import check_key
from .context import SCOPE_KEY, ApiContext
from .openai_errors import api_error, error_response


class OpenAIRoute(APIRoute):
    """A route of the HTTP API; ``OpenAIRoute.serving(context)`` is the class of one server's routes."""

    context: Optional[ApiContext] = None

    @classmethod
    def serving(cls, context: ApiContext) -> type["OpenAIRoute"]:
        return type(cls.__name__, (cls,), {"context": context})

    def get_route_handler(self):
        handle = super().get_route_handler()
        context, body_model, template = self.context, self.json_body_model(), self.path

        async def answer(request: Request):
            response = await respond(request)
            if context is not None and context.metrics is not None:   # by the route's template, never its ids
                context.metrics.request(template, request.method, response.status_code)
            return response

        async def respond(request: Request):
            try:
                request.scope[SCOPE_KEY] = context
                if request.url.path.startswith(("/v1", "/dev")):   # every API route; /health is open
                    await check_key(context, request)
                if body_model is not None:
                    await bodies.read_json(request, example=body_model.example)
                try:
                    return await handle(request)
                except RequestValidationError as exc:
                    if body_model is not None and not_an_object(exc.errors()):
                        raise body_model.refused() from None
                    raise
            except Exception as exc:  # noqa: BLE001 - every error becomes a JSON answer
                error = api_error(exc)
                error.message = context.redact(error.message)
                return error_response(error)
        return answer

    def json_body_model(self):
        """The request model of a route whose body is JSON (None: no body, or a form it reads itself)."""
        from fastapi import params

        field = self.body_field
        if field is None or isinstance(field.field_info, params.Form):
            return None
        return field.field_info.annotation


def not_an_object(errors: list) -> bool:
    """Whether FastAPI refused a JSON body as a whole (null, or not an object) rather than a check refusing it."""
    first = errors[0] if errors else {}
    return tuple(first.get("loc", ())) == ("body",) and not isinstance((first.get("ctx") or {}).get("error"),
                                                                         OmniVoiceError)
