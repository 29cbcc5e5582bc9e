"""Family 33 of the hardening probe:
response headers that grow with user input (60 words of Hangul in instructions)."""

from __future__ import annotations

from ..probe import Probe
from ..server import Server

FAMILY = 33
WHAT = "headers that grow with user input: 60 words of Hangul in instructions"
#: run on the shared server (``run(probe, server)``)
SHARED = True

#: the most characters one X-OmniVoice-* response header may hold; the whole value is at the details route
HEADER_CAP = 1024
HANGUL_WORD = "안녕하세요여러분"
HANGUL = " ".join([HANGUL_WORD] * 60)


def run(probe: Probe, server: Server) -> None:
    def hangul() -> tuple[str, str]:
        with server.http() as client:
            response = client.post("v1/audio/speech", json={"input": "Hello.", "voice": "coral", "steps": 1,
                                                            "instructions": HANGUL, "stream": False})
            sizes = {k: len(v) for k, v in response.headers.items() if k.startswith("x-omnivoice-")}
            details = response.headers.get("x-omnivoice-details")
            whole = client.get(details.lstrip("/")).json().get("headers", {}) if details else {}
        largest = max(sizes.values(), default=0)
        held = (response.status_code == 200 and largest <= HEADER_CAP
                and whole.get("X-OmniVoice-Ignored", "").count(HANGUL_WORD) == 60)
        return ("held" if held else "broke"), f"{response.status_code}; largest header {largest}"

    probe.guarded(server, FAMILY, "60 words of Hangul in instructions",
                  "every X-OmniVoice header <= 1 KB; the whole value at the details route", hangul)
