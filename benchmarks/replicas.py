"""Requests per minute and latency (p50, p95) of ``omnivoice serve --replicas N`` at the Fast preset, for each N
given, in one run (issue 52): the scaling shape on this machine, not a record.

    python -m benchmarks.replicas --model /work/models/full-int4 --replicas 1,2 --requests 12 \
        [--clients 2] [--backbone int4] [--replica-threads 1] [--text paragraph] [--preset reference]

Requests sent together (issue 58): ``--clients 6 --requests 6 --text paragraph`` sends six paragraphs at once;
the span is the time until the last one is whole.

For each N: starts ``python -m omnivoice_demo serve --replicas N --replica-threads T`` (a local Ray cluster) on a
free port, waits until ``/health`` has answered from N replicas, sends one warm-up request per replica, then
``--requests`` requests from ``--clients`` clients at once (closed loop: each client sends its next request when
its answer is whole), the same text (``TEXT``, or ``PARAGRAPH`` with ``--text paragraph``; seed 1, voice ``alloy``,
WAV, not streamed, preset ``--preset``, default ``fast``).
Prints per N: requests per minute over the measured span, p50 and p95 of the request latency, which replicas
answered, and the ratio of requests per minute to the first N's.  The machine's CPU and load are printed first.
"""

from __future__ import annotations

import argparse
import collections
import concurrent.futures
import os
import pathlib
import platform
import signal
import subprocess
import sys
import time

import httpx
import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
TEXT = "The quick brown fox jumps over the lazy dog near the river bank."
PARAGRAPH = ("The old lighthouse keeper climbed the winding stairs every evening. He lit the great lamp and "
             "wiped the salt from the glass. Far below, the ships passed safely through the narrow channel. "
             "He watched them until the first grey light of morning, then wrote their names in his book.")


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def machine() -> str:
    flags = ""
    try:
        info = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10).stdout
        name = next((line.split(":", 1)[1].strip() for line in info.splitlines() if line.startswith("Model name")), "")
        have = [flag for flag in ("avx512f", "avx512_vnni", "amx_tile") if f" {flag}" in info]
        flags = f"{name}, {os.cpu_count()} CPUs, flags: {' '.join(have) or 'none of avx512f/vnni/amx'}"
    except OSError:
        flags = platform.processor()
    load = os.getloadavg()
    return f"{flags}; load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}"


def start(args, replicas: int, log: pathlib.Path) -> tuple[subprocess.Popen, str]:
    port = free_port()
    command = [sys.executable, "-m", "omnivoice_demo", "serve", "--model", args.model, "--port", str(port),
               "--replicas", str(replicas), "--replica-threads", str(args.replica_threads),
               "--max-queue", str(args.clients * 2)]
    if args.backbone:
        command += ["--backbone", args.backbone]
    if args.precision:
        command += ["--precision", args.precision]
    env = dict(os.environ, HF_HUB_OFFLINE="1", OMP_NUM_THREADS=str(args.replica_threads),
               RAY_USAGE_STATS_ENABLED="0")
    process = subprocess.Popen(command, cwd=ROOT, stdout=open(log, "w"), stderr=subprocess.STDOUT, env=env)
    return process, f"http://127.0.0.1:{port}"


def wait_replicas(process, url: str, replicas: int, timeout: float) -> set:
    seen: set = set()
    deadline = time.monotonic() + timeout
    while len(seen) < replicas:
        if process.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"serve --replicas {replicas} did not start (its log has why)")
        try:
            answer = httpx.get(url + "/health", timeout=5)
            if answer.status_code == 200:   # the proxy's answer over every replica's report
                seen = {replica["id"] for replica in answer.json().get("replicas", []) if replica.get("model")}
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    return seen


def one(url: str, text: str = TEXT, preset: str = "fast") -> tuple[float, str]:
    started = time.perf_counter()
    answer = httpx.post(url + "/v1/audio/speech", timeout=900,
                        json={"input": text, "voice": "alloy", "response_format": "wav", "stream": False,
                              "preset": preset, "seed": 1})
    answer.raise_for_status()
    return time.perf_counter() - started, answer.headers.get("X-OmniVoice-Replica", "?")


def measure(args, replicas: int, workdir: pathlib.Path) -> dict:
    process, url = start(args, replicas, workdir / f"serve-{replicas}.log")
    try:
        ids = wait_replicas(process, url, replicas, args.start_timeout)
        with concurrent.futures.ThreadPoolExecutor(replicas) as pool:   # each replica's first request
            list(pool.map(lambda _: one(url), range(replicas)))
        text = PARAGRAPH if args.text == "paragraph" else TEXT
        started = time.perf_counter()
        with concurrent.futures.ThreadPoolExecutor(args.clients) as pool:
            results = list(pool.map(lambda _: one(url, text, args.preset), range(args.requests)))
        span = time.perf_counter() - started
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(120)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    latencies = np.array([seconds for seconds, _ in results])
    return {"replicas": replicas, "ids": len(ids), "requests": len(results), "span": span,
            "per_minute": 60.0 * len(results) / span, "p50": float(np.percentile(latencies, 50)),
            "p95": float(np.percentile(latencies, 95)),
            "answered": dict(collections.Counter(replica for _, replica in results))}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", required=True)
    parser.add_argument("--precision", default=None)
    parser.add_argument("--backbone", default=None, help="e.g. int4 (no 8-bit build or timing at start)")
    parser.add_argument("--replicas", default="1,2")
    parser.add_argument("--replica-threads", type=int, default=1)
    parser.add_argument("--requests", type=int, default=12)
    parser.add_argument("--clients", type=int, default=2)
    parser.add_argument("--text", choices=("short", "paragraph"), default="short")
    parser.add_argument("--preset", choices=("fast", "balanced", "reference"), default="fast")
    parser.add_argument("--start-timeout", type=float, default=900)
    parser.add_argument("--workdir", default="/tmp/omnivoice-bench-replicas")
    args = parser.parse_args(argv)
    workdir = pathlib.Path(args.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    print(f"machine: {machine()}")
    print(f"text: {PARAGRAPH if args.text == 'paragraph' else TEXT!r}, preset {args.preset}, "
          f"{args.requests} requests from {args.clients} clients, "
          f"{args.replica_threads} thread(s) a replica")
    rows = []
    for replicas in [int(n) for n in args.replicas.split(",")]:
        row = measure(args, replicas, workdir)
        rows.append(row)
        base = rows[0]["per_minute"]
        print(f"replicas {replicas}: {row['per_minute']:.1f} requests/min ({row['per_minute'] / base:.2f}x the "
              f"first), p50 {row['p50']:.2f} s, p95 {row['p95']:.2f} s, {row['requests']} requests in "
              f"{row['span']:.1f} s, answered by {row['answered']}", flush=True)
    print(f"machine after: {machine()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
