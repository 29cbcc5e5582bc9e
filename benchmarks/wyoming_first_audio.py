"""Time to the first audio chunk against the total time of a Wyoming ``synthesize`` (Home Assistant's way in).

    python -m benchmarks.wyoming_first_audio --model /work/models/full-int4 --threads 2 [--repeats 1]

Starts ``python -m omnivoice_demo wyoming`` on 127.0.0.1 (a free port), sends the three-sentence text
of ``api_first_audio`` with the ``wyoming`` library's client (voice ``alloy``, seed 1, the server's
default 32 steps) and prints, per run, the seconds to the first ``audio-chunk``, to ``audio-stop`` and
their ratio.
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import time

from wyoming.client import AsyncTcpClient
from wyoming.info import Describe
from wyoming.tts import Synthesize, SynthesizeVoice

from benchmarks.api_first_audio import TEXT, free_port, server_process


async def timed(port: int) -> tuple[float, float, int]:
    async with AsyncTcpClient("127.0.0.1", port) as client:
        event = Synthesize(text=TEXT, voice=SynthesizeVoice(name="alloy")).event()
        event.data["seed"] = 1   # the server's documented extension
        started = time.perf_counter()
        await client.write_event(event)
        first, size = None, 0
        while True:
            event = await client.read_event()
            if event is None or event.type == "error":
                raise SystemExit(f"the server answered {event}")
            if event.type == "audio-chunk":
                first = first if first is not None else time.perf_counter() - started
                size += len(event.payload or b"")
            if event.type == "audio-stop":
                return first, time.perf_counter() - started, size


async def wait_serving(port: int, server: subprocess.Popen, seconds: float = 900) -> None:
    deadline = time.monotonic() + seconds
    while True:
        try:
            async with AsyncTcpClient("127.0.0.1", port) as client:
                await client.write_event(Describe().event())
                if await client.read_event() is not None:
                    return
        except OSError:
            pass
        if server.poll() is not None or time.monotonic() > deadline:
            raise SystemExit("the server did not start")
        await asyncio.sleep(1)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args()
    port = free_port()
    command = [sys.executable, "-m", "omnivoice_demo", "wyoming", "--model", args.model,
               "--uri", f"tcp://127.0.0.1:{port}"] + (["--threads", str(args.threads)] if args.threads else [])
    with server_process(command) as server:
        asyncio.run(wait_serving(port, server))
        print(f"text: {TEXT!r} ({len(TEXT)} characters), 32 steps, threads {args.threads or 'all'}", flush=True)
        for run in range(args.repeats):
            first, total, size = asyncio.run(timed(port))
            print(f"run {run + 1}: first audio chunk {first:.2f} s, audio-stop {total:.2f} s (first/total "
                  f"{first / total:.2f}); {size / 2 / 24000:.2f} s of audio", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
