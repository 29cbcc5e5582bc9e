"""Latency benchmark: time to first audio, speed presets, and how well the engine's estimates hold.

    python benchmarks/latency.py --model /work/models/int4 --threads 2 [--cases short,five,clone,paragraph,long]
        [--json out.json] [--markdown out.md]

One engine (one model load, one warm-up) runs every case in one process, so the
ratios are measured within one run (wall seconds, and the process's CPU seconds,
which hold better on a shared machine).  For each run: the engine's estimate made
before it (as the app shows it), the measured total, the estimate's error, and
``time_to_first_audio_s`` (the first ``ChunkEvent``: the app starts playing).
The paragraph (six sentences, about 20 s of speech) runs as the Reference
preset without and with sentence streaming, and as the Fast preset; the
streamed run stops after its first chunk unless ``--stream-full`` (its first
audio is what it is for).  Cases:

* short: one short sentence (Reference preset);
* five: a fixed 5 s of speech (Reference);
* clone: 5 s of speech with a 5 s reference clip (Reference);
* paragraph: see above;
* long: about 40 s of speech, 3 chunks (the ``--long-preset``, default Fast: the
  Reference preset takes minutes on 2 cores);
* first: where the first chunk's time goes (issue 59, item 4): the reply of the issue ("The storm passed
  before midnight." then a longer sentence) at the ``--first-preset`` (default Fast) with sentence streaming,
  ``quick_start`` off and at each of ``--quick`` (seconds), taking turns ``--repeats`` times: the first
  audio of the streamed run, then the first chunk alone at its planned length (the same rows: prompt and
  target) with its stages (forwards of the backbone, heads, sampling, codec decode) and its rows;
* sixty: about 60 s of speech (the long text, then the paragraph) with and without
  sentence streaming (``--sixty-preset``, default Reference): first audio against
  the unstreamed total, past the reference's 30 s chunking threshold.

Every finished run also prints ``outside_backbone_share``: the share of its time
spent outside the backbone's forwards (embeddings, heads, sampling, codec decode,
post-processing), which issue 18 keeps under 15% of a Reference run.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import pathlib
import platform
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from omnivoice_demo import OmniVoiceEngine  # noqa: E402
from omnivoice_demo.settings.generation import GenerationConfig  # noqa: E402
from omnivoice_demo.eval.quick_bench import TEXTS  # noqa: E402

SHORT, FIVE, PARAGRAPH, LONG = (TEXTS[key] for key in ("short", "medium", "paragraph", "long"))
SIXTY = LONG + " " + PARAGRAPH
TRANSCRIPT = "This reference clip is five seconds of synthetic speech for the benchmark."


def reference_clip(seconds: float) -> tuple[np.ndarray, int]:
    """A speech-like clip: harmonics with vibrato under a syllable envelope."""
    sr = 24000
    t = np.arange(int(seconds * sr)) / sr
    phase = 2 * np.pi * np.cumsum(120 + 12 * np.sin(2 * np.pi * 5.5 * t)) / sr
    voiced = sum(np.sin(h * phase) / h for h in range(1, 9))
    return (0.2 * voiced * np.clip(np.sin(np.pi * 4.0 * t) ** 2 * 1.4 - 0.2, 0, 1)).astype(np.float32), sr


def timed_run(engine, label, text, config, voice=None, stop_after_first=False, instruct=None) -> dict:
    plan = engine.prepare(text, voice=voice, config=config, instruct=instruct)
    estimate = engine.estimate_seconds(plan)
    started, cpu_started = time.perf_counter(), time.process_time()
    first = first_cpu = result = None
    stream = engine.stream(text, voice=voice, config=config, instruct=instruct)
    for event in stream:
        if event.kind == "chunk" and first is None:
            first, first_cpu = time.perf_counter() - started, time.process_time() - cpu_started
            if stop_after_first:
                stream.close()
                break
        if event.kind == "result":
            result = event
    total = time.perf_counter() - started if result is not None else None
    cpu = time.process_time() - cpu_started if result is not None else None
    row = dict(case=label, preset=_preset_name(config), streaming=config.sentence_streaming,
               steps=config.num_step, guidance_every=config.guidance_every, chunks=len(plan.chunks),
               speech_s=round(plan.target_frames / 25, 2), estimate_s=estimate, total_s=total,
               time_to_first_audio_s=first, cpu_s=cpu, first_audio_cpu_s=first_cpu)
    if total is not None and estimate is not None:
        row["estimate_error_pct"] = 100.0 * (estimate - total) / total
    if result is not None:
        row["stages"] = {k: round(v, 3) for k, v in result.timings.items()}
        row["outside_backbone_share"] = round(1 - result.timings.get("backbone", 0.0) / result.timings["total"], 4)
    print(json.dumps(row), flush=True)
    return row


#: issue 59's reply: a short first sentence (2 s of speech), then a longer one
REPLY = "The storm passed before midnight. By morning the streets were quiet again and the sky was clear."


def first_chunk_rows(engine, text: str, config, quick_values, repeats: int) -> list[dict]:
    """The ``first`` case: per repeat, sentence streaming without and with each ``quick_start``, alternating; the
    voice is the front ends' default design (``alloy``), whose instruct is part of every conditional row."""
    from omnivoice_demo.studio.vocabulary import DESIGNS

    instruct = DESIGNS["alloy"]
    rows = []
    for repeat in range(repeats):
        for quick in [0.0, *quick_values]:
            streamed = config.replace(sentence_streaming=True, quick_start=quick)
            row = timed_run(engine, "first", text, streamed, stop_after_first=True, instruct=instruct)
            plan = engine.prepare(text, config=streamed, instruct=instruct)
            frames = engine._layout(plan)[0]
            alone = config.replace(duration=frames / 25)   # the first chunk alone, at its planned length
            cpu = time.process_time()
            result = engine.generate(plan.chunks[0], config=alone, instruct=instruct)
            cpu = time.process_time() - cpu
            prompt = engine.planner.prompt_tokens(dataclasses.replace(plan, chunks=[plan.chunks[0]]))
            row.update(repeat=repeat + 1, quick_start=quick, first_chunk=plan.chunks[0], first_frames=frames,
                       cond_rows=prompt + frames, uncond_rows=frames,
                       first_chunk_stages={k: round(v, 3) for k, v in result.timings.items()},
                       first_chunk_cpu_s=round(cpu, 3),
                       load_1min=round(os.getloadavg()[0], 2))
            row.pop("stages", None)
            print(json.dumps(dict(case="first-stages", **{k: row[k] for k in (
                "quick_start", "first_chunk", "first_frames", "cond_rows", "time_to_first_audio_s",
                "first_audio_cpu_s", "first_chunk_stages", "first_chunk_cpu_s", "load_1min")})), flush=True)
            rows.append(row)
    return rows


def _preset_name(config) -> str:
    from omnivoice_demo.settings.presets import matching_preset

    return matching_preset(config) or "custom"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--cases", default="short,five,clone,paragraph,long")
    parser.add_argument("--long-preset", default="fast")
    parser.add_argument("--sixty-preset", default="reference")
    parser.add_argument("--backbone", default="auto", help="the engine's backbone= (default auto, what users get)")
    parser.add_argument("--estimate-preset", default="reference", help="preset of the short, five and clone cases")
    parser.add_argument("--paragraph-steps", type=int, default=None,
                        help="steps of the paragraph's Reference runs (default: the preset's 32; fewer to fit a "
                             "busy machine: the first-audio ratio hardly depends on it)")
    parser.add_argument("--skip-fast", action="store_true", help="paragraph: no Fast preset run")
    parser.add_argument("--stream-full", action="store_true")
    parser.add_argument("--first-preset", default="fast", help="preset of the first case")
    parser.add_argument("--quick", default="0.8,1.2", help="the first case's quick_start seconds (comma-separated)")
    parser.add_argument("--repeats", type=int, default=2, help="turns of the first case")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)

    started = time.perf_counter()
    engine = OmniVoiceEngine(args.model, threads=args.threads, verify="size", backbone=args.backbone)
    load = time.perf_counter() - started
    cpu = subprocess.run("lscpu | grep -o -E 'avx512_vnni|avx2|amx_tile' | sort -u", shell=True,
                         capture_output=True, text=True).stdout.split()
    info = dict(model=args.model, profile=engine.profile, threads=args.threads, load_s=round(load, 2),
                warmup_s=round(engine.warmup_seconds, 2), backbone=engine.backbone_choice,
                cpu=platform.processor() or platform.machine(),
                cpu_flags=cpu, command=" ".join(sys.argv))
    print(json.dumps(info), flush=True)
    reference = GenerationConfig.preset(args.estimate_preset).replace(seed=args.seed)
    paragraph = GenerationConfig.preset("reference").replace(seed=args.seed)
    if args.paragraph_steps:
        paragraph = paragraph.replace(num_step=args.paragraph_steps)
    rows = []
    for case in args.cases.split(","):
        if case == "short":
            rows.append(timed_run(engine, "short", SHORT, reference))
        elif case == "five":
            rows.append(timed_run(engine, "five", FIVE, reference.replace(duration=5.0)))
        elif case == "clone":
            voice = engine.clone_voice(*reference_clip(5.0), TRANSCRIPT)
            rows.append(timed_run(engine, "clone", FIVE, reference.replace(duration=5.0), voice=voice))
        elif case == "paragraph":
            fast = GenerationConfig.preset("fast").replace(seed=args.seed)
            rows.append(timed_run(engine, "paragraph", PARAGRAPH, paragraph.replace(sentence_streaming=True),
                                  stop_after_first=not args.stream_full))
            if not args.skip_fast:
                rows.append(timed_run(engine, "paragraph", PARAGRAPH, fast))
            rows.append(timed_run(engine, "paragraph", PARAGRAPH, paragraph))
        elif case == "long":
            rows.append(timed_run(engine, "long", LONG, GenerationConfig.preset(args.long_preset)
                                  .replace(seed=args.seed)))
        elif case == "first":
            rows += first_chunk_rows(engine, REPLY, GenerationConfig.preset(args.first_preset).replace(seed=args.seed),
                                     [float(q) for q in args.quick.split(",") if q], args.repeats)
        elif case == "sixty":
            sixty = GenerationConfig.preset(args.sixty_preset).replace(seed=args.seed)
            rows.append(timed_run(engine, "sixty", SIXTY, sixty.replace(sentence_streaming=True),
                                  stop_after_first=not args.stream_full))
            rows.append(timed_run(engine, "sixty", SIXTY, sixty))
    summary = summarise(rows)
    print(json.dumps(summary), flush=True)
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(dict(info=info, rows=rows, summary=summary), indent=1))
    return 0


def summarise(rows: list[dict]) -> dict:
    """The issue's ratios, from the paragraph rows of this run."""
    para = {("reference" if r["guidance_every"] == 1 and r["preset"] != "balanced" else r["preset"], r["streaming"]): r
            for r in rows if r["case"] == "paragraph"}
    out = {}
    plain, streamed, fast = para.get(("reference", False)), para.get(("reference", True)), para.get(("fast", False))
    if plain and streamed and plain["total_s"]:
        out["first_audio_streaming_over_total_without"] = streamed["time_to_first_audio_s"] / plain["total_s"]
        out["same_in_cpu_seconds"] = streamed["first_audio_cpu_s"] / plain["cpu_s"]
    sixty = {r["streaming"]: r for r in rows if r["case"] == "sixty"}
    if len(sixty) == 2 and sixty[False]["total_s"]:
        out["sixty_first_audio_streaming_over_total_without"] = (sixty[True]["time_to_first_audio_s"]
                                                                 / sixty[False]["total_s"])
    if plain and fast and plain["total_s"]:
        out["fast_over_reference_total"] = fast["total_s"] / plain["total_s"]
        out["same_in_cpu_seconds_fast"] = fast["cpu_s"] / plain["cpu_s"]
    return out


if __name__ == "__main__":
    raise SystemExit(main())
