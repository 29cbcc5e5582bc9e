"""Family 4 of the hardening probe:
disk: uploads without an event, chunked voice bodies, voices per owner."""

from __future__ import annotations

import time

import httpx

from ..probe import Probe
from ..server import KEY, MB, PeakRSS, Server
from ..visitor import chunked, clear_4xx, create_voice, folder_bytes, raw_post, short, speech_wav

FAMILY = 4
WHAT = "disk: uploads without an event, chunked voice bodies, voices per owner"
#: run on the shared server (``run(probe, server)``)
SHARED = True


def run(probe: Probe, server: Server) -> None:
    def uploads() -> tuple[str, str]:
        folder = probe.work / "shared" / "gradio"
        before, statuses, piece = folder_bytes(folder), [], b"\0" * (25 * MB)
        for index in range(10):  # 250 MB from one visitor, no event ever uses them
            response = httpx.post(server.url + "gradio_api/upload",
                                  files={"files": (f"u{index}.wav", piece)},
                                  headers={"X-Forwarded-For": "10.9.9.9"}, timeout=120)
            statuses.append(response.status_code)
            if response.status_code != 200:
                break
        kept = (folder_bytes(folder) - before) / MB
        refused = statuses[-1] == 413
        detail = f"statuses {statuses}; {kept:.0f} MB kept in the upload folder"
        return ("held" if refused and kept <= 225 else "broke"), detail
    probe.guarded(server, 4, "10 x 25 MB to /gradio_api/upload from one visitor, no event",
                 "refused (413) before one visitor keeps more than its quota (200 MB) + one file", uploads)

    def chunked_voice() -> tuple[str, str]:
        total = 100 * MB
        head = (b'--probe\r\nContent-Disposition: form-data; name="file"; filename="c.wav"\r\n'
                b"Content-Type: audio/wav\r\n\r\n")
        pieces = [head] + [b"\0" * (256 * 1024)] * (total // (256 * 1024)) + [b"\r\n--probe--\r\n"]
        with PeakRSS(server) as rss:
            answer = raw_post(server, "v1/audio/voices", {"Authorization": f"Bearer {KEY}",
                                                           "Content-Type": "multipart/form-data; boundary=probe",
                                                           "Transfer-Encoding": "chunked"}, chunked(pieces))
        held = answer["status"] == 413 and answer["sent"] < 60 * MB
        return ("held" if held else "broke"), \
            f"{answer['status']} after {answer['sent'] / MB:.0f} MB of 100 MB sent; {rss}"
    probe.guarded(server, 4, "a 100 MB chunked POST /v1/audio/voices, no Content-Length",
                 "413 before the server read much more than max_upload_bytes (25 MB): under 60 MB sent",
                 chunked_voice)

    def per_owner() -> tuple[str, str]:
        wav = speech_wav(1.0)
        made, last = [], None
        started = time.monotonic()
        with server.http() as client:
            for index in range(210):
                last = create_voice(client, f"Many{index}", wav)
                if last.status_code != 201:
                    break
                made.append(f"Many{index}")
            for name in made:
                client.delete(f"v1/audio/voices/{name}")
        seconds = time.monotonic() - started
        if last.status_code == 201:
            return "broke", f"{len(made)} voices made, none refused ({seconds:.0f} s)"
        held = clear_4xx(last, r"voices|limit|max_")
        return ("held" if held and len(made) <= 200 else "broke"), \
            f"refused after {len(made)}: {short(last)} ({seconds:.0f} s)"
    probe.guarded(server, 4, "210 voices through the keyed API",
                 "refused with a 4xx naming the cap (200 per owner) at or before the 201st", per_owner)
