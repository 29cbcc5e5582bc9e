"""Family 29 of the hardening probe:
echoed input, and whitespace in the planned length."""

from __future__ import annotations

import httpx

from ..probe import Probe
from ..server import Server
from ..visitor import clear_4xx, create_voice, gradio_call, names_of, short, speak

FAMILY = 29
WHAT = "echoed input, and whitespace in the planned length"
#: run on the shared server (``run(probe, server)``)
SHARED = True


def run(probe: Probe, server: Server) -> None:
    long_name = "N" * 100_000

    def small(response: httpx.Response, created_is_fine: bool = False) -> tuple[str, str]:  # or renamed
        answered = clear_4xx(response) or (created_is_fine and response.status_code in (200, 201))
        held = answered and len(response.content) < 4096
        return ("held" if held else "broke"), f"{response.status_code}, {len(response.content):,} bytes"

    def speech() -> tuple[str, str]:
        with server.http() as client:
            return small(speak(client, long_name))

    def create() -> tuple[str, str]:  # the name may be cut to its first 60 characters, or refused
        with server.http() as client:
            response = create_voice(client, long_name, probe.wav)
            for name in names_of(client.get("v1/audio/voices")):
                client.delete(f"v1/audio/voices/{name}")
        return small(response, created_is_fine=True)

    def rename() -> tuple[str, str]:
        with server.http() as client:
            create_voice(client, "Echo", probe.wav)
            response = client.patch("v1/audio/voices/Echo", json={"name": long_name + "/"})
            for name in names_of(client.get("v1/audio/voices")):
                client.delete(f"v1/audio/voices/{name}")
        return small(response, created_is_fine=True)  # the new name may be cut to its first 60 characters
    for what, check in (("/v1/audio/speech voice", speech), ("/v1/audio/voices name", create),
                        ("PATCH /v1/audio/voices name", rename)):
        probe.guarded(server, 29, f"HTTP: a 100,000-character {what}",
                     "a 4xx (or, for a new name, 2xx with the name cut) whose body is under 4 KB", check)

    def gradio_echo() -> tuple[str, str]:
        event, data = gradio_call(server, "speak", text="Hello.", voice=long_name, num_step=1)
        held = event == "error" and len(data) < 4096 and "internal" not in data.lower()
        return ("held" if held else "broke"), f"{event}: {len(data):,} characters"
    probe.guarded(server, 29, "Gradio /speak: a 100,000-character voice",
                 "an error under 4 KB (the input cut to an excerpt)", gradio_echo)

    def whitespace() -> tuple[str, str]:
        with server.http(timeout=300) as client:
            response = speak(client, text="\n" * 1000 + "Hi.")
        seconds = float(response.headers.get("X-OmniVoice-Duration", "nan"))
        held = response.status_code == 200 and seconds < 5
        return ("held" if held else "broke"), f"{short(response)}; {seconds:.1f} s of audio"
    probe.guarded(server, 29, "HTTP: 1,000 newlines and 'Hi.'",
                 "planned from the text that is read: under 5 s of audio", whitespace)
