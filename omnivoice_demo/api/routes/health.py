"""``GET /health`` (liveness: the model state, the queue and the formats), ``GET /ready`` (readiness: 200 once a
model serves requests, else 503 with ``Retry-After``) and ``GET /metrics`` (Prometheus' text format,
``studio.metrics``); no key needed for any of them, and none of them asks the voice store (a stalled database
must not fail a liveness probe).

``/ready`` is about the model: a store that is down leaves it 200 (speech with a built-in voice or a design
still works, and every replica shares the one database: a 503 from each would take them all out of the load
balancer for what only the saved voices need); its body's ``voice_store`` says how the store's last use went
(``VoiceStore.state``: ``up``, ``unavailable`` with its message and since when, or ``unknown``)."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import JSONResponse, Response

from .. import encoding
from ..context import Context
from ...errors import StoreUnavailable

router = APIRouter(tags=["health"])

#: seconds a load balancer is told to wait before asking /ready again: while the model loads, and after it failed
RETRY_LOADING, RETRY_FAILED = 5, 30


def _active(context) -> str | None:
    try:
        return context.models.get().label
    except Exception:  # noqa: BLE001 - no model is an answer here, not an error
        return None


@router.get("/health")
async def health(context: Context):
    state = context.models.status.state
    active = _active(context)
    answer = {"status": "ok" if active else state, "model_loaded": active is not None, "model": active,
              "queue": context.service.stats(), "formats": encoding.formats()}
    if active is None and state in ("error", "loading"):  # why there is no model, or how far the load is
        answer["message"] = context.redact(context.models.status.message)
    if context.replica is not None:   # serve --replicas: which replica answered
        answer["replica"] = context.replica
    return JSONResponse(answer)


@router.get("/ready")
async def ready(context: Context):
    """200 when a model serves requests; else 503 with ``Retry-After`` and what the server is doing."""
    active = _active(context)
    if active is not None:
        return JSONResponse({"status": "ready", "model": active, "voice_store": _store_state(context)})
    status = context.models.status
    loading = status.state == "loading" or context.models.loading
    message = context.redact(status.message) if status.message else "no model is loaded"
    return JSONResponse({"status": "loading" if loading else (status.state or "idle"), "message": message},
                        status_code=503,
                        headers={"Retry-After": str(RETRY_LOADING if loading else RETRY_FAILED)})


def _store_state(context) -> dict:
    """How the voice store's last use went (no query: ``VoiceStore.state``)."""
    state = context.voices.state() if hasattr(context.voices, "state") else None
    if state is None:
        return {"status": "unknown"}
    said: dict = {"status": state.status}
    if state.since is not None:
        said["since"] = int(state.since)
    if state.status != "up" and state.message:   # the probe is public: where the database is stays in the log
        said["message"] = StoreUnavailable.PUBLIC
    return said


@router.get("/metrics")
async def metrics(context: Context):
    from ...studio.metrics import CONTENT_TYPE

    if context.metrics is None:   # a context made without its queue at first
        from ...studio.metrics import ServerMetrics

        context.metrics = ServerMetrics(context.service, context.models)
    return Response(context.metrics.text(), media_type=CONTENT_TYPE)
