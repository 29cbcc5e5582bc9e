"""Where one whole generation's time goes, by operator: ONNX Runtime's profiler on every session.

    OMNIVOICE_CACHE=/tmp/ov-cache python benchmarks/profile_generation.py --model /work/models/full-int4 \
        --threads 2 --backbone int4 [--preset reference] [--duration 5] [--markdown out.md] [--json out.json]

One generation of ``--duration`` seconds of speech (the "five" text of ``benchmarks/latency.py``) at
``--preset``, after one unprofiled warm-up generation, with ``SessionOptions.enable_profiling`` on every
session the engine opens (embeddings, backbone, heads, codec).  The operators are grouped into what
issue 42 asks about: the backbone's weight products by kind, attention (GroupQueryAttention, which
applies the rotary embedding inside), norms, (de)quantisation, the rest of the backbone, the heads,
the embeddings, the codec; the engine's own stage timer gives the wall seconds of each stage, and
what no session accounts for (sampling, bookkeeping, Python) is the wall time less the sessions'.

With the step's two forwards side by side (2 threads), two backbone runs overlap: the operators' summed
time is then more than the backbone's wall time, so the table gives both the share of summed operator
time and the wall seconds of each engine stage.  Say the machine's load (``uptime``) with the figures.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import typing
import pathlib
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from omnivoice_demo.runtime import sessions as runtime_sessions  # noqa: E402
from omnivoice_demo.runtime.machine import cpu_name  # noqa: E402

#: operator type -> the group the table reports
GROUPS = {
    "MatMulNBits": "weight products: MatMulNBits (4/8-bit weights, int8 activations)",
    "MatMulIntegerToFloat": "weight products: dense int8 (MatMulIntegerToFloat)",
    "DynamicQuantizeMatMul": "weight products: dense int8 (DynamicQuantizeMatMul)",
    "MatMulInteger": "weight products: dense int8 (MatMulInteger)",
    "MatMul": "weight products: fp32 MatMul",
    "FusedMatMul": "weight products: fp32 MatMul",
    "Gemm": "weight products: fp32 MatMul",
    "GroupQueryAttention": "attention (GroupQueryAttention, rotary inside)",
    "MultiHeadAttention": "attention",
    "RotaryEmbedding": "rotary embedding",
    "SimplifiedLayerNormalization": "norms (RMSNorm)",
    "SkipSimplifiedLayerNormalization": "norms (RMSNorm)",
    "LayerNormalization": "norms",
    "SkipLayerNormalization": "norms",
    "QuantizeLinear": "(de)quantize",
    "DequantizeLinear": "(de)quantize",
    "DynamicQuantizeLinear": "(de)quantize",
}


def profiled_options(prefix: str):
    made = runtime_sessions.session_options

    def options(threads=None):
        opts = made(threads)
        opts.enable_profiling = True
        opts.profile_file_prefix = prefix
        return opts
    return options


def patch_options(prefix: str) -> None:
    """Every module that calls ``session_options`` gets profiling options."""
    from omnivoice_demo.audio import codec
    from omnivoice_demo.engine import loop, onnx_model

    patched = profiled_options(prefix)
    modules: tuple[typing.Any, ...] = (runtime_sessions, onnx_model, loop, codec)   # each that has it, patched in place
    for module in modules:
        if hasattr(module, "session_options"):
            module.session_options = patched


def measured_node_seconds(trace_path: str) -> collections.Counter:
    """Seconds per operator type in the second half of a session's runs (the first half was the warm-up
    generation: the same configuration and seed run the same forwards)."""
    events = json.loads(pathlib.Path(trace_path).read_text())
    runs = sorted(e["ts"] for e in events if e.get("cat") == "Session" and e.get("name") == "model_run")
    since = runs[len(runs) // 2] if runs else 0
    per_op: collections.Counter = collections.Counter()
    for event in events:
        if event.get("cat") == "Node" and event.get("name", "").endswith("_kernel_time") and event["ts"] >= since:
            per_op[event["args"]["op_name"]] += event["dur"] / 1e6
    return per_op


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", required=True)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--backbone", default="int4")
    parser.add_argument("--preset", default="reference")
    parser.add_argument("--duration", type=float, default=5.0)
    parser.add_argument("--markdown")
    parser.add_argument("--json")
    args = parser.parse_args()

    workdir = tempfile.mkdtemp(prefix="ov-profile-")
    patch_options(os.path.join(workdir, "ort"))
    from omnivoice_demo import OmniVoiceEngine
    from omnivoice_demo.settings.generation import GenerationConfig
    from omnivoice_demo.eval.quick_bench import TEXTS

    engine = OmniVoiceEngine(args.model, threads=args.threads, verify="size", calibrate=False, backbone=args.backbone)
    config = GenerationConfig.preset(args.preset).replace(seed=0, duration=args.duration)
    model = engine.model
    engine.generate(TEXTS["medium"], config=config)  # the warm-up: cut from the profile by its runs
    load = os.getloadavg()
    started, cpu = time.perf_counter(), time.process_time()
    result = engine.generate(TEXTS["medium"], config=config)
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    sessions = {"backbone": model.backbone, "heads": model.heads, "embeddings": model.embeddings,
                **{f"codec {role}": s for role, s in getattr(engine.codec, "sessions", {}).items()}}
    rows: collections.Counter = collections.Counter()
    per_op: collections.Counter = collections.Counter()
    for role, session in sessions.items():
        ops = measured_node_seconds(session.end_profiling())
        for op, seconds in ops.items():
            per_op[f"{role}: {op}"] += seconds
            group = GROUPS.get(op, "other operators") if role == "backbone" else role
            rows[(role == "backbone" and "backbone, " or "") + group] += seconds
    timings = {k: round(v, 3) for k, v in result.timings.items()}
    audio_s = result.audio.shape[-1] / 24000
    total_ops = sum(rows.values())
    lines = [f"CPU: {cpu_name()}; threads {args.threads}; backbone {engine.backbone_choice['compute']}; "
             f"load average before the run {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}",
             f"{args.preset}, {audio_s:.2f} s of speech: wall {wall:.2f} s (RTF {wall / audio_s:.2f}), "
             f"process CPU {cpu:.2f} s ({cpu / wall / args.threads:.0%} of {args.threads} threads)",
             "", "| where | operator seconds (summed) | share |", "|---|---|---|"]
    for group, seconds in rows.most_common():
        lines.append(f"| {group} | {seconds:.2f} | {seconds / total_ops:.1%} |")
    lines += ["", "| engine stage (wall) | seconds | share of the generation |", "|---|---|---|"]
    for stage, seconds in sorted(timings.items(), key=lambda kv: -kv[1]):
        if stage != "total":
            lines.append(f"| {stage} | {seconds:.2f} | {seconds / wall:.1%} |")
    text = "\n".join(lines)
    print(text)
    if args.markdown:
        pathlib.Path(args.markdown).write_text(text + "\n", encoding="utf-8")
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps({
            "cpu": cpu_name(), "threads": args.threads, "backbone": engine.backbone_choice["compute"],
            "preset": args.preset, "audio_s": audio_s, "wall_s": wall, "cpu_s": cpu, "load": load,
            "groups": dict(rows), "operators": dict(per_op), "timings": timings}, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
