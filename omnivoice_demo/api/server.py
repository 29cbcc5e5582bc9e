"""Serving the HTTP API: on the Gradio app's own server, or alone with ``omnivoice serve``.

    omnivoice serve [--model DIR|REPO] [--host 127.0.0.1] [--port 8880] [--api-key KEY]
                    [--max-queue 8] [--max-running 1] [--shared] [--limits local | --max-... N]

Both ways use one ``ModelManager``, one ``VoiceLibrary`` and one
``EngineService`` per process; ``api_arguments`` adds the flags shared with the
app (``omnivoice-studio``).
"""

from __future__ import annotations

import argparse
import logging
from typing import Optional

from ..errors import ModelNotAvailable, OmniVoiceError, one_line
from ..settings.network import add_forwarded_argument, forwarded_from_arguments
from ..text.lexicon import lexicon_argument
from ..studio.service import EngineService, add_queue_arguments, service_from_arguments
from ..studio.throttle import LoginThrottle
from ..studio.sharing import shared_from_arguments
from .context import API_KEY_ENV, ApiContext, api_key_from
from .assembly import find_transcriber, make_context, mount  # noqa: F401 - the names callers import here
from .routes import build_router

#: ``--api-key-scope``: the HTTP API only, or the Gradio page and API too
API_KEY_SCOPES = ("v1", "all")


def api_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("HTTP API and queue")
    group.add_argument("--api-key", default=None,
                       help=f"require 'Authorization: Bearer KEY' on /v1 (default: ${API_KEY_ENV}; none: open)")
    group.add_argument("--api-key-scope", choices=API_KEY_SCOPES, default=None,
                       help="what --api-key guards: all (the default: the HTTP API, the page and the Gradio API; a "
                            "login asks for the key as the password, gradio_client passes auth=('any name', KEY)) or "
                            "v1 (an opt-in: the HTTP API only; the page and the Gradio API stay open to anyone)")
    group.add_argument("--lexicon", default=None, metavar="FILE", type=lexicon_argument,
                       help="pronunciations for every request: /v1/audio/speech (a request's own pronunciations "
                            "take precedence word by word), the app's pages (under each owner's lexicon) and "
                            "--wyoming-uri (TSV or JSON, docs/text.md)")
    add_queue_arguments(group)
    from ..studio.voice_store import add_voice_store_argument

    add_voice_store_argument(group)
    add_forwarded_argument(group)   # --forwarded-allow-ips: whose X-Forwarded-For names the client (none by default)


def gradio_auth(args: argparse.Namespace):
    """``demo.launch(auth=...)`` for a key of scope ``all`` (the default with ``--api-key``; issue 43): any user name
    with the API key as the password (None: no key, or ``--api-key-scope v1``, the opt-in that leaves the page open).
    ``--api-key-scope all`` without a key is a start-up error."""
    scope = getattr(args, "api_key_scope", None)
    key = api_key_from(getattr(args, "api_key", None))
    if scope == "v1" or (scope is None and not key):   # no key and no scope asked for: an open server
        return None
    if not key:
        raise SystemExit(f"error: --api-key-scope all needs an API key: give --api-key KEY (or set {API_KEY_ENV})")
    import hmac

    return lambda _user, password: hmac.compare_digest(str(password).encode(), key.encode())


def api_routes(context: ApiContext) -> list:
    """The API's routes for ``demo.launch(app_kwargs={"routes": ...})``: on the Gradio app from its start."""
    return list(build_router(context).routes)


def serve(args: argparse.Namespace) -> int:
    """``omnivoice serve``: the HTTP API alone (no UI).  The port opens at once and the model loads in the
    background: ``/health`` answers from the start (liveness), ``/ready`` 503 with ``Retry-After`` until the
    model serves requests (readiness), speech 503 until then.  A load that fails stops the server (exit 2, its
    reason on one line): without a UI nothing could load another model."""
    if getattr(args, "replicas", None):   # --replicas: a Ray Serve deployment of this API
        from .replicas import serve_replicas

        return serve_replicas(args)
    import fastapi
    import uvicorn

    from ..settings.limits import limits_from_arguments
    from ..studio import ModelManager
    from ..studio.voice_store import store_from_arguments

    from ..studio.ports import exit_if_port_in_use

    exit_if_port_in_use(args.host, args.port)  # before the model is loaded
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    shared = shared_from_arguments(args)
    from ..backbones.choice import backbone_settings

    models = ModelManager(provider=args.provider, threads=args.threads, cache_dir=args.model_cache,
                          offline=args.offline, limits=limits_from_arguments(args), locked=shared,
                          **backbone_settings(args))
    voices = store_from_arguments(args, private=shared, max_variants=models.limits.max_voice_variants)
    voices.sweep()  # voice files that cannot be read are moved aside, not listed

    def redact(text: str) -> str:
        from ..studio.sharing import redact_paths

        return redact_paths(text, voices.private_paths() + [models.cache_dir]) if shared else text

    context = make_context(args, models, voices, service_from_arguments(args), redact)
    beside = getattr(args, "start_beside", None)  # another front end on the same queue (__main__ sets it: Wyoming)
    if beside is not None:
        beside(args, models, voices, context.service, redact)
    app = fastapi.FastAPI(title="OmniVoice ONNX Studio API", docs_url=None, redoc_url=None)
    mount(app, context)
    from .bodies import MAX_JSON_BYTES
    from .body_cap import BodyCap, upload_caps

    app.add_middleware(BodyCap, default=MAX_JSON_BYTES, uploads=upload_caps(models.limits))  # every route's body
    if shared and not context.api_key:
        logging.getLogger(__name__).warning("shared mode without --api-key: /v1 is open, creating voices is off")
    server = uvicorn.Server(uvicorn.Config(app, host=args.host, port=args.port, log_level="info",
                                           **forwarded_from_arguments(args).uvicorn_options()))
    failed: list[str] = []

    def load() -> None:
        try:
            models.load(args.model, args.precision, args.provider, args.offline, args.build, args.force_download)
        except Exception as exc:  # noqa: BLE001 - said on one line, and the server stops
            failed.append(one_line(exc) if isinstance(exc, OmniVoiceError) else
                          models.status.message or type(exc).__name__)
            server.should_exit = True

    import threading

    threading.Thread(target=load, name="omnivoice-model-loader", daemon=True).start()
    server.run()
    if failed:
        raise ModelNotAvailable(f"the model was not loaded: {failed[0]}")
    return 0


def add_serve_command(commands, add_model_arguments) -> argparse.ArgumentParser:
    """The ``serve`` subcommand of ``python -m omnivoice_demo`` (``add_model_arguments`` brings the limit flags);
    returns its parser, for the flags of front ends that run beside it."""
    parser = commands.add_parser("serve", help="the OpenAI-compatible HTTP API (no UI)")
    add_model_arguments(parser)
    parser.add_argument("--host", default="127.0.0.1", help="interface (default 127.0.0.1: this machine only)")
    parser.add_argument("--port", type=int, default=8880, help="port (default 8880)")
    parser.add_argument("--shared", action="store_true",
                        help="a server for several people (also on with SPACE_ID or a non-loopback --host): "
                             "creating voices needs --api-key")
    api_arguments(parser)
    from .replicas import replica_arguments

    replica_arguments(parser)
    parser.set_defaults(run=serve)
    return parser


def app_context(args: argparse.Namespace, studio, service: Optional[EngineService] = None,
                throttle: Optional[LoginThrottle] = None) -> ApiContext:
    """The context of the Gradio app's API: the studio's models and voices, one queue for all."""
    return make_context(args, studio.models, studio.voices, service or service_from_arguments(args), studio.message,
                        throttle)
