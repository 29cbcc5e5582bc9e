"""Time to the first audio chunk against the total time of a Wyoming ``synthesize`` (Home Assistant's way in).

    python -m benchmarks.wyoming_first_audio --model /work/models/full-int4 --threads 2 [--repeats 1] [--numbers] \
        [--preset reference --quick-start 0]

Starts ``python -m omnivoice_demo wyoming`` on 127.0.0.1 (a free port), sends the three-sentence text
of ``api_first_audio`` (``--numbers``: six sentences with numbers, dates and money, read as words by the
server's default) with the ``wyoming`` library's client (voice ``alloy``, seed 1, the server's
preset and quick start: ``--preset`` and ``--quick-start``, by default the server's own: Fast with a 1.2 s quick
start since 2026-12-06; ``--preset reference --quick-start 0`` is the earlier default) and prints, per run, the seconds to the first ``audio-chunk``, to ``audio-stop`` and
their ratio.  The first run is the server's first request.
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

#: six sentences with numbers (issue 42, item 4: a server's first six-sentence request)
NUMBERS = ("On 3 May 2024 the team of 12 walked 5.5 km in 2 hours. It cost $45.50 for 3 people. "
           "The 2nd meeting is at 10:30 am on Friday. About 1,250 people came, or 35% of 3,600. "
           "Call 555-1234 before 6 pm. The score was 21 to 14 after 4 quarters.")


async def timed(port: int, text: str = TEXT) -> tuple[float, float, int]:
    async with AsyncTcpClient("127.0.0.1", port) as client:
        event = Synthesize(text=text, voice=SynthesizeVoice(name="alloy")).event()
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
    parser.add_argument("--numbers", action="store_true", help="six sentences with numbers instead")
    parser.add_argument("--preset", default=None, help="the server's --preset (default: the server's default)")
    parser.add_argument("--quick-start", default=None, help="the server's --quick-start (default: the server's)")
    args = parser.parse_args()
    text = NUMBERS if args.numbers else TEXT
    port = free_port()
    command = [sys.executable, "-m", "omnivoice_demo", "wyoming", "--model", args.model,
               "--uri", f"tcp://127.0.0.1:{port}"] + (["--preset", args.preset] if args.preset else []) + (
                   ["--quick-start", args.quick_start] if args.quick_start is not None else []) + (
                   ["--threads", str(args.threads)] if args.threads else [])
    with server_process(command) as server:
        asyncio.run(wait_serving(port, server))
        print(f"text: {text!r} ({len(text)} characters), preset {args.preset or 'default'}, quick start {args.quick_start or 'default'}, threads {args.threads or 'all'}",
              flush=True)
        for run in range(args.repeats):
            first, total, size = asyncio.run(timed(port, text))
            print(f"run {run + 1}: first audio chunk {first:.2f} s, audio-stop {total:.2f} s (first/total "
                  f"{first / total:.2f}); {size / 2 / 24000:.2f} s of audio", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
