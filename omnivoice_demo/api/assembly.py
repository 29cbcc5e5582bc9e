"""The pieces every way of serving the HTTP API assembles: the context of one server (``make_context``), the
speech recogniser it may use (``find_transcriber``) and its routes on a FastAPI app (``mount``).  Used by
``api.server`` (``omnivoice serve``, the app) and by each replica of ``api.replicas``, which import it, never
each other."""

from __future__ import annotations

import argparse
from typing import Optional

from ..studio.service import EngineService
from ..studio.sharing import shared_from_arguments
from ..studio.throttle import LoginThrottle
from .context import ApiContext, api_key_from
from .routes import build_router


def make_context(args: argparse.Namespace, models, voices, service: EngineService, redact=str,
                 throttle: Optional[LoginThrottle] = None) -> ApiContext:
    """The API's context; ``throttle``: the login's (the app's), so wrong keys on either door count together."""
    return ApiContext(models=models, voices=voices, service=service, api_key=api_key_from(args.api_key),
                      shared=shared_from_arguments(args), transcribe=find_transcriber(), redact=redact,
                      lexicon=getattr(args, "lexicon", None), throttle=throttle or LoginThrottle())


def find_transcriber():
    """``transcribe(audio, rate) -> text`` from the speech recogniser (``omnivoice_demo.asr``, made on first
    use) when this install has it, else None (then POST /v1/audio/voices requires the transcript)."""
    try:
        from ..asr import LazyRecognizer
    except ImportError:
        return None
    recognizer = LazyRecognizer()
    return lambda audio, rate: recognizer.transcribe(audio, rate).text


def mount(app, context: ApiContext) -> None:
    """Add the API's routes to a FastAPI app (``omnivoice serve``'s, or one of yours)."""
    app.include_router(build_router(context))
