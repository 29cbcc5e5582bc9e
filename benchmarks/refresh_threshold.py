"""Where keeping the prompt pays: one step's conditional forward whole against its target on the kept prompt,
by the length of the cloned reference (``presets.MIN_KEPT_REFERENCE_SECONDS``).

    python -m benchmarks.refresh_threshold --model /work/models/full-fp32 --threads 2 [--rounds 3]

One engine; for a design (no reference) and for references of 1, 2, 3, 4, 6 and 10 s (``--seconds``;
random codes of that length with a transcript cut to match: the forward's cost depends on the
positions, not on what they hold), the same 5 s sentence's conditional row is timed whole and as its
125 target frames on the kept prompt, alternating, ``--rounds`` times; each timing a JSON line with the
load before it.  The last line gives, per length, the best seconds of each and the ratio kept / whole
(the share of a whole step a kept step costs), from the same run.
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
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", default="0,1,2,3,4,6,10", help="reference lengths (0: a design)")
    args = parser.parse_args(argv)

    import numpy as np

    from benchmarks.latency import FIVE
    from benchmarks.prompt_refresh_fidelity import TRANSCRIPT_10S
    from omnivoice_demo.constants import FRAME_RATE
    from omnivoice_demo.engine.loop import OmniVoiceEngine
    from omnivoice_demo.engine.onnx_model import PromptPast
    from omnivoice_demo.storage.voice_file import Voice

    engine = OmniVoiceEngine(args.model, threads=args.threads, verify="size", backbone=args.backbone)
    model = engine.model
    words = TRANSCRIPT_10S.split()
    rng = np.random.default_rng(0)
    print(json.dumps({"backbone": engine.backbone_choice.get("choice"), "threads": args.threads}), flush=True)
    rows = {}
    for seconds in (float(s) for s in args.seconds.split(",")):
        voice = None
        if seconds > 0:
            frames = int(seconds * FRAME_RATE)
            voice = Voice(codes=rng.integers(0, 1024, size=(engine.num_codebooks, frames), dtype=np.int64),
                          transcript=" ".join(words[:max(1, round(len(words) * seconds / 10))]), rms=0.1)
        plan = engine.prepare(FIVE, voice=voice, seed=1, duration=5.0)
        target = plan.target_frames
        ids, mask = engine._rows(plan.chunks[0], target, voice.transcript if voice else None,
                                 voice.codes if voice else None, plan)
        embeds = model.embed(ids, mask)
        length = embeds.shape[1]
        prompt = PromptPast(length - target)
        model.hidden_states(embeds, [length], keep=prompt)
        kept_embeds = np.ascontiguousarray(embeds[:, -target:])
        best = {"whole": float("inf"), "kept": float("inf")}
        for round_ in range(args.rounds):
            calls = (("whole", lambda e=embeds, n=length: model.hidden_states(e, [n])),
                     ("kept", lambda e=kept_embeds, n=target, p=prompt: model.hidden_states(e, [n], past=p)))
            for name, call in calls:
                load = os.getloadavg()[0]
                tick = time.perf_counter()
                call()
                spent = time.perf_counter() - tick
                best[name] = min(best[name], spent)
                print(json.dumps({"reference_s": seconds, "round": round_, "forward": name, "seconds": round(spent, 3),
                                  "positions": length, "target": target, "load_before": round(load, 2)}), flush=True)
        rows[seconds] = {"positions": length, "prompt": length - target, "whole_s": round(best["whole"], 3),
                         "kept_s": round(best["kept"], 3), "kept/whole": round(best["kept"] / best["whole"], 3)}
    print(json.dumps({"by_reference_s": rows}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
