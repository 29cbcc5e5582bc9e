"""Serve's HTTP proxy under ``serve --replicas``: the API's answers where the proxy would answer for itself.

Ray Serve's proxy takes Starlette middleware from the callback that ``RAY_SERVE_HTTP_PROXY_CALLBACK_IMPORT_PATH``
names (``middlewares`` here, set by ``replicas.serve_replicas`` before Ray starts).  ``ReplicaFront``:

* answers ``GET /health``, ``/ready`` and ``/metrics`` from the replicas' hub (``replica_hub``): every replica's
  report, so the probes never wait behind a generation (each replica takes one request per running generation)
  and ``/metrics`` is the totals over the replicas;
* turns what the proxy says itself into the API's JSON errors (``openai_errors``): a replica that died before it
  answered (Serve's proxy sends nothing then, and uvicorn a plain-text 500) and Serve's own 5xx are ``503``
  ``replica_unavailable`` with ``Retry-After``; Serve's backpressure (the waiting room full) is ``429`` ``busy``.
  An answer a replica began (``X-OmniVoice-Replica``) is passed on as it is: a streamed one cut by its replica's
  death ends early, as a stream must.
"""

from __future__ import annotations

import asyncio
import logging
import os
from typing import Optional

log = logging.getLogger(__name__)

#: where the proxy finds the hub: "NAME@NAMESPACE" (set by serve_replicas for the proxy's process)
HUB_ENV = "OMNIVOICE_REPLICA_HUB"
CALLBACK = "omnivoice_demo.api.replica_proxy.middlewares"
PROBES = ("/health", "/ready", "/metrics")
#: seconds a client is told to wait: another replica takes the request at once; Serve restarts the dead one
RETRY_REPLICA_S = 2
RETRY_BUSY_S, RETRY_LOADING_S = 5, 5
HUB_TIMEOUT_S = 5.0
REPLICA_HEADER = b"x-omnivoice-replica"


def middlewares() -> list:
    """The callback Serve's proxy calls for its middleware (``RAY_SERVE_HTTP_PROXY_CALLBACK_IMPORT_PATH``)."""
    from starlette.middleware import Middleware

    return [Middleware(ReplicaFront)]


def _error(status: int, message: str, type_: str, code: str, retry_after: int):
    from .openai_errors import ApiError, error_response

    return error_response(ApiError(status, message, type_, code=code, headers={"Retry-After": str(retry_after)}))


def replica_unavailable():
    return _error(503, "The replica that took this request stopped before it answered (Serve is restarting it); "
                       "send the request again.", "server_error", "replica_unavailable", RETRY_REPLICA_S)


def busy(retry_after: Optional[int] = None):
    return _error(429, "Every replica is busy and the requests waiting for one are at their limit (--max-queue "
                       "per replica); try again shortly.", "rate_limit_error", "busy", retry_after or RETRY_BUSY_S)


class ReplicaFront:
    """ASGI middleware around Serve's proxy (see the module's docstring)."""

    def __init__(self, app):
        self.app = app
        self.hub = None
        self.warned = False

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        if scope["method"] == "GET" and scope["path"] in PROBES:
            view = await self._view()
            if view is not None:
                return await probe_answer(scope["path"], view)(scope, receive, send)
        state = {"started": False, "replaced": False}

        async def watched(message):
            if state["replaced"]:
                return   # the proxy's own body of an answer replaced below
            if message["type"] == "http.response.start":
                state["started"] = True
                headers = dict(message.get("headers") or [])
                if REPLICA_HEADER not in headers and (message["status"] == 429 or message["status"] >= 500):
                    state["replaced"] = True   # Serve's own answer (no replica gave it): the API's shape
                    retry = headers.get(b"retry-after", b"").decode("latin-1")
                    answer = (busy(int(retry) if retry.isdigit() else None) if message["status"] == 429
                              else replica_unavailable())
                    return await answer(scope, receive, send)
            await send(message)

        try:
            await self.app(scope, receive, watched)
        except Exception:
            if state["started"]:
                raise
            log.warning("Serve's proxy failed before any answer; answering 503 replica_unavailable", exc_info=True)
        if not state["started"]:   # the replica died (Serve's proxy sends nothing then)
            await replica_unavailable()(scope, receive, send)

    async def _view(self) -> Optional[dict]:
        """The hub's view, or None (then the replicas answer the probes themselves, one of them each time)."""
        try:
            if self.hub is None:
                import ray

                name, _, namespace = os.environ[HUB_ENV].partition("@")
                loop = asyncio.get_running_loop()
                self.hub = await loop.run_in_executor(None, lambda: ray.get_actor(name, namespace=namespace or None))
            return await asyncio.wait_for(self.hub.view.remote(), HUB_TIMEOUT_S)
        except Exception as exc:  # noqa: BLE001 - no hub (another Serve's proxy, or it is gone): the replicas answer
            self.hub = None
            if not self.warned:
                log.warning("the replicas' hub does not answer (%s); the probes go to one replica each", exc)
                self.warned = True
            return None


def probe_answer(path: str, view: dict):
    """``/health``, ``/ready`` or ``/metrics`` over every replica's report (``ReplicaHub.view``)."""
    from starlette.responses import JSONResponse, Response

    from ..studio.metrics import CONTENT_TYPE
    from .replica_hub import metrics_text

    if path == "/metrics":
        return Response(metrics_text(view["families"]), media_type=CONTENT_TYPE)
    live = view["live"]
    ready = [health for health in live if health.get("model_loaded")]
    if path == "/ready":
        if ready:
            return JSONResponse({"status": "ready", "model": ready[0].get("model"),
                                 "voice_store": ready[0].get("voice_store", {"status": "unknown"}),
                                 "replicas_ready": len(ready), "replicas": len(live)})
        message = next((health["message"] for health in live if health.get("message")),
                       "no replica has loaded a model yet" if live else "no replica has started yet")
        return JSONResponse({"status": live[0].get("status", "loading") if live else "starting", "message": message},
                            status_code=503, headers={"Retry-After": str(RETRY_LOADING_S)})
    first = (ready or live or [{}])[0]
    queue: dict = {}
    for health in live:
        for key, value in (health.get("queue") or {}).items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                queue[key] = queue.get(key, 0) + value
    answer = {"status": "ok" if ready else first.get("status", "starting"), "model_loaded": bool(ready),
              "model": first.get("model"), "queue": queue, "formats": first.get("formats", []),
              "replicas": [{"id": health["replica"].get("id"), "pid": health["replica"].get("pid"),
                            "status": health.get("status"), "model": health.get("model"),
                            "queue": health.get("queue")} for health in live]}
    return JSONResponse(answer)
