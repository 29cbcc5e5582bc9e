"""Family 38 of the hardening probe (issue 49, items 9 and 11, and the 429's Retry-After):
wrong keys under forged X-Forwarded-For, what a busy answer says, and server paths in what a stranger gets."""

from __future__ import annotations

import json
import re
import time

import httpx

from ..probe import Probe
from ..server import KEY, Server, supported_flags
from ..visitor import gradio_error, short, speak

FAMILY = 38
WHAT = "strangers: wrong keys under forged X-Forwarded-For, a 429's Retry-After, server paths in results"
#: starts its own server, keyed on every route (``run(probe)``)
SHARED = False

#: what a server path looks like in an answer: the probe's work folder, or the system's temporary folder
SERVER_PATH = re.compile(r"/tmp/|/var/folders/|hardening-probe")


def run(probe: Probe) -> None:
    have, missing = supported_flags(probe.repo, probe.python, ["--api-key-scope"])
    args = probe.shared_args + (["--api-key-scope", "all"] if not missing else [])
    if "--api-key-scope" in probe.shared_args:   # the shared arguments say v1: this server guards every route
        index = args.index("--api-key-scope")
        args = args[:index] + args[index + 2:]
        args += ["--api-key-scope", "all"]
    server = Server(probe.repo, probe.python, probe.work / "strangers", args, "strangers")
    server.start()
    try:
        def speak_paths() -> tuple[str, str]:
            from gradio_client import Client

            client = Client(server.url, verbose=False, download_files=False, auth=("probe", KEY))
            result, error = gradio_error(lambda: client.predict("Hello there.", api_name="/speak"))
            if result is None:
                return "broke", error
            shown = json.dumps(result)
            audio = result[0] if isinstance(result, (list, tuple)) else result
            url = audio.get("url") if isinstance(audio, dict) else None
            fetched = httpx.get(url, cookies=client.cookies, timeout=60).status_code if url else 0
            paths = SERVER_PATH.findall(shown)
            held = not paths and fetched == 200
            return ("held" if held else "broke"), f"server paths {paths[:2]}; audio fetched {fetched}; {shown[:120]}"
        # first: the wrong keys below slow down every client of this address (the probe's), this one's login too
        probe.guarded(server, FAMILY, "/speak's result (gradio_client, shared mode)",
                      "no server path in the path or URL; the audio still fetched (was Gradio's temp folder)",
                      speak_paths)

        def v1_forged() -> tuple[str, str]:
            retries, started = [], time.monotonic()
            with httpx.Client(base_url=server.url, timeout=60) as client:
                for attempt in range(6):
                    answer = client.get("v1/models", headers={"Authorization": "Bearer wrong",
                                                               "X-Forwarded-For": f"198.51.100.{attempt + 1}"})
                    retries.append(answer.headers.get("retry-after", "-"))
            seconds = time.monotonic() - started
            held = seconds > 1.5 and retries[-1] not in ("-", "0")
            return ("held" if held else "broke"), f"Retry-After {retries}; {seconds:.1f} s for six"
        probe.guarded(server, FAMILY, "six wrong keys on /v1, each with a new X-Forwarded-For",
                      "the later ones wait (Retry-After grows; was six answered at once)", v1_forged)

        def login_forged() -> tuple[str, str]:
            started = time.monotonic()
            with httpx.Client(base_url=server.url, timeout=60) as client:
                for attempt in range(6):
                    client.post("login", data={"username": "x", "password": f"guess{attempt}"},
                                headers={"X-Forwarded-For": f"203.0.113.{attempt + 1}"})
            seconds = time.monotonic() - started
            return ("held" if seconds > 1.5 else "broke"), f"{seconds:.1f} s for six wrong passwords"
        probe.guarded(server, FAMILY, "six wrong passwords on /login, each with a new X-Forwarded-For",
                      "the later ones wait (> 1.5 s for six)", login_forged)

        def busy() -> tuple[str, str]:
            heavy = "This is a long sentence that the model will take a while to read out loud. " * 12
            with httpx.Client(base_url=server.url, timeout=120, headers={"Authorization": f"Bearer {KEY}"}) as client:
                streams = []
                try:
                    for _ in range(12):   # more than the queue takes (--max-running 1, --max-waiting 8)
                        request = client.build_request("POST", "v1/audio/speech", json={
                            "model": "omnivoice", "input": heavy, "voice": "auto", "steps": 32, "stream": True,
                            "response_format": "pcm"})
                        streams.append(client.send(request, stream=True))
                    refused = [s for s in streams if s.status_code == 429]
                    if not refused:
                        return "broke", f"no 429 among {[s.status_code for s in streams]}"
                    refused[0].read()
                    message = refused[0].json()["error"]["message"]
                    retry = refused[0].headers.get("retry-after")
                    said = re.search(r"in about (\d+) s", message)
                    agree = (said is not None and said.group(1) == retry) or (said is None and "shortly" in message)
                    return ("held" if agree and retry else "broke"), f"Retry-After {retry}; {message[:160]}"
                finally:
                    for stream in streams:
                        stream.close()   # the jobs are cancelled as their clients go
        probe.guarded(server, FAMILY, "a 429 with heavy requests in flight",
                      "Retry-After is the wait its message names (was 5 s beside about 1293 s)", busy)
        time.sleep(2)

        def after() -> tuple[str, str]:
            with server.http() as client:
                response = speak(client)
            return ("held" if response.status_code == 200 else "broke"), short(response)
        probe.guarded(server, FAMILY, "a small request after the busy ones went", "200", after)
    finally:
        server.stop()
