"""Family 35 of the hardening probe:
a key that closes every door: the default scope (``--api-key`` alone), wrong keys on /v1, malformed Gradio API
data. It starts a server of its own without ``--api-key-scope`` (the shared server runs with ``v1``)."""

from __future__ import annotations

import httpx

from ..probe import Probe
from ..server import KEY, Server

FAMILY = 35
WHAT = "a key that closes every door: default scope, wrong keys on /v1, malformed Gradio data"
#: starts its own servers (``run(probe)``)
SHARED = False


def run(probe: Probe) -> None:
    server = Server(probe.repo, probe.python, probe.work / "key-default",
                    ["--model", str(probe.model), "--precision", "fp32", "--api-key", KEY], "key-default")
    server.start()
    try:
        def gradio_closed() -> tuple[str, str]:
            response = httpx.post(f"{server.url}gradio_api/run/models", json={"data": []}, timeout=60)
            return ("held" if response.status_code in (401, 403) else "broke"), f"{response.status_code}"

        def throttled() -> tuple[str, str]:
            answers = [httpx.get(f"{server.url}v1/models", headers={"Authorization": "Bearer wrong"}, timeout=60)
                       for _ in range(5)]
            retry = [a.headers.get("retry-after") for a in answers]
            held = all(a.status_code == 401 for a in answers) and retry[-1] not in (None, "0")
            return ("held" if held else "broke"), f"Retry-After {retry}"

        def malformed() -> tuple[str, str]:
            cookies = httpx.post(f"{server.url}login", data={"username": "x", "password": KEY}, timeout=60).cookies
            response = httpx.post(f"{server.url}gradio_api/run/voices", json={"data": "x"}, cookies=cookies,
                                  timeout=60)
            return ("held" if 400 <= response.status_code < 500 else "broke"), f"{response.status_code}"

        probe.guarded(server, FAMILY, "--api-key alone: the Gradio API without the key", "401 (scope all by default)",
                      gradio_closed)
        probe.guarded(server, FAMILY, "five wrong keys on /v1", "401s, the later ones with Retry-After", throttled)
        probe.guarded(server, FAMILY, "/gradio_api/run/voices with malformed data", "a 4xx", malformed)
    finally:
        server.stop()
