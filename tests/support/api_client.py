"""The HTTP API's router in process over an engine: what the tests' ``api`` fixtures serve."""

from __future__ import annotations

from fastapi import FastAPI
from fastapi.testclient import TestClient

from omnivoice_demo.api.routes import ApiContext, build_router
from omnivoice_demo.studio import EngineService, ModelManager, VoiceLibrary


def router_client(engine, voices: VoiceLibrary, **fields) -> TestClient:
    """A client of the router over ``engine`` (labelled "tiny") and the voice library ``voices``; ``fields``:
    further ``ApiContext`` fields (``api_key``, ...).  The context is the client's ``context``."""
    models = ModelManager()
    models.add(engine, label="tiny")
    context = ApiContext(models=models, voices=voices, service=EngineService(), **fields)
    app = FastAPI()
    app.include_router(build_router(context))
    client = TestClient(app, raise_server_exceptions=False)
    client.context = context
    return client
