"""Peak resident memory of one engine on a backbone choice: load, one short generation, ``ru_maxrss``.

    python benchmarks/engine_memory.py --model models/full-int4 --backbone int8-row [--threads 2] [--steps 8]

Run one choice per process (the peak is the process's): issue 18 keeps an engine on the 8-bit
choice under 1.5 GB.  The 8-bit graph should be in our cache already (a first load builds it, and
the build's own peak is not the engine's).
"""

from __future__ import annotations

import argparse
import json
import pathlib
import resource
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from omnivoice_demo import OmniVoiceEngine  # noqa: E402
from omnivoice_demo.backbones.choice import BACKBONE_MODES  # noqa: E402

TEXT = "This sentence is about five seconds of speech for the memory check."


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--backbone", choices=list(BACKBONE_MODES), default="auto")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--steps", type=int, default=8)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    engine = OmniVoiceEngine(args.model, threads=args.threads, verify="size", backbone=args.backbone)
    load = time.perf_counter() - started
    result = engine.generate(TEXT, num_step=args.steps, seed=1)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: kilobytes
    print(json.dumps({"backbone": args.backbone, "choice": engine.backbone_choice["choice"],
                      "load_s": round(load, 1), "audio_s": round(result.duration, 2), "peak_rss_mb": round(peak)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
