"""OmniVoice ONNX Studio: the Gradio app and the HTTP API on one server (``python app.py``, a Space's app).

The one place that puts the front ends together: it makes the studio core
(``omnivoice_demo.studio``), builds the UI (``omnivoice_demo.ui``) on it and
mounts the HTTP API (``omnivoice_demo.api``) beside it, and with ``--wyoming-uri``
starts the Wyoming server (``omnivoice_demo.wyoming``) on the same queue; no
front end imports another.

    omnivoice-studio [--model SPEC] [--precision int4|fp16|fp32|cuda] [--provider cpu|cuda]
                  [--host 127.0.0.1] [--port 7860] [--share] [--shared] [--inbrowser] [--offline]
                  [--limits public|local] [--max-text-chars N ...] [--wyoming-uri tcp://0.0.0.0:10200]

The page is served at once; the model is resolved (found in the cache,
downloaded, repaired or built) and loaded in the background while the model
bar shows the progress.  Without ``--model`` the default Hub repo is used.
Listens on the loopback interface unless ``--host`` says otherwise (on a Space,
GRADIO_SERVER_NAME sets it).
"""

from __future__ import annotations

import argparse
import logging
import os
import sys


def parse_args(argv=None) -> argparse.Namespace:
    from omnivoice_demo.settings.limits import add_limit_arguments
    from omnivoice_demo.hub import add_model_arguments

    from omnivoice_demo.studio.store_url import RedactingParser

    # a usage error repeats what it did not take, never a password in it (issue 57)
    parser = RedactingParser(prog="omnivoice-studio", description="OmniVoice ONNX Studio (Gradio app)")
    add_model_arguments(parser)
    parser.add_argument("--provider", default="cpu", choices=["cpu", "cuda"],
                        help="ONNX Runtime execution provider (default cpu)")
    parser.add_argument("--host", default=os.environ.get("GRADIO_SERVER_NAME", "127.0.0.1"),
                        help="interface to listen on (default 127.0.0.1: this machine only; 0.0.0.0: the network)")
    parser.add_argument("--port", type=int, default=int(os.environ.get("GRADIO_SERVER_PORT", "7860")),
                        help="port (default 7860)")
    parser.add_argument("--share", action="store_true", help="also make a temporary public gradio.live link")
    parser.add_argument("--inbrowser", action="store_true", help="open the app in the default browser")
    parser.add_argument("--shared", action="store_true",
                        help="shared mode (also on with SPACE_ID, --share or a non-loopback --host): visitors cannot "
                             "change models, their voices stay in their browsers, messages show no server path")
    parser.add_argument("--threads", type=int, default=None, help=argparse.SUPPRESS)
    from omnivoice_demo.backbones.choice import add_backbone_argument

    add_backbone_argument(parser)
    parser.add_argument("--max-upload-mb", type=float, default=50.0, help=argparse.SUPPRESS)
    from omnivoice_demo.studio.uploads import upload_arguments

    upload_arguments(parser)  # shared mode: Gradio's uploads per visitor, in total, and how long they are kept
    add_limit_arguments(parser)
    from omnivoice_demo.api.server import api_arguments

    api_arguments(parser)  # --api-key, --max-queue, --max-running: the HTTP API and the queue of this server
    from omnivoice_demo.wyoming.server import wyoming_arguments

    wyoming_arguments(parser)  # --wyoming-uri: Home Assistant's server on the same queue
    return parser.parse_args(argv)


def make_studio(args: argparse.Namespace):
    from omnivoice_demo.settings.limits import limits_from_arguments
    from omnivoice_demo.studio import ModelManager, Studio
    from omnivoice_demo.studio.voice_store import store_from_arguments
    from omnivoice_demo.studio.service import service_from_arguments
    from omnivoice_demo.studio.sharing import shared_from_arguments

    shared = shared_from_arguments(args)
    limits = limits_from_arguments(args)
    from omnivoice_demo.backbones.choice import backbone_settings

    manager = ModelManager(provider=args.provider, threads=args.threads, cache_dir=args.model_cache,
                           offline=args.offline, limits=limits, locked=shared, **backbone_settings(args))
    # shared: saved voices live in each visitor's browser (the server folder is not used)
    voices = store_from_arguments(args, private=shared, max_variants=limits.max_voice_variants)
    voices.sweep()  # voice files that cannot be read are moved aside, not listed
    return Studio(models=manager, voices=voices, max_upload_mb=args.max_upload_mb, limits=limits, shared=shared,
                  service=service_from_arguments(args), lexicon=args.lexicon)


def main(argv=None) -> None:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    args = parse_args(argv)
    from omnivoice_demo.runtime.memory import bound_heap
    from omnivoice_demo.studio.ports import exit_if_port_in_use

    bound_heap()  # our own process: its large buffers go back to the system when freed (runtime/memory.py)

    exit_if_port_in_use(args.host, args.port)  # before anything is loaded: one line, not a traceback
    from omnivoice_demo.ui.assets import css
    from omnivoice_demo.ui.layout import build_app

    from omnivoice_demo.api.server import api_routes, app_context, gradio_auth

    auth = gradio_auth(args)  # --api-key-scope all: the page and the Gradio API need the key too
    from omnivoice_demo.errors import OmniVoiceError, one_line

    try:
        studio = make_studio(args)
    except OmniVoiceError as exc:   # a voice store that cannot be used (--voice-store): one line, not a traceback
        from omnivoice_demo.studio.store_url import redact_text
        from omnivoice_demo.studio.voice_store import VOICE_STORE_ENV

        raise SystemExit("error: " + redact_text(one_line(exc), [args.voice_store, os.environ.get(VOICE_STORE_ENV)])
                         ) from None
    demo = build_app(studio, model_spec=args.model, precision=args.precision, provider=args.provider)
    # resolve and load in the background: the page is up before the model is
    studio.models.start_load(args.model, args.precision, args.provider, args.offline, args.build,
                             args.force_download, by_operator=True)
    from omnivoice_demo.wyoming.server import start_beside

    start_beside(args, studio.models, studio.voices, studio.service, studio.message)  # --wyoming-uri
    studio.outputs.install_cleanup()  # this run's output files go on exit and on SIGTERM
    from omnivoice_demo.studio.throttle import LoginThrottle

    throttle = LoginThrottle()   # one per server: wrong keys on the login and on /v1 count together
    routes = api_routes(app_context(args, studio, studio.service, throttle))
    from starlette.middleware import Middleware

    middleware = []
    if studio.shared:  # strangers' uploads: bounded per visitor and in total, deleted after a while
        from omnivoice_demo.studio.uploads import upload_quota_from_arguments
        from omnivoice_demo.ui.owners import OwnerMiddleware
        from omnivoice_demo.ui.uploads import UploadQuotaMiddleware

        quota = upload_quota_from_arguments(args)
        demo.delete_cache = quota.delete_cache
        middleware.append(Middleware(UploadQuotaMiddleware, quota=quota))
        # each output file only to the visitor who made it (an owner cookie; 404 to anyone else), its owner
        # known for as long as Gradio may keep a served copy of it
        studio.outputs.copies_kept_seconds = max(studio.outputs.copies_kept_seconds, sum(quota.delete_cache))
        from gradio.utils import get_upload_folder

        from omnivoice_demo.ui.hidden_paths import HiddenPaths

        # no server path: Gradio's file cache is shown by an alias, in front of the owner check (issue 49)
        middleware.append(Middleware(HiddenPaths, folder=os.path.abspath(get_upload_folder())))
        middleware.append(Middleware(OwnerMiddleware, studio=studio))
    if auth is not None:  # every other route asks for the login too; wrong passwords are slowed down
        from omnivoice_demo.ui.key_gate import KeyGate

        middleware.insert(0, Middleware(KeyGate, throttle=throttle))
    from omnivoice_demo.ui.gradio_data import GradioDataCheck, largest_call_bytes, validation_answer

    middleware.append(Middleware(GradioDataCheck))   # Gradio's routes: a malformed body is a 4xx, not a 500
    from omnivoice_demo.api.body_cap import BodyCap, upload_caps

    # in front of everything: every route's body counted as it arrives, a Gradio call's at most what the page sends
    middleware.insert(0, Middleware(BodyCap, default=largest_call_bytes(studio.limits, studio.shared),
                                    uploads=upload_caps(studio.limits, args.max_upload_mb)))
    from fastapi.exceptions import RequestValidationError

    from omnivoice_demo.api.cors import ApiCors, front_lifespan
    from omnivoice_demo.ui.server_start import patient_server_start

    from omnivoice_demo.settings.network import forwarded_from_arguments

    # a busy machine's slow start is waited for, not taken for a taken port; X-Forwarded-For believed only from
    # the proxies of --forwarded-allow-ips (none by default), so the wrong-key delay follows the real peer
    patient_server_start(forwarded_from_arguments(args))
    demo.launch(server_name=args.host, server_port=args.port, share=args.share, inbrowser=args.inbrowser,
                css=css(), max_file_size=f"{int(args.max_upload_mb)}mb", show_error=False,
                allowed_paths=[str(studio.out_dir)], auth=auth,
                auth_message="This server needs its API key: any user name, the key as the password.",
                # /v1/audio/speech etc. on the same server, there before the first request; /v1's CORS in front
                app_kwargs={"routes": routes, "middleware": middleware,
                            "lifespan": front_lifespan(Middleware(ApiCors)),
                            # FastAPI's 422 without the refused body (it quoted it whole)
                            "exception_handlers": {RequestValidationError: validation_answer}},
                # no "is localhost accessible" probe after the start: a HEAD with a 3 s timeout that fails on a
                # busy machine and aborts the launch; the server is up when launch returns (it waits for that)
                _frontend=False)


if __name__ == "__main__":
    sys.exit(main())
