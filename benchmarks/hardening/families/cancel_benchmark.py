"""Family 2 of the hardening probe:
cancelling /benchmark."""

from __future__ import annotations

import contextlib
import time

import httpx

from ..probe import Probe
from ..server import Server
from ..visitor import gradio_client

FAMILY = 2
WHAT = "cancelling /benchmark"
#: run on the shared server (``run(probe, server)``)
SHARED = True


def run(probe: Probe, server: Server) -> None:
    def check() -> tuple[str, str]:
        benchmark = gradio_client(server)
        job = benchmark.submit(models="", length="long", num_step=64, repeats=10, api_name="/benchmark")
        time.sleep(4)
        job.cancel()
        cancelled = time.monotonic()
        after = gradio_client(server).submit(text="Next.", voice="", num_step=1, seed=1, api_name="/speak")
        try:
            after.result(timeout=60)
            waited = time.monotonic() - cancelled
        except Exception as exc:
            waited = None
            error = f"{type(exc).__name__}: {str(exc)[:120]}"
        queue = {}
        with contextlib.suppress(Exception):
            queue = httpx.get(server.url + "health", timeout=10).json().get("queue", {})
        extra = f"; steps after cancel {queue['steps_after_cancel']}" if "steps_after_cancel" in queue else ""
        if waited is None:
            return "broke", f"the next 1-step request did not finish within 60 s of the cancel ({error}){extra}"
        return ("held" if waited < 30 else "broke"), f"the next 1-step request finished {waited:.1f} s " \
            f"after the cancel{extra}"
    probe.guarded(server, 2, "cancel a /benchmark (long, 64 steps, 10 repeats) after 4 s, then /speak",
                 "the next 1-step request is answered within 30 s of the cancel (the benchmark stopped)", check)
