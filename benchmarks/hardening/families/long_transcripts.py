"""Family 1 of the hardening probe:
texts that enter the prompt (a long reference transcript)."""

from __future__ import annotations

import re

from ..probe import Probe
from ..server import PeakRSS, Server
from ..visitor import clear_4xx, create_voice, gradio_client, gradio_error, short, speak

FAMILY = 1
WHAT = "texts that enter the prompt (a long reference transcript)"
#: run on the shared server (``run(probe, server)``)
SHARED = True


def run(probe: Probe, server: Server) -> None:
    for words in (500, 2000, 4000):
        transcript = " ".join(["word"] * words)
        name = f"Long{words}"
        criterion = (f"a {words}-word transcript (over max_text_chars, 2,000) is refused with a 4xx naming "
                     "the limit, at voice creation or at speech, before the work")

        def check(words=words, name=name, transcript=transcript):
            with server.http(timeout=300) as client, PeakRSS(server) as rss:
                created = create_voice(client, name, probe.wav, transcript)
                if created.status_code == 201:
                    spoken = speak(client, name, "Hi.")
                    client.delete(f"v1/audio/voices/{name}")
            if created.status_code != 201:
                held = clear_4xx(created, r"transcript|limit|max_|token")
                return ("held" if held else "broke"), f"create {short(created)}; {rss}"
            held = clear_4xx(spoken, r"transcript|limit|max_|token")
            return ("held" if held else "broke"), f"create 201, speech {short(spoken)}; {rss}"
        probe.guarded(server, 1, f"HTTP voice + speech, {words}-word transcript", criterion, check)

    def clone() -> tuple[str, str]:
        from gradio_client import handle_file

        clip = probe.work / "clip.wav"
        clip.write_bytes(probe.wav)
        client = gradio_client(server)
        with PeakRSS(server) as rss:
            result, error = gradio_error(lambda: client.predict(
                reference=handle_file(str(clip)), transcript=" ".join(["word"] * 2000), text="Hi.",
                consent=True, num_step=1, api_name="/clone"))
        if result is not None:
            return "broke", f"answered with audio; {rss}"
        held = re.search(r"transcript|limit|max_|token", error, re.I) and "internal" not in error.lower()
        return ("held" if held else "broke"), f"{error[:200]}; {rss}"
    probe.guarded(server, 1, "Gradio /clone without a key, 2,000-word transcript",
                 "refused with a message naming the limit, no audio", clone)
