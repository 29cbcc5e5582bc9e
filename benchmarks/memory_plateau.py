"""What one long request leaves behind in a server's memory (issue 21 item 10): RSS before and after.

    python -m benchmarks.memory_plateau --model DIR [--arena shrink|keep] [--release yes|no] [--sentences 60]

Loads the engine, runs a short warm-up request, then one long request (``--sentences``
sentences, local limits) and a short one again, and prints the process's RSS after each.
``--arena keep`` is ONNX Runtime's default (the CPU arena keeps the largest request's
buffers for the session's lifetime: the plateau); ``shrink``, the engine's default, hands
the arena's unused memory back after every run (``runtime.sessions.run_options``).  Run each
mode in its own process: an arena's state is the process's.
"""

from __future__ import annotations

import argparse
import json
import resource
import time

import psutil


def rss_mb() -> float:
    return psutil.Process().memory_info().rss / 2**20


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.memory_plateau", description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--arena", choices=["shrink", "keep"], default="shrink")
    parser.add_argument("--sentences", type=int, default=60)
    parser.add_argument("--steps", type=int, default=1)
    parser.add_argument("--release", choices=["yes", "no"], default="yes",
                        help="bound the heap and give freed pages back after each request (memory.bound_heap, "
                             "release_free_memory), as the server's queue does (default yes; no: before issue 21)")
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args(argv)

    from omnivoice_demo.settings.limits import Limits
    from omnivoice_demo.engine.loop import OmniVoiceEngine
    from omnivoice_demo.runtime.memory import bound_heap, release_free_memory
    from omnivoice_demo.runtime.sessions import run_options

    def request(text: str):
        result = engine.generate(text, num_step=args.steps, seed=0)
        if args.release == "yes":
            release_free_memory()
        return result

    if args.release == "yes":
        bound_heap()  # as EngineService does
    engine = OmniVoiceEngine(args.model, threads=args.threads, verify="none", limits=Limits.local(),
                             calibrate=False, backbone="int4")  # the folder's backbone as built
    engine.model.run_options = engine.codec.run_options = run_options(shrink_arena=args.arena == "shrink")
    row = {"model": args.model, "arena": args.arena, "release": args.release, "loaded_mb": round(rss_mb())}
    request("Hello there.")
    row["after_warm_up_mb"] = round(rss_mb())
    text = " ".join(f"This is sentence number {n} of one long request that fills the prompt." for n in range(args.sentences))
    started = time.perf_counter()
    result = request(text)
    row["long_request_s"] = round(time.perf_counter() - started, 1)
    row["long_audio_s"] = round(len(result.audio) / result.sample_rate, 1)
    del result  # a server hands the audio to its client and forgets it
    row["after_long_mb"] = round(rss_mb())
    request("Hello there.")
    row["after_short_again_mb"] = round(rss_mb())
    row["plateau_mb"] = row["after_short_again_mb"] - row["after_warm_up_mb"]
    row["peak_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    print(json.dumps(row))
    return row


if __name__ == "__main__":
    main()
