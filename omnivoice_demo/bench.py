"""Benchmark the engine side by side with the PyTorch reference, in one run.

    python -m omnivoice_demo.bench --model FOLDER [--model FOLDER2 ...] [--reference CKPT_DIR]
        [--case auto|clone|long|all] [--text short|medium|long|"..."] [--steps 32] [--repeats 1]
        [--threads 2] [--published-style] [--json out.json]

Every system runs in its own child process, one after the other, so that each
has the machine to itself and its peak RSS is its own; all get the same text,
steps, frames (a fixed duration) and seed.  Systems:

* ``engine:<profile>``   our engine on each folder given;
* ``pytorch``            ``omnivoice``'s ``generate`` on the checkpoint (``--reference``);
* ``published-style``    the published export's per-step work: one forward of the three graphs per
                         step on a CAUSAL copy of the first folder's backbone, no CFG, no sampling
                         (what its "RTF" measures; it is not the model, and its output is not speech).

It also measures this machine's dense GEMM throughput through ONNX Runtime
(fp32 MatMul, and int8 MatMulInteger for the int4 path, whose MatMulNBits runs
int8 activations at accuracy level 4), counts each step's backbone FLOPs from
the model dimensions and the sequence lengths, and prints the backbone's
achieved fraction of that throughput.  Ratios are against the reference run
in the same invocation; the machine's noise cancels in ratios, not in seconds.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time
from typing import Optional

import numpy as np

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
}
CASES = {
    # case -> (text key, duration in seconds or None to estimate, reference clip seconds or None)
    "auto": ("medium", 5.0, None),
    "clone": ("medium", 5.0, 5.0),
    "long": ("long", None, None),
}
REFERENCE_TRANSCRIPT = "This reference clip is five seconds of synthetic speech for the benchmark."


# --- the machine's limit ---------------------------------------------------------------

def gemm_throughput(threads: int, m: int = 256, k: int = 1024, n: int = 3072, repeats: int = 20) -> dict:
    """Dense GEMM FLOP/s of ONNX Runtime on this machine: fp32 MatMul and int8 MatMulInteger."""
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    results = {}
    for name, elem, op in (("fp32", TensorProto.FLOAT, "MatMul"), ("int8", TensorProto.UINT8, "MatMulInteger")):
        if elem == TensorProto.FLOAT:
            weight = numpy_helper.from_array(rng.standard_normal((k, n)).astype(np.float32), "w")
            a = rng.standard_normal((m, k)).astype(np.float32)
            out_type = TensorProto.FLOAT
        else:
            weight = numpy_helper.from_array(rng.integers(0, 255, (k, n)).astype(np.uint8), "w")
            a = rng.integers(0, 255, (m, k)).astype(np.uint8)
            out_type = TensorProto.INT32
        graph = helper.make_graph([helper.make_node(op, ["a", "w"], ["y"])], "gemm",
                                  [helper.make_tensor_value_info("a", elem, [m, k])],
                                  [helper.make_tensor_value_info("y", out_type, [m, n])], initializer=[weight])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
        session.run(None, {"a": a})
        best = float("inf")
        for _ in range(3):
            started = time.perf_counter()
            for _ in range(repeats):
                session.run(None, {"a": a})
            best = min(best, (time.perf_counter() - started) / repeats)
        results[name] = 2.0 * m * k * n / best
    return results


def backbone_flops(dims: dict, lengths: list[int]) -> float:
    """FLOPs of one backbone forward over rows of ``lengths`` (matrix products and attention)."""
    hidden, layers = dims["hidden_size"], dims["num_hidden_layers"]
    heads_q = dims.get("num_attention_heads") or 16
    head_dim, kv = dims["head_dim"], dims["num_key_value_heads"]
    inter = dims.get("intermediate_size") or 3 * hidden
    total = 0.0
    for length in lengths:
        projections = 2 * length * hidden * (heads_q * head_dim + 2 * kv * head_dim) + 2 * length * heads_q * head_dim * hidden
        mlp = 3 * 2 * length * hidden * inter
        attention = 2 * 2 * length * length * heads_q * head_dim
        total += layers * (projections + mlp + attention)
    return total


# --- one system, in a child process ----------------------------------------------------

def peak_rss_mb() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def make_reference_clip(seconds: float) -> tuple[np.ndarray, int]:
    """A speech-like reference clip (harmonics with vibrato under a syllable envelope)."""
    sr = 24000
    t = np.arange(int(seconds * sr)) / sr
    f0 = 120 + 12 * np.sin(2 * np.pi * 5.5 * t)
    phase = 2 * np.pi * np.cumsum(f0) / sr
    voiced = sum(np.sin(h * phase) / h for h in range(1, 9))
    envelope = np.clip(np.sin(np.pi * 4.0 * t) ** 2 * 1.4 - 0.2, 0, 1)
    return (0.2 * voiced * envelope).astype(np.float32), sr


def engine_label(engine) -> str:
    """engine:<profile>, with the int4 block size and accuracy level where they apply."""
    precision = engine.manifest.get("precision", {})
    label = f"engine:{engine.profile}"
    if precision.get("backbone") == "int4":
        label += f" (int4 block {precision.get('int4_block_size')}, accuracy level {precision.get('int4_accuracy_level')})"
    return label


def run_engine_system(folder: str, case: str, text: str, steps: int, repeats: int, threads: int, seed: int) -> dict:
    from .engine import OmniVoiceEngine

    _, duration, ref_seconds = CASES[case]
    started = time.perf_counter()
    engine = OmniVoiceEngine(folder, threads=threads, verify="size")
    load_seconds = time.perf_counter() - started
    voice = None
    clone_seconds = 0.0
    if ref_seconds:
        clip, sr = make_reference_clip(ref_seconds)
        tick = time.perf_counter()
        voice = engine.clone_voice(clip, sr, REFERENCE_TRANSCRIPT)
        clone_seconds = time.perf_counter() - tick
    runs = []
    for _ in range(repeats):
        first_audio = None
        tick = time.perf_counter()
        for event in engine.stream(text, voice=voice, duration=duration, num_step=steps, seed=seed):
            if event.kind == "chunk" and first_audio is None:
                first_audio = time.perf_counter() - tick
            if event.kind == "result":
                result = event
        runs.append(dict(result.timings, first_audio=first_audio, audio_seconds=result.duration,
                         frames=result.frames, chunks=len(result.chunks)))
    best = min(runs, key=lambda r: r["total"])
    dims = engine.manifest.get("model", {})
    prompt = len(engine.tokenizer.encode(text).ids) + 12 + (voice.frames if voice else 0)
    return dict(system=engine_label(engine), folder=folder, load_seconds=load_seconds,
                backbone_precision=engine.manifest.get("precision", {}).get("backbone", "fp32"),
                clone_seconds=clone_seconds, steps=steps, prompt_positions=prompt, dims=dims,
                peak_rss_mb=peak_rss_mb(), runs=runs, **best)


def run_reference_system(checkpoint: str, case: str, text: str, steps: int, repeats: int, threads: int,
                         seed: int) -> dict:
    import torch
    from omnivoice import OmniVoice

    torch.set_num_threads(threads)
    _, duration, ref_seconds = CASES[case]
    started = time.perf_counter()
    model = OmniVoice.from_pretrained(checkpoint, attn_implementation="sdpa", dtype=torch.float32).eval()
    load_seconds = time.perf_counter() - started
    stages: dict[str, float] = {}

    def timed(name, function):
        def wrapper(*args, **kwargs):
            tick = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                stages[name] = stages.get(name, 0.0) + time.perf_counter() - tick
        return wrapper

    model.forward = timed("forward", model.forward)
    model._predict_tokens_with_scoring = timed("sampling", model._predict_tokens_with_scoring)
    model.audio_tokenizer.decode = timed("codec_decode", model.audio_tokenizer.decode)
    model._post_process_audio = timed("postprocess", model._post_process_audio)
    prompt = None
    clone_seconds = 0.0
    if ref_seconds:
        clip, sr = make_reference_clip(ref_seconds)
        tick = time.perf_counter()
        prompt = model.create_voice_clone_prompt((torch.from_numpy(clip), sr), ref_text=REFERENCE_TRANSCRIPT)
        clone_seconds = time.perf_counter() - tick
    runs = []
    for _ in range(repeats):
        stages.clear()
        torch.manual_seed(seed)
        tick = time.perf_counter()
        with torch.inference_mode():
            audio = model.generate(text=text, voice_clone_prompt=prompt, duration=duration, num_step=steps)[0]
        total = time.perf_counter() - tick
        runs.append(dict(stages, total=total, audio_seconds=len(audio) / 24000))
    best = min(runs, key=lambda r: r["total"])
    return dict(system="pytorch", folder=checkpoint, load_seconds=load_seconds, clone_seconds=clone_seconds,
                steps=steps, peak_rss_mb=peak_rss_mb(), runs=runs, **best)


def run_published_style_system(folder: str, case: str, text: str, steps: int, repeats: int, threads: int,
                               seed: int) -> dict:
    """One causal forward of the three graphs per step on the conditional row, no CFG, no sampling."""
    import shutil

    import onnx

    from .duration import plan_target_frames
    from .onnx_model import OmniVoiceOnnx
    from .repair import attention_nodes
    from .text import build_condition_ids, load_text_tokenizer

    _, duration, _ = CASES[case]
    frames, _ = plan_target_frames(text, duration=duration)
    # the conditional row as the engine builds it; the published loop has no language/instruct, but the
    # few style tokens do not change the cost
    text_ids = build_condition_ids(text, load_text_tokenizer(folder))
    ids = np.concatenate([np.broadcast_to(text_ids, (8, len(text_ids))),
                          np.full((8, frames), 1024, dtype=np.int64)], axis=1)[np.newaxis]
    mask = np.zeros((1, ids.shape[-1]), dtype=bool)
    mask[0, len(text_ids):] = True
    # a causal copy beside the folder: hard links (onnxruntime refuses external data reached through a
    # symlink that leaves the model's folder), a copy where links are not possible
    with tempfile.TemporaryDirectory(dir=pathlib.Path(folder).resolve().parent) as tmp:
        causal = pathlib.Path(tmp)
        for item in pathlib.Path(folder).iterdir():
            if item.is_file() and item.name != "llm_decoder.onnx":
                try:
                    os.link(item, causal / item.name)
                except OSError:
                    shutil.copy2(item, causal / item.name)
        graph = onnx.load(str(pathlib.Path(folder) / "llm_decoder.onnx"), load_external_data=False)
        for node in attention_nodes(graph):
            for attribute in node.attribute:
                if attribute.name == "causal":
                    attribute.i = 1
        onnx.save(graph, str(causal / "llm_decoder.onnx"))
        model = OmniVoiceOnnx(causal, threads=threads)
        runs = []
        for _ in range(repeats):
            tick = time.perf_counter()
            for _ in range(steps):
                model.logits(ids, mask, positions=slice(ids.shape[-1] - frames, None))
            runs.append(dict(total=time.perf_counter() - tick, audio_seconds=frames / 25.0, backbone=None))
        del model
        shutil.rmtree(causal, ignore_errors=True)
    best = min(runs, key=lambda r: r["total"])
    return dict(system="published-style (causal, 1 forward/step, no CFG: not the model)", folder=folder,
                steps=steps, peak_rss_mb=peak_rss_mb(), runs=runs, **best)


def run_greedy_codes(folder: str, case: str, text: str, steps: int, repeats: int, threads: int, seed: int) -> dict:
    """Deterministic codes (position and class temperature 0) for the agreement table."""
    from .engine import OmniVoiceEngine

    _, duration, _ = CASES[case]
    engine = OmniVoiceEngine(folder, threads=threads, verify="size")
    result = engine.generate(text, duration=duration, num_step=steps, position_temperature=0.0,
                             class_temperature=0.0, seed=seed)
    return dict(system=engine_label(engine), folder=folder, precision=engine.manifest.get("precision"),
                codes=[c.tolist() for c in result.codes], total=result.timings["total"])


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


WORKERS = {"codes": run_greedy_codes, "engine": run_engine_system, "pytorch": run_reference_system, "published": run_published_style_system}


def run_in_child(kind: str, target: str, args, text: str) -> dict:
    payload = dict(kind=kind, target=target, case=args.case_name, text=text, steps=args.steps,
                   repeats=args.repeats, threads=args.threads, seed=args.seed)
    command = [sys.executable, "-m", "omnivoice_demo.bench", "--worker", json.dumps(payload)]
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads), HF_HUB_OFFLINE="1")
    completed = subprocess.run(command, capture_output=True, text=True, env=env,
                               cwd=str(pathlib.Path(__file__).resolve().parent.parent))
    lines = [line for line in completed.stdout.splitlines() if line.startswith("BENCH_RESULT ")]
    if completed.returncode != 0 or not lines:
        return dict(system=f"{kind}:{target}", error=(completed.stderr or completed.stdout)[-2000:])
    return json.loads(lines[-1][len("BENCH_RESULT "):])


# --- the table -----------------------------------------------------------------------------

STAGES = ["prompt", "embeddings", "backbone", "heads", "sampling", "codec_decode", "postprocess"]


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
        if r.get("first_audio") is not None and r.get("chunks", 1) > 1:
            row["first_audio_s"] = r["first_audio"]
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
            precision = "int8" if r.get("backbone_precision") == "int4" else "fp32"
            row["backbone_gflops"] = flops / r["backbone"] / 1e9
            row["gemm_fraction"] = flops / r["backbone"] / gemm[precision]
            row["gemm_reference"] = precision
        outside = r["total"] - sum(r.get(s) or 0 for s in ("backbone",))
        if r.get("backbone"):
            row["outside_backbone_pct"] = 100.0 * outside / r["total"]
        rows.append(row)
    return rows


def format_table(rows: list[dict]) -> str:
    columns = ["system", "agreement_vs_first", "first_codebook_agreement", "total_s", "per_step_s", "rtf", "speedup_vs_pytorch", "first_audio_s", "backbone",
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


def machine_info(threads: int) -> dict:
    """The app's machine description (quick_bench.machine_info), with the threads and providers."""
    import onnxruntime as ort

    from .quick_bench import machine_info as describe_machine

    return dict(describe_machine(), threads=threads, providers=ort.get_available_providers())


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m omnivoice_demo.bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", action="append", default=[], help="an ONNX model folder (repeatable)")
    parser.add_argument("--reference", default=None, help="the PyTorch checkpoint folder for the reference run")
    parser.add_argument("--case", choices=[*CASES, "all"], default="auto")
    parser.add_argument("--text", default=None, help="short | medium | long | your own text (default: the case's)")
    parser.add_argument("--steps", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--published-style", action="store_true",
                        help="also time the published export's per-step work on a causal copy of the first folder")
    parser.add_argument("--agreement", action="store_true",
                        help="instead of timing: greedy codes of every --model against the first one's")
    parser.add_argument("--json", default=None, help="write all results here")
    parser.add_argument("--markdown", default=None, help="write the tables and the machine as Markdown here")
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.worker:
        job = json.loads(args.worker)
        result = WORKERS[job["kind"]](job["target"], job["case"], job["text"], job["steps"], job["repeats"],
                                      job["threads"], job["seed"])
        print("BENCH_RESULT " + json.dumps(result, default=float))
        return 0

    if not args.model and not args.reference:
        parser.error("give at least one --model folder or --reference checkpoint")
    if args.agreement:
        args.case_name = "auto" if args.case == "all" else args.case
        key = args.text or CASES[args.case_name][0]
        results = [run_in_child("codes", folder, args, TEXTS.get(key, key)) for folder in args.model]
        rows = agreement_rows(results)
        print(f"greedy code agreement, case {args.case_name}, {args.steps} steps (baseline: {args.model[0]})")
        print(format_table(rows))
        if args.json:
            pathlib.Path(args.json).write_text(json.dumps(rows, indent=2))
        return 0
    gemm = gemm_throughput(args.threads)
    machine = machine_info(args.threads)
    print(f"machine: {machine['cpu']}, {machine['cores']} cores, {args.threads} threads, onnxruntime "
          f"{machine['onnxruntime']}; GEMM fp32 {gemm['fp32'] / 1e9:.1f} GFLOP/s, int8 {gemm['int8'] / 1e9:.1f} GOP/s")
    report = dict(machine=machine, gemm=gemm, cases={}, command=" ".join(["python -m omnivoice_demo.bench",
                                                                         *(argv if argv is not None else sys.argv[1:])]))
    for case in (list(CASES) if args.case == "all" else [args.case]):
        args.case_name = case
        key = args.text or CASES[case][0]
        text = TEXTS.get(key, key)
        jobs = [("engine", folder) for folder in args.model]
        if args.reference:
            jobs.append(("pytorch", args.reference))
        if args.published_style and args.model and case == "auto":
            jobs.append(("published", args.model[0]))
        results = []
        for kind, target in jobs:
            print(f"[{case}] running {kind} on {target} ...", flush=True)
            results.append(run_in_child(kind, target, args, text))
        rows = summarise(results, gemm)
        print(f"\ncase {case}: {CASES[case]}, {args.steps} steps, text {key!r}")
        print(format_table(rows))
        report["cases"][case] = dict(rows=rows, raw=results)
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(report, indent=2, default=float))
    if args.markdown:
        pathlib.Path(args.markdown).write_text(format_markdown(report, args.steps))
    return 0


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


if __name__ == "__main__":
    raise SystemExit(main())
