"""A step's two forwards side by side or one after the other: one generation's wall time, A/B in one process.

    python -m benchmarks.overlap --model /work/models/full-int4 --threads 2 --steps 32 --repeats 2

The engine loads once (``--backbone``, default auto's choice); then generations of ``TEXT`` (seed 1,
Reference settings but ``--steps``) alternate between ``OmniVoiceOnnx.overlap_forwards`` on (the
conditional and unconditional forwards of a step at once, this project's default with more than one
thread) and off (one after the other, as before).  Each row gives the wall seconds, the backbone
stage, and the codes' sha256 as the API reports it: the codes are the same either way, only the
time moves.  The last line gives the best of each mode and their ratio, from the same run.
Say which CPU (``lscpu``): the gain comes from cores a single forward leaves idle.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

from benchmarks.spinning import TEXT  # the same sentence as the other A/B of a generation


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="a model folder")
    parser.add_argument("--backbone", default="auto")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--steps", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=2, help="generations per mode (alternating)")
    args = parser.parse_args(argv)

    from omnivoice_demo.settings.generation import GenerationConfig
    from omnivoice_demo.engine.loop import OmniVoiceEngine
    from omnivoice_demo.storage.digests import codes_sha256

    engine = OmniVoiceEngine(args.model, threads=args.threads, verify="size", backbone=args.backbone, calibrate=False)
    config = GenerationConfig.preset("reference").replace(num_step=args.steps, seed=1)
    engine.generate("Hi.", language="en", config=config.replace(num_step=1))
    best: dict[str, float] = {}
    digests = set()
    for _ in range(args.repeats):
        for mode, overlap in (("side by side", True), ("one after the other", False)):
            engine.model.overlap_forwards = overlap
            load = os.getloadavg()[0]
            wall = time.perf_counter()
            result = engine.generate(TEXT, language="en", config=config)
            wall = time.perf_counter() - wall
            digests.add(codes_sha256(result.codes))
            best[mode] = min(best.get(mode, wall), wall)
            print(json.dumps({"mode": mode, "wall_s": round(wall, 2), "backbone_s": round(result.timings["backbone"], 2),
                              "speech_s": round(result.frames / 25, 2), "codes_sha256": codes_sha256(result.codes),
                              "load_before": round(load, 2)}), flush=True)
    print(json.dumps({"backbone": engine.backbone_choice.get("choice"),
                      "best_s": {k: round(v, 2) for k, v in best.items()},
                      "ratio": round(best["side by side"] / best["one after the other"], 3),
                      "same_codes": len(digests) == 1}), flush=True)
    return 0 if len(digests) == 1 else 1


if __name__ == "__main__":
    sys.exit(main())
