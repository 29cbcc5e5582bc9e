"""``omnivoice serve --replicas N`` (or ``auto:MIN-MAX``): the HTTP API as a Ray Serve deployment.

Each replica is a Ray actor with its own engine (``--replica-threads`` threads, as many CPUs asked of Ray), its own
queue and its own ``ApiContext``: the same FastAPI routes as one ``serve`` process (``routes.build_router``),
behind Serve's HTTP proxy on ``--host``/``--port``, which spreads the requests over the replicas (streamed
answers stream through it).  ``auto:MIN-MAX`` lets Serve's autoscaler add and remove replicas by the requests
in flight (``target_ongoing_requests``: each replica's ``--max-running``).  ``--ray ADDRESS`` joins a running
cluster (``ray start --head`` on one machine, ``ray start --address`` on the others); without it a local
cluster starts, and stops with the command.

Every answer carries ``X-OmniVoice-Replica`` (the replica's id) and ``/health`` says the replica's id and
process.  Saved voices: one store for all replicas, the folder on one machine (its lock file keeps a name's
check and write one step across them) or ``--voice-store postgresql://...`` across machines.  A replica that
dies is restarted by Serve; the requests it was answering end with an error, the next ones go to the others.

Ray (``ray[serve]``) is an extra, like ``convert``: ``pip install 'omnivoice-onnx-studio[serve]'``.
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import signal
from typing import Optional

from ..errors import InvalidInput

log = logging.getLogger(__name__)

#: the response header naming the replica that answered
REPLICA_HEADER = "X-OmniVoice-Replica"
DEPLOYMENT_NAME = "omnivoice"
INSTALL_HINT = "pip install 'omnivoice-onnx-studio[serve]' (Ray Serve)"


def parse_replicas(value: str) -> tuple[int, int]:
    """``--replicas N`` -> (N, N); ``auto:MIN-MAX`` -> (MIN, MAX); each 1..64."""
    text = str(value).strip()
    match = re.fullmatch(r"auto:(\d+)-(\d+)", text) or re.fullmatch(r"(\d+)", text)
    if not match:
        raise argparse.ArgumentTypeError(f"--replicas takes a number or auto:MIN-MAX, not {value!r}")
    low, high = int(match.group(1)), int(match.groups()[-1])
    if not 1 <= low <= high <= 64:
        raise argparse.ArgumentTypeError(f"--replicas {value}: 1 <= MIN <= MAX <= 64")
    return low, high


def replica_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("replicas (Ray Serve; the serve extra)")
    group.add_argument("--replicas", type=parse_replicas, default=None, metavar="N|auto:MIN-MAX",
                       help="serve the API from N replicas, each with its own engine, behind Ray Serve's proxy "
                            "(auto:MIN-MAX: Serve adds and removes replicas by the requests in flight)")
    group.add_argument("--replica-threads", type=int, default=1, metavar="T",
                       help="threads of each replica's engine, and the CPUs Ray reserves for it (default 1)")
    group.add_argument("--ray", default=None, metavar="ADDRESS",
                       help="join this Ray cluster (e.g. 10.0.0.5:6379, or auto); default: a local one")


class ReplicaHeader:
    """ASGI middleware: every HTTP answer of this replica carries ``X-OmniVoice-Replica`` (streamed ones too)."""

    def __init__(self, app, replica: str):
        self.app, self.value = app, replica.encode("latin-1", "replace")

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)

        async def marked(message):
            if message["type"] == "http.response.start":
                message = dict(message, headers=[*message.get("headers", []), (REPLICA_HEADER.lower().encode(),
                                                                               self.value)])
            await send(message)

        return await self.app(scope, receive, marked)


def settings_of(args: argparse.Namespace) -> dict:
    """The command line's settings a replica needs (what pickles: no functions)."""
    return {key: value for key, value in vars(args).items() if not callable(value)}


class ReplicaServer:
    """One replica: the model loaded (before Serve sends it requests), the voice store, the queue, the routes."""

    def __init__(self, settings: dict):
        import fastapi

        from ..backbones.choice import backbone_settings
        from ..settings.limits import limits_from_arguments
        from ..studio import ModelManager
        from ..studio.service import service_from_arguments
        from ..studio.sharing import redact_paths, shared_from_arguments
        from ..studio.voice_store import store_from_arguments
        from .assembly import make_context, mount

        logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
        args = argparse.Namespace(**settings)
        shared = shared_from_arguments(args)
        self.replica = _replica_id()
        models = ModelManager(provider=args.provider, threads=args.replica_threads, cache_dir=args.model_cache,
                              offline=args.offline, limits=limits_from_arguments(args), locked=shared,
                              **backbone_settings(args))
        models.load(args.model, args.precision, args.provider, args.offline, args.build, args.force_download)
        voices = store_from_arguments(args, private=shared, max_variants=models.limits.max_voice_variants)
        voices.sweep()

        def redact(text: str) -> str:
            return redact_paths(text, voices.private_paths() + [models.cache_dir]) if shared else text

        self.context = make_context(args, models, voices, service_from_arguments(args), redact)
        self.context.replica = {"id": self.replica, "pid": os.getpid()}
        app = fastapi.FastAPI(title="OmniVoice ONNX Studio API", docs_url=None, redoc_url=None)
        mount(app, self.context)
        self._asgi = ReplicaHeader(app, self.replica)

    def __serve_build_asgi_app__(self):
        return self._asgi


def _replica_id() -> str:
    try:
        from ray import serve

        return str(serve.get_replica_context().replica_id.unique_id)
    except Exception:  # noqa: BLE001 - outside a replica (tests of the class): the process
        return f"pid-{os.getpid()}"


def deployment_options(args: argparse.Namespace) -> dict:
    """Serve's options of the deployment: the replicas (fixed or autoscaled), each replica's CPUs and the
    requests one replica takes at once (its queue: running and waiting)."""
    low, high = args.replicas
    options: dict = {"name": DEPLOYMENT_NAME,
                     "ray_actor_options": {"num_cpus": float(args.replica_threads)},
                     "max_ongoing_requests": args.max_running + args.max_queue,
                     "health_check_period_s": 5, "health_check_timeout_s": 30,
                     "graceful_shutdown_timeout_s": 5}
    if low == high:
        options["num_replicas"] = low
    else:
        options["autoscaling_config"] = {"min_replicas": low, "max_replicas": high,
                                         "target_ongoing_requests": args.max_running}
    return options


def serve_replicas(args: argparse.Namespace) -> int:
    """``omnivoice serve --replicas ...``: start (or join) Ray, deploy, and wait until stopped (SIGTERM, Ctrl-C)."""
    try:
        import ray
        from ray import serve
    except ImportError:
        raise InvalidInput(f"--replicas needs Ray Serve, which is not installed: {INSTALL_HINT}.",
                           param="replicas") from None
    if args.replica_threads < 1:
        raise InvalidInput("--replica-threads must be 1 or more.", param="replica_threads")
    store = getattr(args, "voice_store", None) or os.environ.get("OMNIVOICE_VOICE_STORE")
    if args.ray and not (store or "").startswith(("postgresql://", "postgres://")):
        log.warning("--ray with a voices folder: replicas on other machines do not see it; give --voice-store "
                    "postgresql://... for voices shared by the whole cluster")
    from ..studio.ports import exit_if_port_in_use

    if not args.ray:
        exit_if_port_in_use(args.host, args.port)
    # a local cluster's workers inherit this environment (OMNIVOICE_*, HF_*); a joined cluster's are its own
    ray.init(address=args.ray or None, include_dashboard=False, logging_level=logging.WARNING)
    stop = _stop_on_sigterm()   # after ray.init, which sets a SIGTERM handler of its own
    try:
        serve.start(http_options={"host": args.host, "port": args.port})
        deployment = serve.deployment(serve.ingress()(ReplicaServer), **deployment_options(args))
        serve.run(deployment.bind(settings_of(args)), name=DEPLOYMENT_NAME, route_prefix="/", blocking=False)
        low, high = args.replicas
        log.info("serving on http://%s:%d with %s replica(s) of %d thread(s) each", args.host, args.port,
                 low if low == high else f"{low}-{high}", args.replica_threads)
        stop.wait()
    except KeyboardInterrupt:
        pass
    finally:
        try:
            serve.shutdown()
        finally:
            ray.shutdown()
    return 0


def _stop_on_sigterm():
    """An event set by SIGTERM or SIGINT, so the command shuts Serve and its local Ray down on the way out."""
    import threading

    stop = threading.Event()

    def handler(_signum, _frame) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)
    return stop


def replicas_requested(args: argparse.Namespace) -> Optional[tuple[int, int]]:
    return getattr(args, "replicas", None)
