"""Running the Wyoming server: alone (``omnivoice wyoming``) or beside the app and ``omnivoice serve``.

    omnivoice wyoming [--uri tcp://127.0.0.1:10200] [--model DIR|REPO] [--zeroconf [NAME]]
                      [--max-queue 8] [--max-running 1] [--shared] [--limits local | --max-... N]
    omnivoice serve ... --wyoming-uri tcp://0.0.0.0:10200 [--zeroconf [NAME]]
    omnivoice-studio ... --wyoming-uri tcp://0.0.0.0:10200 [--zeroconf [NAME]]

Beside another front end the server runs on a thread of its own (its own event loop) over the same
``ModelManager``, ``VoiceLibrary`` and ``EngineService``: one engine and one queue for the browser,
the HTTP API and Home Assistant.  The saved voices are the app's; where the library is per session
(shared mode) Wyoming's clients, who carry no key, get a session of their own (``wyoming``, empty
unless voices are put there), never a visitor's or the HTTP API's.

``--zeroconf`` announces the server on the local network (mDNS ``_wyoming._tcp``) so Home Assistant
discovers it; it needs the ``zeroconf`` package (``pip install 'omnivoice-onnx-studio[zeroconf]'``).

A server started from the command line (``omnivoice wyoming``, ``--wyoming-uri``) makes one request of its own
(``WyomingServer.warm_up``): whatever a process pays once (the ONNX Runtime sessions' first runs at a request's
shapes, the imports made on first use, the normaliser's grammars, the speech recogniser where ``--guard`` is on)
is paid then, not by the first client (issue 48, item 4: a fresh server's first request gave its first audio
after 27.9 s where the next took 2.5 s, on the tiny model at load 10).  ``omnivoice wyoming`` loads its model
first and warms up before it listens.  Beside the app and ``omnivoice serve`` the model loads in the background
and the server listens at once (it never holds up their start): it subscribes to the ``ModelManager``
(``on_active``) and warms up as soon as a model becomes the active one, the first load's and every later one's
(the Model tab, or its Gradio API, loading or choosing another model; an engine it has warmed up already is
not warmed again).  A client's request that comes while the warm-up runs is served as any other: it goes into the same
queue, behind the warm-up's one job where the queue runs one generation at a time (the default), so it is not
refused and not held apart, and it gets its audio no later than it would by waiting for the warm-up.  Stopping
the server cancels a warm-up in flight (its job leaves the queue).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import functools
import logging
import socket
import threading
import time
import weakref
from typing import Callable, Optional
from urllib.parse import urlparse

from wyoming.audio import AudioStop
from wyoming.error import Error
from wyoming.event import async_read_event, async_write_event
from wyoming.server import AsyncServer
from wyoming.tts import Synthesize

from ..text.lexicon import lexicon_argument
from ..studio.service import add_queue_arguments
from ..settings.presets import (ALIASES, PRESETS, QUICK_START_SECONDS, VOICE_ASSISTANT_PRESET,
                                canonical_preset)
from .handler import SpeechHandler, WyomingContext

log = logging.getLogger(__name__)

DEFAULT_URI = "tcp://127.0.0.1:10200"
#: the voice library's session of Wyoming clients when voices are kept per session (shared mode)
WYOMING_SESSION = "wyoming"
ZEROCONF_INSTALL = "pip install 'omnivoice-onnx-studio[zeroconf]'"
#: the warm-up's request (``WyomingServer.warm_up``): two sentences with numbers, so that reading numbers as
#: words, reading the later sentences ahead, sentence streaming and the codec all run once
WARM_UP_TEXT = "It is 10:30 on 3 May. The server is ready."
#: the warm-up's preset: the same path as every request's with fewer steps (Wyoming has no steps field)
WARM_UP_PRESET = "fast"
#: the most a warm-up may take; past it the server listens all the same (its first request pays the rest)
WARM_UP_SECONDS = 600.0


def make_context(models, voices, service, redact: Callable[[str], str] = str, guard: bool = False,
                 lexicon=None, preset: str = VOICE_ASSISTANT_PRESET,
                 quick_start: float = QUICK_START_SECONDS) -> WyomingContext:
    return WyomingContext(models=models, voices=voices, service=service, redact=redact,
                          session=WYOMING_SESSION if getattr(voices, "private", False) else None, guard=guard,
                          lexicon=lexicon, preset=canonical_preset(preset), quick_start=quick_start)


def _preset_argument(group, flag: str, quick_flag: str) -> None:
    group.add_argument(flag, dest="wyoming_preset", choices=[*PRESETS, *ALIASES], default=VOICE_ASSISTANT_PRESET,
                       type=str.lower, metavar="PRESET",
                       help=f"the speed preset of every Wyoming request ({', '.join(PRESETS)}; default "
                            f"{VOICE_ASSISTANT_PRESET}, a voice assistant's: Home Assistant sends no setting of its "
                            "own; reference: the model's exact 32 steps, slower; docs/home-assistant.md)")
    group.add_argument(quick_flag, dest="wyoming_quick_start", type=_quick_seconds, default=QUICK_START_SECONDS,
                       metavar="SECONDS",
                       help=f"the first audio chunk's seconds of speech: a clause or a few words (default "
                            f"{QUICK_START_SECONDS:g}), so a reply starts sooner; 0: the first sentence, as the "
                            "HTTP API's sentence streaming")


def _quick_seconds(text: str) -> float:
    """``--quick-start``'s value, checked as the setting is (0 to 10 seconds)."""
    from ..errors import InvalidInput
    from ..settings.generation import GenerationConfig

    try:
        return GenerationConfig.from_mapping({"quick_start": text}).validate().quick_start
    except InvalidInput as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _guard_argument(group, flag: str) -> None:
    group.add_argument(flag, dest="wyoming_guard", action="store_true",
                       help="check each sentence: transcribe it and generate it again when it fails (the speech "
                            "recogniser must be cached or downloadable; each sentence is sent once checked)")


def check_uri(uri: str) -> str:
    """``uri`` when the wyoming library can listen on it; ``SystemExit`` with one line otherwise."""
    parsed = urlparse(uri)
    try:
        AsyncServer.from_uri(uri)
        port_ok = parsed.scheme != "tcp" or parsed.port is not None
    except ValueError:
        port_ok = False
    if not port_ok or parsed.scheme not in ("tcp", "unix"):
        raise SystemExit(f"error: the Wyoming address {uri!r} is not tcp://HOST:PORT or unix:///PATH "
                         f"(e.g. {DEFAULT_URI}; tcp://0.0.0.0:10200 for the whole network)")
    return uri


class WyomingServer:
    """The Wyoming server of a context at ``uri``; ``zeroconf``: the name to announce (None: none); ``warm_up``:
    make one request of its own for each model that becomes active (``warm_up``); ``warm_up_first``: for the
    model loaded at start, before listening (``omnivoice wyoming``), else after (beside another front end: its
    start is never held up)."""

    def __init__(self, uri: str, context: WyomingContext, zeroconf: Optional[str] = None, warm_up: bool = False,
                 warm_up_first: bool = True):
        self.uri, self.context, self.zeroconf = check_uri(uri), context, zeroconf
        self.warms_up, self.warms_up_first = warm_up, warm_up_first
        #: the last finished warm-up's seconds (None: none has finished)
        self.warm_up_seconds: Optional[float] = None
        #: the warm-up requests that finished (one per model made active, each engine once)
        self.warm_ups = 0
        self._warmed: "weakref.WeakSet" = weakref.WeakSet()   # the engines warmed up (gone with their model)
        self._warming = asyncio.Lock()                          # one warm-up at a time (bound to a loop on use)
        self._pending: set[asyncio.Task] = set()                 # warm-ups scheduled by a model made active
        self._unsubscribe: Optional[Callable[[], None]] = None
        self._stopping = False
        self._server: Optional[AsyncServer] = None
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._thread: Optional[threading.Thread] = None
        self._announcer = None

    async def warm_up(self, engine) -> Optional[float]:
        """One ``synthesize`` of ``WARM_UP_TEXT`` through a connection of our own (a socket pair to a
        ``SpeechHandler``, the path of every client's request, so one job in the same queue) at
        ``WARM_UP_PRESET``, read to its ``audio-stop``, for ``engine`` while it is the active model and was not
        warmed up before (one warm-up at a time: one in flight may have warmed it); its seconds, or None when
        none ran or it failed (logged: the server serves all the same, its first request then pays what the
        warm-up did not).  Bounded by ``WARM_UP_SECONDS``; cancelling it cancels its job."""
        async with self._warming:
            try:
                active = self.context.models.get().engine
            except Exception:  # noqa: BLE001 - unloaded meanwhile: nothing to warm up
                return None
            if active is not engine or engine in self._warmed or self._stopping:
                return None
            return await self._warm_up_request(engine)

    async def _warm_up_request(self, engine) -> Optional[float]:
        started = time.perf_counter()
        context = dataclasses.replace(self.context, preset=WARM_UP_PRESET)
        ours, theirs = socket.socketpair()
        try:
            reader, writer = await asyncio.open_connection(sock=ours)
            serving = asyncio.create_task(SpeechHandler(context, reader, writer).run())
            client_reader, client_writer = await asyncio.open_connection(sock=theirs)
            try:
                await asyncio.wait_for(self._read_warm_up(client_reader, client_writer), WARM_UP_SECONDS)
            except asyncio.CancelledError:   # the server stops: the handler's end cancels the job
                serving.cancel()
                raise
            finally:
                client_writer.close()
                with contextlib.suppress(asyncio.CancelledError):
                    await asyncio.wait_for(serving, WARM_UP_SECONDS)
        except Exception as exc:  # noqa: BLE001 - a warm-up never stops a server from serving
            log.warning("Wyoming warm-up request failed (%s: %s); the first request pays its one-off costs",
                        type(exc).__name__, self.context.redact(str(exc))[:300])
            return None
        finally:
            ours.close()
            theirs.close()
        self._warmed.add(engine)
        self.warm_ups += 1
        self.warm_up_seconds = time.perf_counter() - started
        log.info("Wyoming server warmed up in %.1f s (one request of its own)", self.warm_up_seconds)
        return self.warm_up_seconds

    @staticmethod
    async def _read_warm_up(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await async_write_event(Synthesize(text=WARM_UP_TEXT).event(), writer)
        while True:
            event = await async_read_event(reader)
            if event is None:
                raise ConnectionError("the warm-up's connection closed before its audio-stop")
            if Error.is_type(event.type):
                raise RuntimeError(Error.from_event(event).text)
            if AudioStop.is_type(event.type):
                return

    def _model_made_active(self, loaded) -> None:
        """``ModelManager.on_active``'s callback, on the loader's thread: hand the warm-up to our event loop."""
        loop = self._loop
        if loop is None or self._stopping:
            return
        with contextlib.suppress(RuntimeError):   # the loop closed meanwhile: the server has stopped
            loop.call_soon_threadsafe(self._schedule_warm_up, loaded.engine)

    def _schedule_warm_up(self, engine) -> None:
        if self._stopping or engine in self._warmed:
            return
        task = asyncio.get_running_loop().create_task(self.warm_up(engine), name="omnivoice wyoming warm-up")
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    async def start(self) -> None:
        """Warm up when asked (before listening with ``warm_up_first``, else after), then listen (the port is open
        when this returns) and announce when asked.  With ``warm_up`` each model made active later (the first
        one's background load, another model loaded or chosen) is warmed up as soon as it is."""
        self._loop = asyncio.get_running_loop()
        self._stopping = False
        try:
            await self._warm_up_and_listen()
        except BaseException:   # no subscription, warm-up or socket is left behind by a start that failed
            with contextlib.suppress(Exception):
                await self.stop()
            raise
        log.info("Wyoming server (Home Assistant) listening on %s", self.uri)

    async def _warm_up_and_listen(self) -> None:
        if self.warms_up:
            self._unsubscribe = self.context.models.on_active(self._model_made_active)
            try:
                engine = self.context.models.get().engine
            except Exception:  # noqa: BLE001 - no model yet: the subscription warms up once one is ready
                log.info("Wyoming server: no model loaded yet; it warms up once the model is ready")
            else:
                if self.warms_up_first:
                    await self.warm_up(engine)
                else:
                    self._schedule_warm_up(engine)
        self._server = AsyncServer.from_uri(self.uri)
        await self._server.start(functools.partial(SpeechHandler, self.context))
        if self.zeroconf is not None:
            await self._announce()

    async def stop(self) -> None:
        """Stop listening and warming up: the model's subscription ends, a warm-up in flight is cancelled."""
        self._stopping = True
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        for task in list(self._pending):   # a warm-up in flight: its job leaves the queue
            task.cancel()
        if self._pending:
            await asyncio.gather(*self._pending, return_exceptions=True)
        if self._announcer is not None:
            await self._announcer._aiozc.async_close()   # the library's announcer keeps its AsyncZeroconf there
            self._announcer = None
        if self._server is not None:
            await self._server.stop()

    async def serve_forever(self) -> None:
        await self.start()
        try:
            await asyncio.Event().wait()
        finally:
            await self.stop()

    # --- beside another front end ------------------------------------------------------------

    def start_in_thread(self, timeout: float = 30.0) -> "WyomingServer":
        """Run on a daemon thread with its own event loop; returns once listening (raises what start raised).
        ``timeout`` is the wait for listening; a warm-up has ``WARM_UP_SECONDS`` besides."""
        started = threading.Event()
        failure: list[BaseException] = []

        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            asyncio.set_event_loop(loop)
            try:
                loop.run_until_complete(self.start())
            except BaseException as exc:  # noqa: BLE001 - handed to the starting thread
                failure.append(exc)
                started.set()
                loop.close()
                return
            started.set()
            loop.run_forever()
            loop.run_until_complete(self.stop())
            loop.close()

        self._thread = threading.Thread(target=run, name="omnivoice-wyoming", daemon=True)
        self._thread.start()
        if not started.wait(timeout + (WARM_UP_SECONDS if self.warms_up and self.warms_up_first else 0.0)):
            raise RuntimeError(f"the Wyoming server did not start within {timeout:.0f} s")
        if failure:
            raise failure[0]
        return self

    def stop_thread(self, timeout: float = 10.0) -> None:
        if self._loop is not None and self._thread is not None and self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout)

    async def _announce(self) -> None:
        try:
            from wyoming.zeroconf import HomeAssistantZeroconf
        except ImportError:
            raise SystemExit(f"error: --zeroconf needs the zeroconf package: {ZEROCONF_INSTALL}") from None
        parsed = urlparse(self.uri)
        if parsed.scheme != "tcp":
            raise SystemExit("error: --zeroconf announces a tcp:// address; give --uri tcp://0.0.0.0:PORT")
        host = parsed.hostname if parsed.hostname not in ("0.0.0.0", "::", "") else None
        if host in ("127.0.0.1", "localhost", "::1"):
            log.warning("--zeroconf announces %s, which only this machine can reach; listen on tcp://0.0.0.0:%s "
                        "for Home Assistant on another machine", host, parsed.port)
        announcer = HomeAssistantZeroconf(port=parsed.port, name=self.zeroconf or None, host=host)
        self._announcer = announcer
        await announcer.register_server()
        log.info("announced on the local network as %s (_wyoming._tcp)", announcer.name)


# --- command line ----------------------------------------------------------------------------------

def _zeroconf_argument(group) -> None:
    group.add_argument("--zeroconf", nargs="?", const="", default=None, metavar="NAME",
                       help=f"announce the Wyoming server on the local network so Home Assistant discovers it "
                            f"(NAME: default this machine's address; needs {ZEROCONF_INSTALL})")


def wyoming_arguments(parser: argparse.ArgumentParser) -> None:
    """``--wyoming-uri`` and ``--zeroconf`` of the app and ``omnivoice serve``."""
    group = parser.add_argument_group("Wyoming (Home Assistant)")
    group.add_argument("--wyoming-uri", default=None, metavar="URI",
                       help="also serve the Wyoming protocol at URI (e.g. tcp://0.0.0.0:10200), with the same model "
                            "and queue (default: off)")
    _zeroconf_argument(group)
    _guard_argument(group, "--wyoming-guard")
    _preset_argument(group, "--wyoming-preset", "--wyoming-quick-start")


def start_beside(args: argparse.Namespace, models, voices, service, redact: Callable[[str], str] = str
                 ) -> Optional[WyomingServer]:
    """The Wyoming server of ``--wyoming-uri`` on its own thread (None without the flag), listening when this
    returns; it warms up after, whenever a model becomes active (the app's own start is not held up)."""
    if not getattr(args, "wyoming_uri", None):
        if getattr(args, "zeroconf", None) is not None:
            raise SystemExit("error: --zeroconf announces the Wyoming server: give --wyoming-uri too")
        return None
    server = WyomingServer(args.wyoming_uri, make_context(models, voices, service, redact,
                                                          getattr(args, "wyoming_guard", False),
                                                          getattr(args, "lexicon", None),
                                                          getattr(args, "wyoming_preset", VOICE_ASSISTANT_PRESET),
                                                          getattr(args, "wyoming_quick_start", QUICK_START_SECONDS)),
                           args.zeroconf, warm_up=True, warm_up_first=False)
    return server.start_in_thread()


def run_wyoming(args: argparse.Namespace) -> int:
    """``omnivoice wyoming``: the Wyoming server alone, the model loaded before the port opens."""
    from ..settings.limits import limits_from_arguments
    from ..studio import ModelManager
    from ..studio.service import service_from_arguments
    from ..studio.voice_store import store_from_arguments
    from ..studio.sharing import redact_paths
    from ..backbones.choice import backbone_settings

    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    check_uri(args.uri)
    models = ModelManager(provider=args.provider, threads=args.threads, cache_dir=args.model_cache,
                          offline=args.offline, limits=limits_from_arguments(args), locked=args.shared,
                          **backbone_settings(args))
    models.load(args.model, args.precision, args.provider, args.offline, args.build, args.force_download)
    voices = store_from_arguments(args, private=args.shared, max_variants=models.limits.max_voice_variants)

    def redact(text: str) -> str:
        return redact_paths(text, voices.private_paths() + [models.cache_dir]) if args.shared else text

    server = WyomingServer(args.uri, make_context(models, voices, service_from_arguments(args), redact,
                                                  args.wyoming_guard, args.lexicon, args.wyoming_preset,
                                                  args.wyoming_quick_start),
                           args.zeroconf, warm_up=True)
    try:
        asyncio.run(server.serve_forever())
    except KeyboardInterrupt:
        pass
    return 0


def add_wyoming_command(commands, add_model_arguments) -> None:
    """The ``wyoming`` subcommand of ``python -m omnivoice_demo`` (``add_model_arguments`` brings the limit flags)."""
    parser = commands.add_parser("wyoming", help="the Wyoming protocol server for Home Assistant (no UI)")
    add_model_arguments(parser)
    group = parser.add_argument_group("Wyoming (Home Assistant)")
    group.add_argument("--uri", default=DEFAULT_URI,
                       help=f"where to listen: tcp://HOST:PORT or unix:///PATH (default {DEFAULT_URI}: this machine "
                            "only; tcp://0.0.0.0:10200 for Home Assistant on another machine)")
    _zeroconf_argument(group)
    _guard_argument(group, "--guard")
    _preset_argument(group, "--preset", "--quick-start")
    group.add_argument("--shared", action="store_true",
                       help="a server for strangers: no server paths in messages, saved voices not offered")
    group.add_argument("--lexicon", default=None, metavar="FILE", type=lexicon_argument,
                       help="pronunciations for every request (TSV or JSON, docs/text.md)")
    add_queue_arguments(group)
    from ..studio.voice_store import add_voice_store_argument

    add_voice_store_argument(group)
    parser.set_defaults(run=run_wyoming)
