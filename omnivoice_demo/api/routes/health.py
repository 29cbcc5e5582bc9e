"""``GET /health``: the model state, the queue and the formats (no key needed)."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from .. import encoding
from ..context import Context

router = APIRouter(tags=["health"])


@router.get("/health")
async def health(context: Context):
    state = context.models.status.state
    try:
        active = context.models.get().label
    except Exception:  # noqa: BLE001 - no model is an answer here, not an error
        active = None
    answer = {"status": "ok" if active else state, "model_loaded": active is not None, "model": active,
              "queue": context.service.stats(), "formats": encoding.formats()}
    if active is None and state in ("error", "loading"):  # why there is no model, or how far the load is
        answer["message"] = context.redact(context.models.status.message)
    return JSONResponse(answer)
