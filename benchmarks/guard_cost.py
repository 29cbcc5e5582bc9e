"""What the sentence check (``guard``) costs per sentence: unchecked, checked with no retry, checked with one retry.

    python benchmarks/guard_cost.py --model /work/models/full-int4 --asr DIR [--threads 2] [--rounds 2]

One sentence is generated in one process, alternating rounds of three configurations at the same seed:
``off`` (no check), ``check`` (``guard_tries=1``: one take, transcribed and scored) and ``retry``
(``guard_tries=2`` with a threshold no take passes: two takes, each transcribed).  A random-weight
recogniser never transcribes the text, so ``retry`` always makes its second take.  It prints each run's
seconds, the medians, the ratios to ``off`` from the same run, and the recogniser's own seconds per take
with the tokens it decoded (a random recogniser may decode up to its token limit, 448, where a trained one
stops after the sentence's twenty or so tokens: ``--max-tokens 24`` models that; without it the
figure is an upper bound).
"""

from __future__ import annotations

import argparse
import statistics
import time

TEXT = "The weather is lovely today, so we could walk along the river after lunch."


class Timed:
    """The recogniser with each call's seconds and decoded tokens recorded."""

    def __init__(self, recognizer):
        self.recognizer, self.calls = recognizer, []

    def transcribe(self, audio, sample_rate, language=None):
        started, cpu = time.perf_counter(), time.process_time()
        out = self.recognizer.transcribe(audio, sample_rate, language=language)
        self.calls.append((time.perf_counter() - started, time.process_time() - cpu, sum(len(t) for t in out.tokens)))
        return out


def recogniser_run_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The arguments of a benchmark that runs the engine with a recogniser (this one, word_timing_cost.py)."""
    parser.add_argument("--model", required=True)
    parser.add_argument("--asr", required=True, help="a Whisper folder (python -m convert.whisper)")
    parser.add_argument("--asr-precision", default="int8")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--steps", type=int, default=32)
    return parser


def main() -> int:
    parser = recogniser_run_arguments(argparse.ArgumentParser())
    parser.add_argument("--max-tokens", type=int, default=None,
                        help="cap the recogniser's tokens per take (a random recogniser never ends by itself; a "
                             "trained one ends after the sentence, about 20 tokens): models a trained one's cost")
    args = parser.parse_args()

    from omnivoice_demo.asr import SpeechRecognizer
    from omnivoice_demo.engine.loop import OmniVoiceEngine

    recognizer = Timed(SpeechRecognizer(args.asr, precision=args.asr_precision, threads=args.threads))
    if args.max_tokens:
        recognizer.recognizer.max_length = args.max_tokens
    engine = OmniVoiceEngine(args.model, threads=args.threads, verify="size", recognizer=recognizer)
    configs = {"off": dict(guard=False), "check": dict(guard=True, guard_tries=1),
               "retry": dict(guard=True, guard_tries=2, guard_cer=0.0)}
    engine.generate(TEXT, seed=1, num_step=args.steps)  # warm-up
    recognizer.recognizer.transcribe(engine.generate(TEXT, seed=1, num_step=2).audio, 24000)
    recognizer.calls.clear()
    seconds: dict[str, list[float]] = {name: [] for name in configs}
    cpu: dict[str, list[float]] = {name: [] for name in configs}
    for round_ in range(args.rounds):
        for name, config in configs.items():
            started, cpu_started = time.perf_counter(), time.process_time()
            result = engine.generate(TEXT, seed=1, num_step=args.steps, **config)
            seconds[name].append(time.perf_counter() - started)
            cpu[name].append(time.process_time() - cpu_started)
            takes = [len(c.takes) for c in result.checks]
            print(f"round {round_ + 1} {name}: {seconds[name][-1]:.2f} s wall, {cpu[name][-1]:.2f} CPU s, "
                  f"{result.duration:.2f} s of audio, takes {takes or '-'}", flush=True)
    for name in configs:  # CPU seconds are the cost on a loaded machine, where wall time is mostly waiting
        wall, used = statistics.median(seconds[name]), statistics.median(cpu[name])
        print(f"{name}: median {wall:.2f} s wall ({wall / statistics.median(seconds['off']):.2f}x off), "
              f"{used:.2f} CPU s ({used / statistics.median(cpu['off']):.2f}x off) per sentence")
    wall, used, tokens = zip(*recognizer.calls)
    print(f"recogniser: {len(wall)} calls, median {statistics.median(wall):.2f} s wall, "
          f"{statistics.median(used):.2f} CPU s per take, tokens decoded per take {min(tokens)}-{max(tokens)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
