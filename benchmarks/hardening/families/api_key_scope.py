"""Family 17 of the hardening probe:
--api-key-scope all: routes without the key, login brute force, CORS of /v1."""

from __future__ import annotations

import time

import httpx

from ..probe import Probe
from ..server import Server, supported_flags

FAMILY = 17
WHAT = "--api-key-scope all: routes without the key, login brute force, CORS of /v1"
#: starts its own servers (``run(probe)``)
SHARED = False


#: Gradio's routes that answered without the key under --api-key-scope all (issue 26), and a few more
KEYED_ROUTES = [("POST", "gradio_api/cancel", {"session_hash": "x", "fn_index": 0, "event_id": "y"}),
                ("GET", "gradio_api/heartbeat/probe-session", None), ("GET", "openapi.json", None),
                ("GET", "gradio_api/app_id", None), ("GET", "gradio_api/startup-events", None),
                ("GET", "gradio_api/info", None), ("GET", "config", None), ("GET", "gradio_api/token", None),
                ("GET", "gradio_api/queue/data?session_hash=x", None), ("GET", "monitoring", None)]


def run(probe: Probe) -> None:
    have, missing = supported_flags(probe.repo, probe.python, ["--api-key-scope"])
    if missing:
        probe.notes.append("family 17: this checkout has no --api-key-scope")
        return
    server = Server(probe.repo, probe.python, probe.work / "scope-all", probe.shared_args + ["--api-key-scope", "all"],
                    "scope-all")
    server.start()
    try:
        for method, path, body in KEYED_ROUTES:
            def check(method=method, path=path, body=body) -> tuple[str, str]:
                with httpx.stream(method, server.url + path, json=body, timeout=30) as answer:  # heartbeat: endless
                    status = answer.status_code
                return ("held" if status in (401, 403) else "broke"), f"{status}"
            probe.guarded(server, 17, f"{method} /{path} without the key", "401 or 403", check)

        def brute_force() -> tuple[str, str]:
            answered, started = 0, time.monotonic()
            with httpx.Client(base_url=server.url, timeout=30) as client:
                while time.monotonic() - started < 6 and answered < 200:
                    client.post("login", data={"username": "x", "password": f"guess{answered}"})
                    answered += 1
            return ("held" if answered < 20 else "broke"), f"{answered} wrong passwords answered in 6 s"
        probe.guarded(server, 17, "wrong passwords on /login for 6 s, one client",
                     "slowed down: fewer than 20 answered (unthrottled: hundreds)", brute_force)
        for origin, host in (("https://evil.example", "studio.example"), ("http://localhost:3000", None)):
            def cors(origin=origin, host=host) -> tuple[str, str]:
                headers = {"Origin": origin, **({"Host": host} if host else {})}
                preflight = httpx.options(server.url + "v1/audio/speech", timeout=30, headers={
                    **headers, "Access-Control-Request-Method": "POST",
                    "Access-Control-Request-Headers": "authorization"})
                simple = httpx.get(server.url + "v1/models", timeout=30, headers=headers)
                reflected = [r for r in (preflight, simple) if r.headers.get("access-control-allow-origin") == origin
                             and r.headers.get("access-control-allow-credentials", "").lower() == "true"]
                return ("broke" if reflected else "held"), "; ".join(
                    f"{r.request.method} {r.status_code}: allow-origin {r.headers.get('access-control-allow-origin')}"
                    f", credentials {r.headers.get('access-control-allow-credentials')}" for r in (preflight, simple))
            probe.guarded(server, 17, f"CORS of /v1 from {origin}" + (f" (Host {host})" if host else ""),
                         "the origin is not reflected with Access-Control-Allow-Credentials: true", cors)
    finally:
        server.stop()
