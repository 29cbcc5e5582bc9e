"""A quick benchmark of loaded engines: seconds per stage, per step, real-time factor, peak memory.

    rows = run_benchmark({"int4": engine_a, "fp32": engine_b}, "Hello world.", num_step=32, repeats=3)

Each row is one engine: the mean over ``repeats`` generations (after one
warm-up step) of ``GenerationResult.timings``, the seconds per unmasking step,
the real-time factor and the peak resident memory of the process while it ran
(Linux: VmHWM, reset before each engine; elsewhere: the process's peak so far),
with the machine's description.  The app's Benchmark tab shows these rows; the
full benchmark (``omnivoice_demo.bench``) can replace this module behind the
same function.
"""

from __future__ import annotations

import os
import pathlib
import platform
import sys
from typing import Callable, Optional

import numpy as np

STAGES = ("prompt", "embeddings", "backbone", "heads", "sampling", "codec_decode", "postprocess")

#: sample texts by length (the Benchmark tab's choice)
TEXTS = {
    "short": "The quick brown fox jumps over the lazy dog.",
    "medium": ("Speech synthesis turns written words into sound. This benchmark measures how long each "
               "stage of the model takes on this machine, and how that compares with real time."),
    "long": ("Speech synthesis turns written words into sound. This benchmark measures how long each stage "
             "of the model takes on this machine, and how that compares with real time. The backbone runs "
             "once per step for the whole utterance, so longer texts cost more per step, and the number of "
             "steps multiplies everything. Lower precision weights make each step cheaper on a CPU, at a "
             "small cost in fidelity. Reading the table side by side shows where the time goes."),
}


def machine_info(engine=None) -> dict:
    """CPU, cores, OS, Python and ONNX Runtime versions (and the engine's provider and threads)."""
    import onnxruntime as ort

    cpu = platform.processor() or platform.machine()
    try:
        for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count()
    info = {"cpu": cpu, "cores": os.cpu_count(), "usable_cores": usable,
            "os": f"{platform.system()} {platform.release()}", "python": sys.version.split()[0],
            "onnxruntime": ort.__version__}
    if engine is not None:
        info["provider"] = engine.provider
        info["threads"] = engine.threads or "default"
    return info


def _reset_peak_rss() -> bool:
    """Reset Linux's VmHWM (peak RSS) of this process; False where that is not possible."""
    try:
        with open("/proc/self/clear_refs", "w") as handle:
            handle.write("5")
        return True
    except OSError:
        return False


def peak_rss_mb() -> Optional[float]:
    """Peak resident memory of this process in MiB (since the last reset on Linux)."""
    try:
        for line in pathlib.Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    try:
        import resource

        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak / (1024.0 * 1024.0) if sys.platform == "darwin" else peak / 1024.0
    except (ImportError, OSError):
        return None


def run_benchmark(engines: dict, text: str, num_step: int = 32, repeats: int = 1, seed: int = 0,
                  progress: Optional[Callable[[str, float], None]] = None, **generate_kwargs) -> list[dict]:
    """One row per engine (see the module's docstring); ``progress(message, fraction)`` is called as it runs."""
    if not engines:
        raise ValueError("No model to benchmark: load one in the Model tab first.")
    repeats = int(repeats)
    if repeats < 1 or repeats > 100:
        raise ValueError(f"repeats must be between 1 and 100, got {repeats}.")
    rows = []
    total_runs = len(engines) * repeats
    done = 0
    for label, engine in engines.items():
        if progress:
            progress(f"{label}: warm-up", done / total_runs)
        engine.generate(text, num_step=1, seed=seed, **generate_kwargs)  # first-run allocations out of the timings
        reset = _reset_peak_rss()
        timings: list[dict] = []
        result = None
        for index in range(repeats):
            if progress:
                progress(f"{label}: run {index + 1} of {repeats}", done / total_runs)
            result = engine.generate(text, num_step=num_step, seed=seed + index, **generate_kwargs)
            timings.append(result.timings)
            done += 1
        mean = {stage: float(np.mean([t.get(stage, 0.0) for t in timings])) for stage in STAGES + ("total",)}
        spread = float(np.std([t["total"] for t in timings]))
        frames = result.frames
        row = {"model": label, "profile": engine.profile, "provider": engine.provider,
               "threads": engine.threads or "default", "repeats": repeats, "num_step": int(num_step),
               "chars": len(text), "frames": frames, "audio_s": round(result.duration, 3)}
        row.update({f"{stage}_s": round(mean[stage], 4) for stage in STAGES})
        row["total_s"] = round(mean["total"], 4)
        row["total_std_s"] = round(spread, 4)
        steps = num_step * len(result.chunks)
        row["per_step_ms"] = round(1000.0 * (mean["total"] - mean["codec_decode"] - mean["postprocess"]
                                             - mean["prompt"]) / max(steps, 1), 2)
        row["rtf"] = round(mean["total"] / result.duration, 4) if result.duration else float("inf")
        peak = peak_rss_mb()
        row["peak_rss_mb"] = round(peak, 1) if peak is not None else None
        row["peak_rss_scope"] = "this model's runs" if reset else "process so far"
        row.update({k: v for k, v in machine_info().items()})
        rows.append(row)
    if progress:
        progress("done", 1.0)
    return rows


def rows_to_csv(rows: list[dict]) -> str:
    """The rows as CSV text (columns: the union of the rows' keys, in first-seen order)."""
    import csv
    import io

    columns: list[str] = []
    for row in rows:
        columns.extend(k for k in row if k not in columns)
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns)
    writer.writeheader()
    for row in rows:
        writer.writerow(row)
    return buffer.getvalue()

