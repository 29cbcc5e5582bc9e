"""What word timing (``word_timestamps``) adds to a Reference generation: the same sentence with it off and on.

    python benchmarks/word_timing_cost.py --model /work/models/full-int4 --asr DIR [--threads 2] [--rounds 2]

One sentence is generated in one process at the same seed, alternating rounds with word timing off and
on (Reference: 32 steps).  It prints each run's wall and CPU seconds, the engine's own ``align`` stage
(the alignment of the chunk: one encoder and one teacher-forced decoder pass of the recogniser), and the
ratio of on to off from the same run.  The recogniser is a Whisper folder (``python -m convert.whisper``;
random weights cost what trained ones cost: alignment reads the known text, so unlike transcription
its cost does not depend on what the weights say).
"""

from __future__ import annotations

import argparse
import statistics
import time

TEXT = "The weather is lovely today, so we could walk along the river after lunch."


def main() -> int:
    from guard_cost import recogniser_run_arguments  # beside this script (run as a script: its folder is on the path)

    args = recogniser_run_arguments(argparse.ArgumentParser()).parse_args()

    from omnivoice_demo.asr import SpeechRecognizer
    from omnivoice_demo.engine.loop import OmniVoiceEngine

    recognizer = SpeechRecognizer(args.asr, precision=args.asr_precision, threads=args.threads)
    engine = OmniVoiceEngine(args.model, threads=args.threads, verify="size", recognizer=recognizer)
    warm = engine.generate(TEXT, seed=1, num_step=2, word_timestamps=True)  # loads the alignment graph
    print(f"warm-up: {len(warm.words)} words, {warm.duration:.2f} s of audio")
    runs = {"off": [], "on": []}
    for _ in range(args.rounds):
        for name in ("off", "on"):
            started, cpu = time.perf_counter(), time.process_time()
            result = engine.generate(TEXT, seed=1, num_step=args.steps, word_timestamps=name == "on")
            wall, cpu = time.perf_counter() - started, time.process_time() - cpu
            align = result.timings.get("align", 0.0)
            runs[name].append((wall, cpu, align))
            print(f"{name:>3}: {wall:7.2f} s wall, {cpu:7.2f} s CPU, align {align:5.2f} s, "
                  f"{result.duration:.2f} s of audio")
    off = statistics.median(r[0] for r in runs["off"])
    on = statistics.median(r[0] for r in runs["on"])
    off_cpu = statistics.median(r[1] for r in runs["off"])
    on_cpu = statistics.median(r[1] for r in runs["on"])
    align = statistics.median(r[2] for r in runs["on"])
    print(f"median wall: off {off:.2f} s, on {on:.2f} s, ratio {on / off:.3f}; CPU: off {off_cpu:.2f} s, "
          f"on {on_cpu:.2f} s, ratio {on_cpu / off_cpu:.3f}; align stage {align:.2f} s = {align / off:.1%} of off")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
