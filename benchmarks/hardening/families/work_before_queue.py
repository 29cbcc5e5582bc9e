"""Family 32 of the hardening probe:
work before the queue: twelve concurrent 599-digit texts (``normalize_text``) beside a small one."""

from __future__ import annotations

import concurrent.futures
import time

from ..probe import Probe
from ..server import PeakRSS, Server
from ..visitor import speak

FAMILY = 32
WHAT = "work before the queue: twelve 599-digit texts beside a small one"
#: run on the shared server (``run(probe, server)``)
SHARED = True


def run(probe: Probe, server: Server) -> None:
    def crowd() -> tuple[str, str]:
        with server.http() as client:
            started = time.monotonic()
            speak(client, text="Hello there.", normalize_text=True)
            alone = time.monotonic() - started
        with PeakRSS(server) as peak, concurrent.futures.ThreadPoolExecutor(13) as pool:
            def heavy() -> int:
                with server.http() as client:
                    return speak(client, text="7" * 599, normalize_text=True).status_code
            heavies = [pool.submit(heavy) for _ in range(12)]
            with server.http() as client:
                started = time.monotonic()
                small = speak(client, text="Hello there.", normalize_text=True)
                beside = time.monotonic() - started
            codes = [f.result() for f in heavies]
        held = small.status_code == 200 and all(code == 413 for code in codes)
        return ("held" if held else "broke"), (f"heavy: {sorted(set(codes))}; small {small.status_code} in "
                                               f"{beside:.2f} s beside them, {alone:.2f} s alone "
                                               f"({beside / max(alone, 1e-3):.1f}x); {peak}")

    probe.guarded(server, FAMILY, "12 concurrent 599-digit texts and a small one",
                  "the heavy ones 413 before normalising; the small one answered", crowd)
