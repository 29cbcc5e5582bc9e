"""``GET /v1/models``: the models that answer (none while no model is loaded)."""

from __future__ import annotations

import time

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from ...errors import excerpt
from ..context import ApiContext, Context
from ..openai_errors import ApiError
from ..schemas import DEFAULT_MODEL, OPENAI_MODELS

router = APIRouter(tags=["models"])


@router.get("/v1/models")
async def list_models(context: Context):
    created = int(time.time())
    labels = context.models.labels()
    ids = ([DEFAULT_MODEL] + labels) if labels else []  # "omnivoice" is the active model: none, none
    return JSONResponse({"object": "list", "data": [
        {"id": name, "object": "model", "created": created, "owned_by": "omnivoice-onnx-studio"} for name in ids]})


def model_for(context: ApiContext, name: str):
    """The loaded model a request names: ``omnivoice`` and OpenAI's names mean the active one; else 404."""
    if name in (DEFAULT_MODEL, *OPENAI_MODELS):
        return context.models.get()
    if name in context.models.labels():
        return context.models.get(name)
    raise ApiError(404, f"The model {excerpt(name)} does not exist here; use 'omnivoice' (the active model) or one "
                        f"of GET /v1/models.", param="model", code="model_not_found")
