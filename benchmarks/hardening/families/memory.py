"""Family 10 of the hardening probe:
memory of a long-running server."""

from __future__ import annotations

import time

from ..probe import Probe
from ..server import MB, PeakRSS, Server
from ..visitor import create_voice, short, speak, speech_wav

FAMILY = 10
WHAT = "memory of a long-running server"
#: run on the shared server (``run(probe, server)``)
SHARED = True


def run(probe: Probe, server: Server) -> None:
    wav = speech_wav(1.0)
    with server.http() as client:
        requests = [lambda: speak(client, text="Soak test."), lambda: client.get("health"),
                    lambda: speak(client, "alloy", "A designed voice.", 2), lambda: client.get("v1/models"),
                    lambda: client.post("v1/audio/speech", content=b"{not json",
                                        headers={"Content-Type": "application/json"}),
                    lambda: create_voice(client, "Soak", wav), lambda: client.get("v1/audio/voices"),
                    lambda: client.delete("v1/audio/voices/Soak")]

        def mixed() -> tuple[str, str]:
            for request in requests * 2:  # warm-up: each kind twice
                request()
            before = server.rss()
            for index in range(40):
                requests[index % len(requests)]()
            grew = (server.rss() - before) / MB
            return ("held" if grew < 150 else "broke"), f"RSS {before / MB:.0f} MB -> {server.rss() / MB:.0f} MB " \
                f"(+{grew:.0f} MB) over 40 mixed requests"
        probe.guarded(server, 10, "40 mixed ordinary requests after warm-up",
                     "RSS grows by less than 150 MB (the soak test's bound)", mixed)

        def long_one() -> tuple[str, str]:
            text = " ".join(f"Sentence {n} of the longest text this server takes." for n in range(60))[:1990]
            speak(client, text="Hello there.")
            before = server.rss()
            with PeakRSS(server) as rss:
                response = speak(client, text=text)
            time.sleep(2)  # the queue goes idle and hands memory back
            speak(client, text="Hello there.")
            kept = (server.rss() - before) / MB
            return ("held" if kept < 40 and response.status_code == 200 else "broke"), \
                f"{short(response) if response.status_code != 200 else '200'}; peak +{rss.grew_mb:.0f} MB, " \
                f"+{kept:.0f} MB kept after the next request"
        probe.guarded(server, 10, "one long request (1,990 characters, 1 step)",
                     "what it held is handed back: RSS after the next request within 40 MB of before", long_one)

    grew = (server.rss() - probe.start_rss) / MB
    probe.add(10, f"the shared server over the probe's run (families {', '.join(map(str, probe.shared_ran))})",
             "RSS grows by less than 150 MB from warm-up to here", "held" if grew < 150 else "broke",
             f"RSS {probe.start_rss / MB:.0f} MB -> {server.rss() / MB:.0f} MB (+{grew:.0f} MB)")
