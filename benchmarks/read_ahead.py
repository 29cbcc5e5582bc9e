"""How long a sentence-streamed request with numbers waits before its first step: all its sentences read first, or
the first one only (``prepare(..., read_ahead=True)``, engine/read_ahead.py; issue 42, item 4).

    python -m benchmarks.read_ahead --model /work/models/full-int4 --backbone int4 --threads 2 [--rounds 5]

Loads the engine (no calibration) and the English normaliser, then, in alternating rounds with the normaliser's
cache emptied each time, times for the six-sentence text of ``wyoming_first_audio --numbers``: the plan
(``prepare``: what the first step waits for), the first step's event (``run``), and with read-ahead the later
sentences' reading on its worker.  Prints each round and the medians, with the load average.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from typing import Optional

from benchmarks.wyoming_first_audio import NUMBERS
from omnivoice_demo.engine.loop import OmniVoiceEngine
from omnivoice_demo.engine.read_ahead import StreamedPlan
from omnivoice_demo.text import normalize
from omnivoice_demo.text.sentences import sentence_texts


def one_round(engine: OmniVoiceEngine, read_ahead: bool, steps: int) -> dict:
    normalize.read_as_words.cache_clear()  # the reading of numbers is cached there
    started = time.perf_counter()
    plan = engine.prepare(NUMBERS, language="en", normalize_text=True, sentence_streaming=True, num_step=steps,
                          seed=1, read_ahead=read_ahead)
    planned = time.perf_counter() - started
    events = engine.run(plan)
    try:
        next(event for event in events if event.kind == "step")
        first_step = time.perf_counter() - started
    finally:
        events.close()
    read = None
    if isinstance(plan, StreamedPlan):
        plan.complete()
        read = time.perf_counter() - started
    return {"plan": planned, "first step": first_step, "all read": read}


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--backbone", default="auto")
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=32)
    args = parser.parse_args(argv)
    engine = OmniVoiceEngine(args.model, threads=args.threads, verify="size", calibrate=False, backbone=args.backbone)
    normalize.build_normalizer("en")
    print(f"text: {len(NUMBERS)} characters, {len(sentence_texts(NUMBERS, 'en'))} sentences; threads "
          f"{args.threads or 'all'}; backbone {args.backbone}; load average {os.getloadavg()}", flush=True)
    results: dict[bool, list[dict]] = {False: [], True: []}
    for number in range(args.rounds):
        for read_ahead in (False, True) if number % 2 == 0 else (True, False):
            figures = one_round(engine, read_ahead, args.steps)
            results[read_ahead].append(figures)
            shown = ", ".join(f"{name} {seconds:.3f} s" for name, seconds in figures.items() if seconds is not None)
            print(f"round {number + 1}, {'read ahead' if read_ahead else 'all read first'}: {shown}", flush=True)
    for read_ahead, rounds in results.items():
        medians = {name: statistics.median(r[name] for r in rounds) for name in rounds[0] if rounds[0][name] is not None}
        print(f"median, {'read ahead' if read_ahead else 'all read first'}: "
              + ", ".join(f"{name} {seconds:.3f} s" for name, seconds in medians.items()), flush=True)
    print(f"load average {os.getloadavg()}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
