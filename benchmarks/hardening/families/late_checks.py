"""Family 34 of the hardening probe:
late checks: a reference clip over the limit is refused with 413."""

from __future__ import annotations

from ..probe import Probe
from ..server import Server
from ..visitor import create_voice, short, speech_wav

FAMILY = 34
WHAT = "late checks: a reference clip over the limit"
#: run on the shared server (``run(probe, server)``)
SHARED = True


def run(probe: Probe, server: Server) -> None:
    def long_clip() -> tuple[str, str]:
        with server.http() as client:
            response = create_voice(client, "LongClip", speech_wav(seconds=65.0))
        return ("held" if response.status_code == 413 else "broke"), short(response)

    probe.guarded(server, FAMILY, "a 65 s reference clip (limit 60 s)", "413 naming max_reference_seconds",
                  long_clip)
