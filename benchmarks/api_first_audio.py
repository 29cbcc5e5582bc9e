"""Time to the first audio byte against the total time of a streamed /v1/audio/speech request.

    python benchmarks/api_first_audio.py --model /work/models/int4 [--steps 32 | --preset fast] [--repeats 2] \
        [--unstreamed] [--compare]

Starts ``python -m omnivoice_demo serve`` on 127.0.0.1 (a free port), sends a
three-sentence text with ``stream_format: audio`` (PCM), and prints, per run, the
seconds to the first audio byte, to the last byte and their ratio (with
``--unstreamed`` also the same request without streaming, in the same run).  ``--compare`` sends, in turn in
each run, the stream as the server cuts it by default (a quick first chunk, ``quick_start``), plain sentence
streaming (``quick_start: 0``) and the reference's chunks (``sentence_streaming: false``), and prints each one's
first audio as a ratio to the default's.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import pathlib
import socket
import subprocess
import sys
import time

import httpx

TEXT = ("The weather is lovely today. We could walk along the river after lunch. "
        "Bring a coat in case it turns cold.")
ROOT = pathlib.Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def server_process(command: list[str]):
    """``command`` (a server of ``python -m omnivoice_demo``) running offline in the checkout, stopped on exit."""
    server = subprocess.Popen(command, cwd=ROOT, env=dict(os.environ, HF_HUB_OFFLINE="1"),
                              stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    try:
        yield server
    finally:
        server.terminate()
        server.wait(30)


def timed(url: str, body: dict) -> tuple[float, float, int, dict]:
    started = time.perf_counter()
    first, size = None, 0
    with httpx.stream("POST", url, json=body, timeout=900) as response:
        response.raise_for_status()
        for piece in response.iter_bytes():
            if piece and first is None:
                first = time.perf_counter() - started
            size += len(piece)
        headers = dict(response.headers)
    return first, time.perf_counter() - started, size, headers


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--steps", type=int, default=None, help="steps (default: the preset's, else 32)")
    parser.add_argument("--preset", default=None, help="reference, balanced or fast (sent as the request's preset)")
    parser.add_argument("--compare", action="store_true",
                        help="the default stream, quick_start 0 and sentence_streaming false, in turn")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--unstreamed", action="store_true", help="also time the request without streaming")
    args = parser.parse_args()
    port = free_port()
    command = [sys.executable, "-m", "omnivoice_demo", "serve", "--model", args.model, "--port", str(port)]
    if args.threads:
        command += ["--threads", str(args.threads)]
    base = f"http://127.0.0.1:{port}"
    with server_process(command) as server:
        deadline = time.monotonic() + 600
        while True:
            try:
                if httpx.get(base + "/health", timeout=2).json().get("model_loaded"):
                    break
            except httpx.HTTPError:
                pass
            if server.poll() is not None or time.monotonic() > deadline:
                raise SystemExit("the server did not start")
            time.sleep(1)
        body = {"model": "omnivoice", "input": TEXT, "voice": "alloy", "response_format": "pcm", "seed": 1}
        if args.preset:
            body["preset"] = args.preset
        if args.steps or not args.preset:
            body["steps"] = args.steps or 32
        timed(base + "/v1/audio/speech", dict(body, steps=2))  # warm-up
        print(f"text: {TEXT!r} ({len(TEXT)} characters), preset {args.preset or '-'}, steps {body.get('steps', '-')}",
              flush=True)
        kinds = {"default": {}}
        if args.compare:
            kinds.update({"quick_start 0": {"quick_start": 0}, "sentence_streaming false": {"sentence_streaming": False}})
        for run in range(args.repeats):
            firsts = {}
            for kind, extra in kinds.items():
                first, total, size, headers = timed(base + "/v1/audio/speech",
                                                    dict(body, stream_format="audio", **extra))
                firsts[kind] = first
                audio = size / 2 / 24000
                ratio = f", x default {first / firsts['default']:.2f}" if kind != "default" else ""
                print(f"run {run + 1} {kind}: streamed {headers.get('x-omnivoice-chunks')} chunks, first audio byte "
                      f"{first:.2f} s{ratio}, last {total:.2f} s (first/total {first / total:.2f}); {audio:.2f} s of "
                      "audio", flush=True)
            if args.unstreamed:
                _, whole, _, _ = timed(base + "/v1/audio/speech", body)
                print(f"  without streaming: {whole:.2f} s (first byte / unstreamed {firsts['default'] / whole:.2f})",
                      flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
