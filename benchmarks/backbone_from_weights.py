"""The 8-bit backbone built from the original checkpoint's weights: first build's time and peak memory, torch hidden,
and byte equality with the same choice built from an fp32 folder of the same checkpoint.

    python benchmarks/backbone_from_weights.py --int4 /work/models/full-int4 --fp32 /work/models/full-fp32 \
        --weights /work/models/ckpt-outliers --cache /work/models/backbones-cache [--precision int8-row] [--threads 2]

Each build runs in a fresh interpreter where torch (and the other build-only packages) cannot be
imported, into an empty cache folder of its own, so the time is a first build's and the peak
resident memory (``ru_maxrss``) is that build's process alone (the model folder's other graphs
opened by the engine included; ``peak_rss_before_build_mb``: the peak once the weights file is found and
the engine's other graphs are open, before the build); ``output_mb`` is the size of the built graph and
its weights.
"""

from __future__ import annotations

import argparse
import filecmp
import json
import pathlib
import shutil
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
HIDDEN = ("convert", "torch", "torchaudio", "transformers", "omnivoice", "olive", "onnxruntime_genai", "onnxscript")

CHILD = """
import json, pathlib, resource, sys, time
for name in {hidden!r}:
    sys.modules[name] = None
from omnivoice_demo.backbones import choice
from omnivoice_demo.engine.onnx_model import OmniVoiceOnnx
from omnivoice_demo.hub.weights import backbone_weights
from omnivoice_demo.runtime.memory import bound_heap
from omnivoice_demo.runtime.sessions import providers_for, session_options
bound_heap()  # as the command line and the app do in their own processes
folder, precision, cache, weights, threads = pathlib.Path(sys.argv[1]), sys.argv[2], pathlib.Path(sys.argv[3]), \\
    sys.argv[4] or None, int(sys.argv[5])
started = time.perf_counter()
found = backbone_weights(weights, cache_dir=cache) if weights else None
digest_s = time.perf_counter() - started
model = OmniVoiceOnnx(folder, threads=threads)
peak_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
graph = choice.cached_backbone(folder / "llm_decoder.onnx", precision, model, providers_for("cpu"),
                               lambda: session_options(threads), cache, weights=found)
print(json.dumps({{"graph": str(graph), "seconds": round(time.perf_counter() - started, 1),
                  "weights_digest_s": round(digest_s, 1),
                  "output_mb": round(sum(f.stat().st_size for f in graph.parent.glob(graph.name + "*")) / 2**20),
                  "peak_rss_before_build_mb": round(peak_before),
                  "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
                  "torch_imported": sys.modules.get("torch") is not None}}))
"""


def build(folder: pathlib.Path, precision: str, cache: pathlib.Path, weights: str, threads: int) -> dict:
    done = subprocess.run([sys.executable, "-c", CHILD.format(hidden=HIDDEN), str(folder), precision, str(cache),
                           weights, str(threads)], cwd=ROOT, capture_output=True, text=True,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "HF_HUB_OFFLINE": "1"})
    if done.returncode:
        raise SystemExit(done.stderr[-3000:])
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--int4", required=True, help="the int4 folder")
    parser.add_argument("--fp32", help="an fp32 folder of the same checkpoint, for the byte comparison")
    parser.add_argument("--weights", required=True, help="the checkpoint (folder or model.safetensors)")
    parser.add_argument("--cache", required=True, help="a folder for the builds (emptied first)")
    parser.add_argument("--precision", default="int8-row")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    cache = pathlib.Path(args.cache)
    shutil.rmtree(cache, ignore_errors=True)
    report = {"from_weights": build(pathlib.Path(args.int4), args.precision, cache / "weights", args.weights,
                                    args.threads)}
    print(json.dumps(report["from_weights"]), flush=True)
    if args.fp32:
        report["from_fp32"] = build(pathlib.Path(args.fp32), args.precision, cache / "fp32", "", args.threads)
        a, b = pathlib.Path(report["from_weights"]["graph"]), pathlib.Path(report["from_fp32"]["graph"])
        report["byte_equal"] = {name: filecmp.cmp(a.parent / name, b.parent / name, shallow=False)
                                for name in (a.name, a.name + ".data")}
    print(json.dumps(report, indent=1))
    return 0 if all(report.get("byte_equal", {"": True}).values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
