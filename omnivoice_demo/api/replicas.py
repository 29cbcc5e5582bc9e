"""``omnivoice serve --replicas N`` (or ``auto:MIN-MAX``): the HTTP API as a Ray Serve deployment.

Each replica is a Ray actor with its own engine (``--replica-threads`` threads, as many CPUs asked of Ray), its own
queue and its own ``ApiContext``: the same FastAPI routes as one ``serve`` process (``routes.build_router``),
behind Serve's HTTP proxy on ``--host``/``--port``, which spreads the requests over the replicas (streamed
answers stream through it).  ``auto:MIN-MAX`` lets Serve's autoscaler add and remove replicas by the requests
in flight (``target_ongoing_requests``: each replica's ``--max-running``).  ``--ray ADDRESS`` joins a running
cluster (``ray start --head`` on one machine, ``ray start --address`` on the others); without it a local
cluster starts, and stops with the command.

Each replica takes as many requests at once as its engine runs (``--max-running``): the others wait in Serve's
proxy (at most ``--max-queue`` a replica; more is a 429) and go to the first replica with room, so requests that
arrive together spread over the replicas.  Every answer a replica gives carries ``X-OmniVoice-Replica`` (its id).
``/health``, ``/ready`` and ``/metrics`` are answered by the proxy from every replica's report (``replica_hub``,
``replica_proxy``): the probes never wait behind a generation and ``/metrics`` is the totals.  Saved voices: one
store for all replicas, the folder on one machine (its lock file keeps a name's check and write one step across
them) or ``--voice-store postgresql://...`` across machines.  A replica that dies is restarted by Serve; a request
it had not begun to answer gets the API's 503 ``replica_unavailable`` with ``Retry-After``, a streamed answer it
had begun is cut, and the next requests go to the others.

With a loopback ``--host`` the local Ray cluster's own ports (GCS, raylet, workers, agents) listen on loopback
only (``--ray-on-network``: on the network, Ray's default); with a specific address, Ray's node has that address.

Ray (``ray[serve]``) is an extra, like ``convert``: ``pip install 'omnivoice-onnx-studio[serve]'``.
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import signal
import sys
import uuid
from typing import Optional

from ..errors import InvalidInput
from .replica_proxy import CALLBACK as PROXY_CALLBACK
from .replica_proxy import HUB_ENV

log = logging.getLogger(__name__)

#: the response header naming the replica that answered
REPLICA_HEADER = "X-OmniVoice-Replica"
DEPLOYMENT_NAME = "omnivoice"
INSTALL_HINT = "pip install 'omnivoice-onnx-studio[serve]' (Ray Serve)"
#: the Ray namespace of the command's actors (the replicas' hub); the settings key that names the hub
NAMESPACE = "omnivoice"
HUB_SETTING = "replica_hub"


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
    group.add_argument("--ray-on-network", action="store_true",
                       help="with a loopback --host, let the local Ray cluster's own ports listen on the network "
                            "(Ray's default); without it they listen on loopback only, like the API")


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
        if _loopback_only(args):
            _serve_grpc_on_loopback()
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
        self.reporter = _reporter(settings.get(HUB_SETTING), self.replica, self.context)

    def __del__(self):   # Serve stops the replica: its reports stop (the hub keeps its counters)
        reporter = getattr(self, "reporter", None)
        if reporter is not None:
            reporter.stopped.set()

    def __serve_build_asgi_app__(self):
        return self._asgi


def _reporter(hub: Optional[str], replica: str, context):
    """This replica's reports to the command's hub (its /health answer and its metrics), if it has one."""
    if not hub:
        return None
    import asyncio
    import json

    import ray

    from .replica_hub import Reporter
    from .routes.health import _store_state
    from .routes.health import health as health_route

    name, _, namespace = hub.partition("@")

    def health() -> dict:   # its /health answer, and the voice store's last state that its /ready says
        return dict(json.loads(asyncio.run(health_route(context)).body), voice_store=_store_state(context))

    return Reporter(ray.get_actor(name, namespace=namespace or None), replica, health,
                    context.metrics.registry).start()


def _replica_id() -> str:
    try:
        from ray import serve

        return str(serve.get_replica_context().replica_id.unique_id)
    except Exception:  # noqa: BLE001 - outside a replica (tests of the class): the process
        return f"pid-{os.getpid()}"


def deployment_options(args: argparse.Namespace) -> dict:
    """Serve's options of the deployment: the replicas (fixed or autoscaled), each replica's CPUs, the requests
    one replica takes at once (the generations its engine runs: a request waits in the proxy for the first replica
    with room, not in one replica's queue behind its generation while another is idle) and the requests that
    wait in the proxy (``--max-queue`` for each replica; one more is Serve's backpressure, answered 429 busy)."""
    low, high = args.replicas
    options: dict = {"name": DEPLOYMENT_NAME,
                     "ray_actor_options": {"num_cpus": float(args.replica_threads)},
                     "max_ongoing_requests": args.max_running,
                     "max_queued_requests": args.max_queue * high,
                     "backpressure_config": {"status_code": 429, "retry_after_s": 5},
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
    if args.replica_threads < 1:
        raise InvalidInput("--replica-threads must be 1 or more.", param="replica_threads")
    hub = f"omnivoice-replicas-{uuid.uuid4().hex[:12]}@{NAMESPACE}"
    proxy_env = {"RAY_SERVE_HTTP_PROXY_CALLBACK_IMPORT_PATH": PROXY_CALLBACK, HUB_ENV: hub}
    loopback_only = _set_ray_environment(args, proxy_env)
    try:
        import ray
        from ray import serve
    except ImportError:
        raise InvalidInput(f"--replicas needs Ray Serve, which is not installed: {INSTALL_HINT}.",
                           param="replicas") from None
    store = getattr(args, "voice_store", None) or os.environ.get("OMNIVOICE_VOICE_STORE")
    if args.ray and not (store or "").startswith(("postgresql://", "postgres://")):
        log.warning("--ray with a voices folder: replicas on other machines do not see it; give --voice-store "
                    "postgresql://... for voices shared by the whole cluster")
    from ..studio.ports import exit_if_port_in_use
    from .replica_hub import ReplicaHub

    if not args.ray:
        exit_if_port_in_use(args.host, args.port)
    # a local cluster's workers inherit this environment (OMNIVOICE_*, HF_*); a joined cluster's are its own, so
    # the proxy's settings go in the job's runtime environment there
    options: dict = {"include_dashboard": False, "logging_level": logging.WARNING, "namespace": NAMESPACE}
    if args.ray:
        options["runtime_env"] = {"env_vars": proxy_env}
    elif not loopback_only and _specific_address(args.host):
        options["_node_ip_address"] = args.host   # Ray's node is reached at the address the API listens on
    ray.init(address=args.ray or None, **options)
    stop = _stop_on_sigterm()   # after ray.init, which sets a SIGTERM handler of its own
    try:
        name, _, namespace = hub.partition("@")
        # kept referenced: an actor nobody holds a handle of is ended by Ray
        hub_actor = ray.remote(num_cpus=0, max_restarts=3)(ReplicaHub).options(name=name,  # noqa: F841
                                                                                namespace=namespace).remote()
        serve.start(http_options={"host": args.host, "port": args.port})
        deployment = serve.deployment(serve.ingress()(ReplicaServer), **deployment_options(args))
        serve.run(deployment.bind(dict(settings_of(args), **{HUB_SETTING: hub})), name=DEPLOYMENT_NAME,
                  route_prefix="/", blocking=False)
        low, high = args.replicas
        log.info("serving on http://%s:%d with %s replica(s) of %d thread(s) each", args.host, args.port,
                 low if low == high else f"{low}-{high}", args.replica_threads)
        stop.wait()
    except KeyboardInterrupt:
        pass
    finally:
        _shut_down(ray, serve, joined=bool(args.ray))
    return 0


def _set_ray_environment(args: argparse.Namespace, proxy_env: dict) -> bool:
    """The environment of the local cluster's processes (they inherit it), set before Ray is imported (it reads
    its settings then).  Returns whether Ray's own ports are kept on loopback."""
    if "ray" in sys.modules:
        log.warning("Ray was imported before serve set it up: its log and address settings may not apply")
    os.environ.update(proxy_env)   # Serve's proxy: the API's errors and the probes over all replicas
    os.environ.setdefault("RAY_DEDUP_LOGS", "0")   # a server's log has each line when it happens, in its order
    if not sys.stdout.isatty():
        os.environ.setdefault("RAY_COLOR_PREFIX", "0")   # no terminal colour codes in a log file
    loopback_only = _loopback_only(args)
    if loopback_only:
        # Ray's local-only mode (its default on macOS and Windows): the node's address is loopback, so the
        # GCS, raylet, workers' and agents' ports listen on loopback, not on every interface
        os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
    return loopback_only


def _loopback_only(args: argparse.Namespace) -> bool:
    """Ray's own ports on loopback: a local cluster, a loopback --host, and no --ray-on-network."""
    return not args.ray and not getattr(args, "ray_on_network", False) and _is_loopback(args.host)


def _serve_grpc_on_loopback() -> None:
    """In a replica of a loopback-only cluster: Serve's replica starts its inter-deployment gRPC server on
    ``[::]:0`` (every interface) whatever the node's address (``ray/serve/_private/replica.py``,
    ``_on_initialized``, Ray 2.60; no setting moves it), after this class is made: put it on loopback too."""
    try:
        from ray.serve._private import replica as serve_replica
    except ImportError:
        return
    original = getattr(serve_replica, "add_port_to_grpc_server", None)
    if original is None or getattr(original, "on_loopback", False):
        return

    def on_loopback(server, address: str):
        if address.startswith("[::]:"):
            address = "127.0.0.1:" + address.rsplit(":", 1)[1]
        return original(server, address)

    on_loopback.on_loopback = True  # type: ignore[attr-defined]
    serve_replica.add_port_to_grpc_server = on_loopback


def _is_loopback(host: str) -> bool:
    import ipaddress

    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _specific_address(host: str) -> bool:
    """An IP address of one interface (not a name, not 0.0.0.0 or ::)."""
    import ipaddress

    try:
        return not ipaddress.ip_address(host).is_unspecified
    except ValueError:
        return False


def _shut_down(ray, serve, joined: bool) -> None:
    """The application first (its replicas stop gracefully), then Ray: a local cluster goes with the command, so
    its Serve controller is not asked to shut down by itself (that task ends by the controller's own death, which
    Ray logs as a failed task); on a joined cluster Serve is shut down as before."""
    try:
        serve.delete(DEPLOYMENT_NAME)
        if joined:
            serve.shutdown()
    except Exception as exc:  # noqa: BLE001 - stopping anyway: Ray's shutdown ends what is left
        log.warning("Serve did not stop cleanly (%s); stopping Ray", exc)
    finally:
        ray.shutdown()


def _stop_on_sigterm():
    """An event set by SIGTERM or SIGINT, so the command shuts Serve and its local Ray down on the way out."""
    import threading

    stop = threading.Event()

    def handler(_signum, _frame) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)
    return stop

