"""OpenAI's error shape for every answer of the HTTP API that is not a success.

Errors are ``{"error": {"message", "type", "param", "code"}}`` with status 400 (a wrong request),
401 (API key), 403 (not allowed here), 404 (no such model or voice), 413 (over a limit), 429
(queue full), 503 (no model loaded, or the voices' database cannot be reached), 500 (internal; the details go to the log only).  A body
that a request model (``api.schemas``) refuses is answered as the check that refused it: the
model's validators raise the engine's ``InvalidInput``, which pydantic keeps as the error's cause.
"""

from __future__ import annotations

import logging
from typing import Optional

from ..errors import InvalidInput, OmniVoiceError, one_line, refusal_of

log = logging.getLogger(__name__)


class ApiError(Exception):
    def __init__(self, status: int, message: str, type_: str = "invalid_request_error",
                 param: Optional[str] = None, code: Optional[str] = None, headers: Optional[dict] = None):
        super().__init__(message)
        self.status, self.message, self.type, self.param, self.code = status, message, type_, param, code
        self.headers = headers or {}


def api_error(exc: BaseException) -> ApiError:
    """Our exceptions -> status and OpenAI error fields; anything else is an internal error (logged)."""
    from fastapi.exceptions import RequestValidationError
    from starlette.exceptions import HTTPException

    if isinstance(exc, ApiError):
        return exc
    if isinstance(exc, RequestValidationError):
        return api_error(refusal(exc.errors()))
    if isinstance(exc, HTTPException):   # FastAPI's own answers (a body it could not parse)
        return ApiError(exc.status_code, str(exc.detail), code="invalid_value")
    said = refusal_of(exc)   # the one mapping of our errors (errors.refusal_of), shared with the page and the CLI
    if said is not None:
        if said.public is not None:   # the operator's detail (where the database is) goes to the log only
            log.warning("%s", said.message)
        return ApiError(said.status, said.public or said.message, said.type, param=said.param, code=said.code,
                        headers=dict(said.headers))
    if isinstance(exc, ValueError):   # a library's check of a value the request gave
        return ApiError(400, one_line(exc), code="invalid_value")
    log.error("internal error in the HTTP API", exc_info=exc)
    return ApiError(500, "Internal error; the details are in the server log.", "server_error", code="internal_error")


def refusal(errors: list) -> Exception:
    """What a request model's first error (pydantic's list, in the fields' order) means: the check's own
    exception where a validator raised one, else an ``InvalidInput`` naming the field."""
    first = errors[0] if errors else {"loc": (), "msg": "the request is not valid"}
    cause = (first.get("ctx") or {}).get("error")
    if isinstance(cause, OmniVoiceError):
        return cause
    loc = [str(part) for part in first.get("loc", ()) if part != "body"]
    field = ".".join(loc) or None
    return InvalidInput(f"{field + ': ' if field else ''}{first.get('msg', 'not valid')}.", param=field)


def error_response(error: ApiError):
    from fastapi.responses import JSONResponse

    # a message that quotes a request's lone surrogate could not be encoded: escape it instead
    message = error.message.encode("utf-8", "backslashreplace").decode("utf-8")
    body = {"error": {"message": message, "type": error.type, "param": error.param, "code": error.code}}
    return JSONResponse(body, status_code=error.status, headers=error.headers)
