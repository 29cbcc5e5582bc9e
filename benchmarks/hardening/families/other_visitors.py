"""Family 6 of the hardening probe:
shared mode: another visitor's outputs and voices."""

from __future__ import annotations

import json
import time
from typing import Callable

import httpx

from ..probe import Probe
from ..server import Server
from ..visitor import create_voice, gradio_client, gradio_error, short

FAMILY = 6
WHAT = "shared mode: another visitor's outputs and voices"
#: run on the shared server (``run(probe, server)``)
SHARED = True


def run(probe: Probe, server: Server) -> None:
    visitor_a = gradio_client(server)
    before = time.time()
    result = visitor_a.predict(text="Hello, this is mine.", voice="", num_step=1, seed=42, api_name="/speak")
    after = time.time()
    url = result[0]["url"] if isinstance(result[0], dict) else str(result[0])
    name = url.rsplit("/", 1)[-1]
    outputs = probe.work / "shared" / "data" / "outputs"
    health = httpx.get(server.url + "health", timeout=10).json()
    counter = int(health.get("queue", {}).get("submitted", health.get("jobs", 0)) or 0)

    def guess() -> tuple[str, str]:
        guesses = [f"omnivoice-{time.strftime('%Y%m%d-%H%M%S', time.localtime(t))}-speak-42-job{job}.wav"
                   for t in range(int(before) - 1, int(after) + 1) for job in range(max(counter - 2, 0), counter + 1)]
        with httpx.Client(timeout=30) as stranger:  # visitor B: no cookies, no session
            hits = [g for g in guesses if stranger.get(f"{server.url}gradio_api/file={outputs / g}").status_code
                    == 200]
        return ("broke" if hits else "held"), f"{len(hits)} of {len(guesses)} guesses fetched A's audio " \
            f"(the name A got: {name})"
    probe.guarded(server, 6, "B guesses A's output name from /health's job counter and the clock",
                 "no guess of at most 3 x (seconds + 2) names fetches A's file", guess)

    def exact(target: str) -> Callable[[], tuple[str, str]]:
        def check() -> tuple[str, str]:
            with httpx.Client(timeout=30) as stranger:
                response = stranger.get(target)
            got = response.status_code == 200 and response.content[:4] == b"RIFF"
            return ("broke" if got else "held"), f"B got {response.status_code}" + \
                (f", {len(response.content)} bytes of A's WAV" if got else "")
        return check
    probe.guarded(server, 6, "B fetches the exact URL A was given, without A's session",
                 "refused (403/404): outputs are served only to their owner", exact(url))
    probe.guarded(server, 6, "B fetches A's file by name in the outputs folder",
                 "refused (403/404)", exact(f"{server.url}gradio_api/file={outputs / name}"))

    def api_session() -> tuple[str, str]:
        with server.http() as client:
            made = create_voice(client, "KeyedProbe", probe.wav)
        listed, error = gradio_error(lambda: gradio_client(server, session_hash="api").predict(api_name="/voices"))
        text = json.dumps(listed) if listed is not None else error
        seen = "KeyedProbe" in text
        with server.http() as client:
            client.delete("v1/audio/voices/KeyedProbe")
        if made.status_code != 201:
            return "broke", f"the keyed voice was not created: {short(made)}"
        return ("broke" if seen else "held"), ("lists" if seen else "does not list") + \
            f" the keyed API's voice ({text[:120]})"
    probe.guarded(server, 6, "a Gradio client with session_hash='api' calls /voices",
                 "the voices made through the keyed HTTP API are not listed", api_session)
