"""Family 8 of the hardening probe:
a model file truncated in place while serving."""

from __future__ import annotations

import contextlib
import shutil
import time

import httpx

from ..probe import Probe
from ..server import Server
from ..visitor import short, speak

FAMILY = 8
WHAT = "a model file truncated in place while serving"
#: starts its own servers (``run(probe)``)
SHARED = False


def run(probe: Probe) -> None:
    model = probe.work / "truncate" / "model"
    shutil.copytree(probe.model, model, dirs_exist_ok=True)
    args = [part for part in probe.shared_args if part not in ("--shared",)]
    args = [str(model) if part == str(probe.model) else part for part in args]
    server = Server(probe.repo, probe.python, probe.work / "truncate", args, "truncate")
    server.start()
    try:
        with server.http() as client:
            first = speak(client)
            data = model / "llm_decoder.onnx.data"
            with open(data, "r+b") as handle:  # in place: the same inode, as a careless copy does
                handle.truncate(data.stat().st_size // 2)
            after = None
            with contextlib.suppress(httpx.HTTPError):
                after = speak(client)
        time.sleep(1)
        alive = server.alive()
        health = None
        if alive:
            with contextlib.suppress(httpx.HTTPError, ValueError):
                health = httpx.get(server.url + "health", timeout=10).status_code
        if alive and health == 200:
            probe.add(8, "llm_decoder.onnx.data truncated to half in place, then a request",
                     "the server stays alive and answers /health", "held",
                     f"before {first.status_code}, after {short(after) if after else 'no answer'}; /health {health}")
        else:
            probe.add(8, "llm_decoder.onnx.data truncated to half in place, then a request",
                     "the server stays alive and answers /health", "crash",
                     f"exit {server.process.returncode}" if not alive else f"/health {health}")
        log = server.log_tail(20000)
        said = "llm_decoder.onnx.data" in log.split("--- start")[-1]
        probe.add(8, "the log after the truncation", "the log names the changed file", "held" if said else "broke",
                 "named" if said else "nothing in the log names llm_decoder.onnx.data")
    finally:
        server.stop()
