"""Family 18 of the hardening probe:
launch on a busy machine: Gradio's 'is localhost accessible' check failing, its server slow to start."""

from __future__ import annotations

import functools
import os

from ..probe import Probe
from ..server import Server
from ..visitor import short, speak, tail

FAMILY = 18
WHAT = "launch on a busy machine: Gradio's 'is localhost accessible' check failing, its server slow to start"
#: starts its own servers (``run(probe)``)
SHARED = False


#: a sitecustomize that makes Gradio's "is localhost accessible" check fail, as it did on a busy machine
FAILING_LOCALHOST_CHECK = ("import gradio.networking\n"
                           "gradio.networking.url_ok = lambda url: False\n"
                           "print('probe: gradio.networking.url_ok fails', flush=True)\n")


#: a sitecustomize that makes every uvicorn server start 8 s late (a busy machine; Gradio waited 5 s)
SLOW_SERVER_START = ("import asyncio, uvicorn\n"
                     "_startup = uvicorn.Server.startup\n"
                     "async def _late(self, sockets=None):\n"
                     "    await asyncio.sleep(8)\n"
                     "    await _startup(self, sockets=sockets)\n"
                     "uvicorn.Server.startup = _late\n"
                     "print('probe: uvicorn starts 8 s late', flush=True)\n")


def run(probe: Probe) -> None:
    for name, fault, what in (
            ("failing-check", FAILING_LOCALHOST_CHECK, "gradio.networking.url_ok failing"),
            ("slow-start", SLOW_SERVER_START, "its server taking 8 s to start")):
        patch = probe.work / name
        patch.mkdir(parents=True, exist_ok=True)
        (patch / "sitecustomize.py").write_text(fault)
        args = [part for part in probe.shared_args if part not in ("--shared",)]
        server = Server(probe.repo, probe.python, probe.work / name, args, name,
                        env={"PYTHONPATH": f"{patch}{os.pathsep}{probe.repo}"})
        probe.guarded(None, 18, f"app.py with {what} (a busy machine)", "the app starts and serves",
                     functools.partial(starts_and_serves, server))


def starts_and_serves(server: "Server") -> tuple[str, str]:
    try:
        seconds = server.start()
    except (RuntimeError, TimeoutError) as exc:
        return "broke", tail(str(exc))
    try:
        with server.http() as client:
            spoken = speak(client)
        return ("held" if spoken.status_code == 200 else "broke"), \
            f"serving after {seconds:.1f} s; /v1/audio/speech {short(spoken)}"
    finally:
        server.stop()
