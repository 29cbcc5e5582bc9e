"""Cloning with the prompt's keys and values kept (``prompt_refresh``): the three targets, A/B in one process.

    OMNIVOICE_CACHE=/work/models/<branch>-cache python -m benchmarks.clone_speed \\
        --model /work/models/full-int4 --threads 2 [--rounds 2] [--backbone auto]

One engine; a 10 s reference clip is cloned once; then rounds alternate these runs of the same 5 s
sentence (``benchmarks.latency.FIVE``, ``duration=5``, seed 1), each printed as a JSON line with its
wall seconds, the engine's estimate made before it, and the load:

* ``clone exact``: 32 steps, ``prompt_refresh=1`` (the Reference preset, the reference's loop);
* ``clone refresh 4``: the same with ``prompt_refresh=4``;
* ``fast clone before``: the Fast preset's steps and guidance with ``prompt_refresh=1`` (Fast as it was);
* ``fast clone refresh K``: the same with ``prompt_refresh=K`` for each K of ``--fast-refresh`` (default 4,8);
* ``balanced design``: the Balanced preset without a voice;
* ``balanced clone refresh K``: the Balanced preset's steps with the voice, for each K of
  ``--balanced-refresh`` (default 4,8).

With ``--forwards N`` it times only the backbone: N alternating rounds of the clone's conditional row
whole (about 420 positions) and of its 125 target frames on the kept prompt, and prints their ratio:
the per-step saving, in a minute where the whole runs take many.

The last line gives each run's best wall seconds and the ratios with their targets: refresh 4 /
exact <= 0.65, each Fast clone / Fast clone before <= 0.6, each Balanced clone / Balanced design
<= 1.3, and which K the presets use.  The ratios come from the same run; report ``uptime`` beside
them (a shared machine).
"""

from __future__ import annotations

import argparse
import json
import os
import time

def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="a model folder")
    parser.add_argument("--backbone", default="auto")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=2, help="rounds of all the runs (alternating)")
    parser.add_argument("--fast-refresh", default="4,8")
    parser.add_argument("--balanced-refresh", default="4,8")
    parser.add_argument("--forwards", type=int, default=0, help="time only N rounds of the two forwards")
    args = parser.parse_args(argv)

    from benchmarks.latency import FIVE, reference_clip
    from benchmarks.prompt_refresh_fidelity import TRANSCRIPT_10S
    from omnivoice_demo.settings.generation import GenerationConfig
    from omnivoice_demo.engine.loop import OmniVoiceEngine

    engine = OmniVoiceEngine(args.model, threads=args.threads, verify="size", backbone=args.backbone)
    voice = engine.clone_voice(*reference_clip(10.0), TRANSCRIPT_10S)
    base = dict(seed=1, duration=5.0)
    if args.forwards:
        return forwards(engine, engine.prepare(FIVE, voice=voice, **base), args.forwards)
    reference, fast, balanced = (GenerationConfig.preset(name).replace(**base)
                                 for name in ("reference", "fast", "balanced"))
    runs = {"clone exact": (reference, voice), "clone refresh 4": (reference.replace(prompt_refresh=4), voice),
            "fast clone before": (fast.replace(prompt_refresh=1), voice)}
    targets = {"refresh 4 / exact": ("clone refresh 4", "clone exact", 0.65)}
    for k in (int(k) for k in args.fast_refresh.split(",")):
        runs[f"fast clone refresh {k}"] = (fast.replace(prompt_refresh=k), voice)
        targets[f"fast clone refresh {k} / fast clone before"] = (f"fast clone refresh {k}", "fast clone before", 0.6)
    runs["balanced design"] = (balanced, None)
    for k in (int(k) for k in args.balanced_refresh.split(",")):
        runs[f"balanced clone refresh {k}"] = (balanced.replace(prompt_refresh=k), voice)
        targets[f"balanced clone refresh {k} / balanced design"] = (f"balanced clone refresh {k}", "balanced design",
                                                                   1.3)
    print(json.dumps({"backbone": engine.backbone_choice.get("choice"), "reference_s": voice.frames / 25,
                      "presets": {"fast": fast.prompt_refresh, "balanced": balanced.prompt_refresh}}), flush=True)
    best: dict[str, float] = {}
    for round_ in range(args.rounds):
        for name, (config, who) in runs.items():
            plan = engine.prepare(FIVE, voice=who, config=config)
            estimate = engine.estimate_seconds(plan)
            load = os.getloadavg()[0]
            wall = time.perf_counter()
            result = engine.generate(FIVE, voice=who, config=config)
            wall = time.perf_counter() - wall
            best[name] = min(best.get(name, wall), wall)
            print(json.dumps({"round": round_, "run": name, "wall_s": round(wall, 2),
                              "estimate_s": round(estimate, 2) if estimate else None,
                              "backbone_s": round(result.timings["backbone"], 2), "steps": config.num_step,
                              "prompt_refresh": config.prompt_refresh, "speech_s": round(result.frames / 25, 2),
                              "load_before": round(load, 2)}), flush=True)
    ratios = {label: round(best[a] / best[b], 3) for label, (a, b, _) in targets.items()}
    print(json.dumps({"best_s": {k: round(v, 2) for k, v in best.items()}, "ratios": ratios,
                      "met": {label: ratios[label] <= targets[label][2] for label in ratios}}), flush=True)
    return 0


def forwards(engine, plan, rounds: int) -> int:
    """The conditional row's whole forward against its target on the kept prompt, alternating."""
    import numpy as np

    from omnivoice_demo.engine.onnx_model import PromptPast

    voice, frames, model = plan.voice, plan.target_frames, engine.model
    ids, mask = engine._rows(plan.chunks[0], frames, voice.transcript, voice.codes, plan)
    embeds = model.embed(ids, mask)
    length = embeds.shape[1]
    prompt = PromptPast(length - frames)
    model.hidden_states(embeds, [length], keep=prompt)
    best = {"whole": float("inf"), "target on the kept prompt": float("inf")}
    for round_ in range(rounds):
        for name, call in (("whole", lambda: model.hidden_states(embeds, [length])),
                           ("target on the kept prompt",
                            lambda: model.hidden_states(np.ascontiguousarray(embeds[:, -frames:]), [frames], past=prompt))):
            load = os.getloadavg()[0]
            tick = time.perf_counter()
            call()
            seconds = time.perf_counter() - tick
            best[name] = min(best[name], seconds)
            print(json.dumps({"round": round_, "forward": name, "seconds": round(seconds, 3), "positions": length,
                              "target": frames, "load_before": round(load, 2)}), flush=True)
    print(json.dumps({"best_s": {k: round(v, 3) for k, v in best.items()},
                      "ratio": round(best["target on the kept prompt"] / best["whole"], 3)}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
