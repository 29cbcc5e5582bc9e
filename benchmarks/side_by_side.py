"""Benchmark the engine side by side with the PyTorch reference, in one run.

    python -m benchmarks --model FOLDER [--model FOLDER2 ...] [--reference CKPT_DIR]
        [--case auto|clone|long|all] [--text short|medium|long|"..."] [--steps 32] [--repeats 1]
        [--threads 2] [--published-style] [--json out.json]

Not part of the installed package (it needs the ``convert`` extra for the
reference, and runs from a checkout); the app's Benchmark tab uses
``omnivoice_demo.eval.quick_bench``, which shares its texts, stage names and memory
measure.

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
import json
import os
import pathlib
import subprocess
import sys
from typing import Optional

from omnivoice_demo.backbones.choice import BACKBONE_MODES
from omnivoice_demo.eval.quick_bench import TEXTS, machine_info as describe_machine

from .report import agreement_rows, format_markdown, format_table, summarise
from .systems import CASES, WORKERS
from .throughput import gemm_throughput

#: the checkout the child processes run in (so `python -m benchmarks` finds this package)
ROOT = pathlib.Path(__file__).resolve().parent.parent


def run_in_child(kind: str, target: str, args, text: str) -> dict:
    payload = dict(kind=kind, target=target, case=args.case_name, text=text, steps=args.steps,
                   repeats=args.repeats, threads=args.threads, seed=args.seed, backbone=args.backbone)
    command = [sys.executable, "-m", "benchmarks", "--worker", json.dumps(payload)]
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads), HF_HUB_OFFLINE="1")
    completed = subprocess.run(command, capture_output=True, text=True, env=env,
                               cwd=str(ROOT))
    lines = [line for line in completed.stdout.splitlines() if line.startswith("BENCH_RESULT ")]
    if completed.returncode != 0 or not lines:
        return dict(system=f"{kind}:{target}", error=(completed.stderr or completed.stdout)[-2000:])
    return json.loads(lines[-1][len("BENCH_RESULT "):])


def machine_info(threads: int) -> dict:
    """The app's machine description (quick_bench.machine_info), with the threads and providers."""
    import onnxruntime as ort

    return dict(describe_machine(), threads=threads, providers=ort.get_available_providers())


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", action="append", default=[], help="an ONNX model folder (repeatable)")
    parser.add_argument("--reference", default=None, help="the PyTorch checkpoint folder for the reference run")
    parser.add_argument("--case", choices=[*CASES, "all"], default="auto")
    parser.add_argument("--text", default=None, help="short | medium | long | your own text (default: the case's)")
    parser.add_argument("--steps", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--backbone", choices=list(BACKBONE_MODES), default="auto",
                        help="the engine's backbone= (default auto, what users get)")
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
        extra = {"backbone": job.get("backbone", "auto")} if job["kind"] == "engine" else {}
        result = WORKERS[job["kind"]](job["target"], job["case"], job["text"], job["steps"], job["repeats"],
                                      job["threads"], job["seed"], **extra)
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
    report = dict(machine=machine, gemm=gemm, cases={}, command=" ".join(["python -m benchmarks",
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
