"""ONNX Runtime's idle workers spinning or blocking: one generation's wall and CPU seconds, A/B.

    python -m benchmarks.spinning --model /work/models/full-int4 --backbone int4 --threads 2 --steps 8 --repeats 2

Each run is a fresh process that loads the engine with the sessions spinning (ONNX Runtime's own
default) or blocking when idle (``runtime.sessions.SESSION_CONFIG``, this project's default), warms up with
one step, then times one generation of ``TEXT`` (seed 1); the two modes alternate.  Prints one JSON
line per run (mode, wall and CPU seconds, the stage timings, the codes' sha256 as the API reports it,
the load average before the run): the codes are the same either way, only the time moves.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

TEXT = "The weather turned cold overnight, so we lit the stove."
SPINNING = {"session.intra_op.allow_spinning": "1", "session.inter_op.allow_spinning": "1"}


def one_run(mode: str, model: str, backbone: str, threads: int, steps: int) -> dict:
    import time

    from omnivoice_demo.runtime import sessions
    from omnivoice_demo.storage.digests import codes_sha256

    if mode == "spinning":
        sessions.SESSION_CONFIG.update(SPINNING)
    from omnivoice_demo.settings.generation import GenerationConfig
    from omnivoice_demo.engine.loop import OmniVoiceEngine

    engine = OmniVoiceEngine(model, threads=threads, verify="size", backbone=backbone, calibrate=False)
    engine.generate("Hi.", language="en", config=GenerationConfig.preset("reference").replace(num_step=1, seed=1))
    cpu, wall = time.process_time(), time.perf_counter()
    result = engine.generate(TEXT, language="en",
                             config=GenerationConfig.preset("reference").replace(num_step=steps, seed=1))
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    return {"mode": mode, "wall_s": round(wall, 2), "cpu_s": round(cpu, 2),
            "stages": {k: round(v, 3) for k, v in result.timings.items()},
            "codes_sha256": codes_sha256(result.codes), "frames": result.frames}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="a model folder")
    parser.add_argument("--backbone", default="int4")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=2, help="runs per mode (alternating)")
    parser.add_argument("--mode", choices=["spinning", "blocking"], help=argparse.SUPPRESS)  # one child run
    args = parser.parse_args(argv)
    if args.mode:
        print(json.dumps(one_run(args.mode, args.model, args.backbone, args.threads, args.steps)))
        return 0
    for _ in range(args.repeats):
        for mode in ("spinning", "blocking"):
            load = os.getloadavg()[0]
            done = subprocess.run([sys.executable, "-m", "benchmarks.spinning", *(argv or sys.argv[1:]),
                                   "--mode", mode], capture_output=True, text=True, check=True)
            row = json.loads(done.stdout.strip().splitlines()[-1])
            print(json.dumps(dict(row, load_before=round(load, 2))), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
