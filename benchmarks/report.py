"""The side-by-side benchmark's tables: timings against the reference, code agreement, Markdown."""

from __future__ import annotations

import numpy as np

from omnivoice_demo.constants import STAGES

from .throughput import backbone_flops


def agreement_rows(results: list[dict]) -> list[dict]:
    """Share of equal codes between each folder's greedy output and the first folder's (the baseline)."""
    base = results[0]
    rows = []
    for r in results:
        if "error" in r or "error" in base:
            rows.append(dict(system=r.get("system"), error="failed"))
            continue
        a, b = np.array(base["codes"][0]), np.array(r["codes"][0])
        rows.append(dict(system=r["system"], folder=r["folder"], agreement_vs_first=float((a == b).mean())
                         if a.shape == b.shape else 0.0, first_codebook_agreement=float((a[0] == b[0]).mean())
                         if a.shape == b.shape else 0.0))
    return rows


def summarise(results: list[dict], gemm: dict) -> list[dict]:
    reference = next((r for r in results if r.get("system") == "pytorch" and "error" not in r), None)
    # the same text makes the same chunks everywhere; the reference does not report them
    chunks = max((r.get("chunks", 1) for r in results if "error" not in r), default=1)
    rows = []
    for r in results:
        if "error" in r:
            rows.append(dict(system=r["system"], error=r["error"].strip().splitlines()[-1] if r["error"] else "?"))
            continue
        row = dict(system=r["system"], total_s=r["total"], per_step_s=r["total"] / r["steps"] / r.get("chunks", chunks),
                   rtf=r["total"] / r["audio_seconds"], audio_s=r["audio_seconds"], peak_rss_mb=r["peak_rss_mb"])
        if r.get("first_audio") is not None:  # the first chunk's audio is out (the whole audio for one chunk)
            row["time_to_first_audio_s"] = r["first_audio"]
        for stage in STAGES:
            if r.get(stage) is not None:
                row[stage] = r[stage]
        if "forward" in r:
            row["forward"] = r["forward"]
        if reference is not None:
            row["speedup_vs_pytorch"] = reference["total"] / r["total"]
        if r.get("backbone") and r.get("dims") and r.get("frames"):
            frames_per_chunk = r["frames"] / r.get("chunks", 1)
            lengths = [r["prompt_positions"] + frames_per_chunk, frames_per_chunk]
            flops = backbone_flops(r["dims"], [int(x) for x in lengths]) * r["steps"] * r.get("chunks", 1)
            # int4 MatMulNBits at accuracy level 4 computes with int8 activations
            precision = "fp32" if r.get("backbone_precision") in ("fp32", "fp16", None) else "int8"
            row["backbone_gflops"] = flops / r["backbone"] / 1e9
            row["gemm_fraction"] = flops / r["backbone"] / gemm[precision]
            row["gemm_reference"] = precision
        outside = r["total"] - sum(r.get(s) or 0 for s in ("backbone",))
        if r.get("backbone"):
            row["outside_backbone_pct"] = 100.0 * outside / r["total"]
        rows.append(row)
    return rows


def format_table(rows: list[dict]) -> str:
    columns = ["system", "agreement_vs_first", "first_codebook_agreement", "total_s", "per_step_s", "rtf", "speedup_vs_pytorch", "time_to_first_audio_s", "backbone",
               "heads", "embeddings", "sampling", "codec_decode", "postprocess", "forward",
               "outside_backbone_pct", "backbone_gflops", "gemm_fraction", "peak_rss_mb", "error"]
    present = [c for c in columns if any(c in row for row in rows)]
    def cell(value):
        if isinstance(value, float):
            return f"{value:.3f}" if abs(value) < 100 else f"{value:.0f}"
        return str(value) if value is not None else ""
    lines = ["| " + " | ".join(present) + " |", "|" + "|".join("---" for _ in present) + "|"]
    lines += ["| " + " | ".join(cell(row.get(c)) for c in present) + " |" for row in rows]
    return "\n".join(lines)


def format_markdown(report: dict, steps: int) -> str:
    machine, gemm = report["machine"], report["gemm"]
    lines = [
        "# Benchmarks",
        "",
        f"Machine: {machine['cpu']}, {machine['cores']} cores, {machine['threads']} threads, onnxruntime "
        f"{machine['onnxruntime']}, Python {machine['python']}. Measured GEMM throughput (ONNX Runtime, "
        f"{machine['threads']} threads): fp32 {gemm['fp32'] / 1e9:.1f} GFLOP/s, int8 {gemm['int8'] / 1e9:.1f} GOP/s.",
        "",
        f"Command: `{report['command']}`",
        "",
        "Full-size random-weight checkpoint (the released dimensions: the compute cost is the real one), "
        f"{steps} steps, classifier-free guidance 2.0, same text, frames and seed for every system. Times in "
        "seconds; `rtf` = compute seconds per second of audio; `gemm_fraction` = the backbone's FLOP rate over "
        "the measured GEMM throughput (int8 for the int4 backbone, whose MatMulNBits computes with int8 "
        "activations).",
    ]
    for case, data in report["cases"].items():
        lines += ["", f"## {case}", "", format_table(data["rows"])]
    return "\n".join(lines) + "\n"
