"""Benchmark: seconds to transcribe a 10 s clip, the ONNX recogniser against transformers' PyTorch Whisper.

For each size, a random-weight checkpoint of the released architecture is built
(``convert.whisper_checkpoint``) and exported (``convert.whisper``, fp32 and int8)
into ``--work`` (one size at a time, deleted afterwards unless ``--keep``); then, in
the same process and with the same thread count, each runtime transcribes the
same 10 s clip: log-mel, encoder, language detection and exactly ``--tokens`` new
tokens (end-of-text is suppressed on both sides, because random weights would
otherwise decode until 448 tokens or stop at once; 32 tokens is about 10 s of
speech).  Reported: load seconds, seconds per clip (median of ``--repeats``), and
the ratio to PyTorch measured in the same run.

    python -m convert.whisper_bench --size base small --threads 2 [--json out.json]
"""

from __future__ import annotations

import argparse
import gc
import json
import pathlib
import shutil
import statistics
import time

import numpy as np

CLIP_SECONDS = 10.0


def clip(seconds: float = CLIP_SECONDS, rate: int = 16000) -> np.ndarray:
    """A speech-like test signal (harmonics under a syllable envelope with noise bursts)."""
    rng = np.random.default_rng(0)
    t = np.arange(int(seconds * rate)) / rate
    phase = 2 * np.pi * np.cumsum(120 + 10 * np.sin(2 * np.pi * 5 * t)) / rate
    voiced = sum(np.sin(h * phase) / h for h in range(1, 8))
    envelope = np.clip(np.sin(np.pi * 4 * t) ** 2 * 1.4 - 0.2, 0, 1)
    return (0.2 * (voiced * envelope + 0.3 * rng.standard_normal(t.size) * envelope)).astype(np.float32)


def _timed(fn, repeats: int) -> tuple[float, float]:
    """Median wall seconds and median CPU seconds (this process, all threads) of ``fn`` after a warm-up.
    CPU seconds barely depend on what else the machine runs; on an idle machine, wall ~ CPU / threads."""
    fn()  # warm-up
    walls, cpus = [], []
    for _ in range(repeats):
        started, cpu = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - started)
        cpus.append(time.process_time() - cpu)
    return statistics.median(walls), statistics.median(cpus)


def bench_onnx(folder: pathlib.Path, precision: str, wav: np.ndarray, tokens: int, threads: int,
               repeats: int) -> dict:
    from omnivoice_demo.asr import SpeechRecognizer
    from omnivoice_demo.asr.folder import graph_paths

    started = time.perf_counter()
    rec = SpeechRecognizer(folder, precision=precision, threads=threads)
    load = time.perf_counter() - started
    rec.max_length = tokens
    rec.suppress = np.append(rec.suppress, rec.eos_id)

    def run():
        out = rec.transcribe(wav, 16000)
        assert len(out.tokens[0]) == tokens

    seconds, cpu = _timed(run, repeats)
    graphs = [folder / rel for rel in graph_paths(precision).values()]
    size = sum(p.stat().st_size for g in graphs for p in (g, g.with_name(g.name + "_data")) if p.exists())
    return {"load_s": load, "clip_s": seconds, "cpu_s": cpu, "graph_mb": size / 1e6}


def bench_torch(checkpoint: pathlib.Path, wav: np.ndarray, tokens: int, threads: int, repeats: int) -> dict:
    import torch
    from transformers import WhisperFeatureExtractor, WhisperForConditionalGeneration

    torch.set_num_threads(threads)
    started = time.perf_counter()
    model = WhisperForConditionalGeneration.from_pretrained(str(checkpoint), dtype=torch.float32).eval()
    extractor = WhisperFeatureExtractor.from_pretrained(str(checkpoint))
    load = time.perf_counter() - started

    def run():
        features = extractor(wav, sampling_rate=16000, return_tensors="pt").input_features
        with torch.no_grad():
            out = model.generate(features, max_new_tokens=tokens, min_new_tokens=tokens)  # noqa: F821 - run() runs before the del below
        assert out.shape[-1] == tokens

    seconds, cpu = _timed(run, repeats)
    del model
    gc.collect()
    return {"load_s": load, "clip_s": seconds, "cpu_s": cpu}


def bench_size(size: str, work: pathlib.Path, tokens: int, threads: int, repeats: int, keep: bool) -> dict:
    from convert.whisper import convert_whisper
    from convert.whisper_checkpoint import build_checkpoint

    root = work / size
    checkpoint, folder = root / "ckpt", root / "onnx"
    started = time.perf_counter()
    if not (checkpoint / "config.json").is_file():
        build_checkpoint(size, checkpoint)
    if not (folder / "omnivoice_recognizer.json").is_file():
        convert_whisper(checkpoint, folder, ("fp32", "int8"))
    build = time.perf_counter() - started
    wav = clip()
    row = {"size": size, "build_s": build, "tokens": tokens, "threads": threads,
           "torch": bench_torch(checkpoint, wav, tokens, threads, repeats)}
    gc.collect()
    for precision in ("fp32", "int8"):
        row[precision] = bench_onnx(folder, precision, wav, tokens, threads, repeats)
        row[precision]["vs_torch"] = row["torch"]["clip_s"] / row[precision]["clip_s"]
        gc.collect()
    if not keep:
        shutil.rmtree(root, ignore_errors=True)
    return row


def table(rows: list[dict]) -> str:
    lines = ["| size | PyTorch s/clip (CPU s) | ORT fp32 s/clip (CPU s, x PyTorch) | ORT int8 s/clip (CPU s, x PyTorch) "
             "| int8 graphs MB | load s fp32/int8 |", "|---|---|---|---|---|---|"]
    for r in rows:
        cells = [f"{r['torch']['clip_s']:.2f} ({r['torch']['cpu_s']:.2f})"]
        for p in ("fp32", "int8"):
            cells.append(f"{r[p]['clip_s']:.2f} ({r[p]['cpu_s']:.2f}, {r[p]['vs_torch']:.1f}x)")
        lines.append(f"| {r['size']} | {' | '.join(cells)} | {r['int8']['graph_mb']:.0f} | "
                     f"{r['fp32']['load_s']:.1f}/{r['int8']['load_s']:.1f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    from convert.whisper_checkpoint import SIZES

    parser = argparse.ArgumentParser(prog="python -m convert.whisper_bench", description=__doc__.split("\n")[0])
    parser.add_argument("--size", nargs="+", choices=[s for s in SIZES if s != "test"], default=["tiny", "base", "small"])
    parser.add_argument("--work", default="/tmp/whisper-bench")
    parser.add_argument("--tokens", type=int, default=32)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--keep", action="store_true", help="keep the built folders")
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    rows = []
    for size in args.size:
        rows.append(bench_size(size, pathlib.Path(args.work), args.tokens, args.threads, args.repeats, args.keep))
        print(json.dumps(rows[-1]), flush=True)
        if args.json:
            pathlib.Path(args.json).write_text(json.dumps(rows, indent=2))
    print(table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
