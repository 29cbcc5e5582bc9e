"""A quick benchmark of loaded engines: seconds per stage, per step, real-time factor, peak memory.

    rows = run_benchmark({"int4": engine_a, "fp32": engine_b}, "Hello world.", num_step=32, repeats=3)

Each row is one engine: the mean over ``repeats`` generations (after one
warm-up step) of ``GenerationResult.timings``, the seconds per unmasking step,
the real-time factor and the peak resident memory of the process while it ran
(Linux: VmHWM, reset before each engine; elsewhere: the process's peak so far),
with the machine's description.  The app's Benchmark tab shows these rows.
The side-by-side benchmark against the PyTorch reference (``python -m
benchmarks``, in the checkout, not installed) shares this module's texts,
memory measure and machine description, and ``constants.STAGES``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import platform
import sys
from typing import Callable, Iterator, Optional

import numpy as np

from ..constants import STAGES
from ..errors import InvalidInput
from ..runtime.machine import cpu_name, peak_rss_mb, reset_peak_rss

#: the benchmark texts by length: the app's Benchmark tab and ``python -m benchmarks`` (its cases) use these
TEXTS = {
    "short": "Hello! This is a short benchmark sentence.",
    "medium": ("The quick brown fox jumps over the lazy dog. Benchmarks should be boring, repeatable and "
               "honest, so this text is long enough to fill about five seconds of speech."),
    "long": " ".join([
        "The morning was quiet and the streets were still empty when the first tram went past.",
        "A baker opened his shutters, and the smell of warm bread drifted into the square.",
        "Children walked slowly to school, arguing about football and the weekend's films.",
        "By noon the market was full of voices, colours and the rattle of wooden carts.",
        "Old friends met by the fountain and talked about the weather, their children and the price of fish.",
        "In the afternoon a light rain fell, and the cafes pulled their chairs under the awnings.",
        "When the evening came, the lamps were lit one by one along the river.",
        "Somewhere a violin played, and a dog barked twice before the city fell asleep again.",
    ]),
    # six sentences, about 20 s of speech: sentence streaming's case (first audio after the first sentence)
    "paragraph": ("The old lighthouse stood at the edge of the cliff. Every night its lamp turned slowly over the "
                  "water, and sailors far from home looked for it in the dark. One winter the keeper fell ill, and "
                  "for three nights the light went out. A girl from the village climbed the long stairs with a "
                  "lantern in her hand. She kept it burning until the storm had passed. By morning every boat was "
                  "safe in the harbour."),
}


def machine_info(engine=None) -> dict:
    """CPU, cores, OS, Python and ONNX Runtime versions (and the engine's provider and threads)."""
    import onnxruntime as ort

    cpu = cpu_name()
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


@dataclasses.dataclass
class BenchmarkProgress:
    """An event of ``benchmark_events``: what runs now and the fraction done (``rows`` on the last one)."""

    message: str
    fraction: float
    rows: Optional[list] = None
    kind: str = "bench"


def run_benchmark(engines: dict, text: str, num_step: int = 32, repeats: int = 1, seed: int = 0,
                  progress: Optional[Callable[[str, float], None]] = None, **generate_kwargs) -> list[dict]:
    """One row per engine (see the module's docstring); ``progress(message, fraction)`` is called as it runs."""
    rows: list[dict] = []
    for event in benchmark_events(engines, text, num_step, repeats, seed, **generate_kwargs):
        if isinstance(event, BenchmarkProgress):
            if progress:
                progress(event.message, event.fraction)
            rows = event.rows if event.rows is not None else rows
    return rows


def benchmark_events(engines: dict, text: str, num_step: int = 32, repeats: int = 1, seed: int = 0,
                     locks: Optional[dict] = None, **generate_kwargs) -> Iterator:
    """``run_benchmark`` step by step, for the service's queue: every engine step is yielded (so a cancel
    stops the benchmark after the step in flight, and closing this generator stops the engine), with a
    ``BenchmarkProgress`` at each run's start and a last one holding the rows.  ``locks``: a model's lock
    per label, held around each step (not the whole benchmark), so codec calls can interleave."""
    if not engines:
        raise InvalidInput("No model to benchmark: load one in the Model tab first.")
    repeats = int(repeats)
    if repeats < 1 or repeats > 100:
        raise InvalidInput(f"repeats must be between 1 and 100, got {repeats}.")
    rows = []
    total_runs = len(engines) * repeats
    done = 0
    for label, engine in engines.items():
        lock = (locks or {}).get(label)

        def generate(**kwargs):
            result = None
            stream = engine.stream(text, **kwargs, **generate_kwargs)
            try:
                while True:
                    with lock if lock is not None else contextlib.nullcontext():
                        event = next(stream, None)
                    if event is None:
                        return result
                    result = event if event.kind == "result" else result
                    yield event
            finally:
                stream.close()

        yield BenchmarkProgress(f"{label}: warm-up", done / total_runs)
        yield from generate(num_step=1, seed=seed)  # first-run allocations out of the timings
        reset = reset_peak_rss()
        timings: list[dict] = []
        result = None
        for index in range(repeats):
            yield BenchmarkProgress(f"{label}: run {index + 1} of {repeats}", done / total_runs)
            result = yield from generate(num_step=num_step, seed=seed + index)
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
    yield BenchmarkProgress("done", 1.0, rows)


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

