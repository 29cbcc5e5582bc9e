"""Family 5 of the hardening probe:
a large body to /v1/audio/speech."""

from __future__ import annotations

from ..probe import Probe
from ..server import KEY, MB, PeakRSS, Server
from ..visitor import framed, raw_post

FAMILY = 5
WHAT = "a large body to /v1/audio/speech"
#: run on the shared server (``run(probe, server)``)
SHARED = True


def run(probe: Probe, server: Server) -> None:
    total = 80 * MB
    head, tail = b'{"model": "omnivoice", "voice": "auto", "input": "', b'"}'
    pieces = [head] + [b"a" * MB] * (total // MB) + [tail]
    size = sum(len(p) for p in pieces)
    for form in ("Content-Length", "chunked"):
        def check(form=form) -> tuple[str, str]:
            headers = {"Authorization": f"Bearer {KEY}", "Content-Type": "application/json"}
            body = framed(pieces, form, headers)
            with PeakRSS(server) as rss:
                answer = raw_post(server, "v1/audio/speech", headers, body)
            held = answer["status"] == 413 and rss.grew_mb < 40 and answer["sent"] < size
            return ("held" if held else "broke"), \
                f"{answer['status']} after {answer['sent'] / MB:.0f} MB sent, {answer['seconds']:.1f} s; {rss}"
        probe.guarded(server, 5, f"an 80 MB JSON body to /v1/audio/speech ({form})",
                     "413 before the body is read whole: the answer comes before its end and RSS grows < 40 MB",
                     check)
