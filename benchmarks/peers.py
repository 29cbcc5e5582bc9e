"""The peers side by side: each runtime run on this machine on the same weights, text, step count and threads,
taking turns with ours in one invocation.

    OMNIVOICE_CACHE=/work/models/cache python benchmarks/peers.py --model /work/models/full-int4 \
        --reference /work/models/ckpt-full --ggml-cli PATH/omnivoice-tts --ggml-models PATH/models \
        --openvino-python PATH/bin/python --threads 2 --rounds 2 [--json out.json]

The runs, in an order that rotates from round to round (each after one warm-up):

* ours at the Reference preset (32 steps, guidance on every step) and at Fast (8 steps, guidance on every
  second), the engine as ``--backbone`` chooses (``auto``);
* the PyTorch reference's ``OmniVoice.generate`` (fp32, 32 steps, guidance on every step) of ``--reference``;
* the GGML port ``omnivoice.cpp`` (``--ggml-cli``, its ``omnivoice-tts``) on the GGUFs its own ``convert.py`` made
  of the same checkpoint, the backbone quantised to ``--ggml-quant`` (Q8_0) by its own tool, the codec F32: 32 steps
  and 8 steps, guidance on every step (its only schedule), the thread count from ``OMNIVOICE_CPP_THREADS``, which
  the port reads only with ``ggml_peer_threads.patch`` applied (it has no thread flag).  No build of it is kept
  here: ``bash benchmarks/build_ggml_peer.sh --dest DIR --checkpoint CKPT`` clones it at the recorded commit,
  applies that patch, builds it and converts the checkpoint with its own tools, and records what it built in
  ``DIR/peer-build.json``, which this script reports;
* OpenVINO (``--openvino-python``: a Python with ``openvino`` beside this project's packages) running our loop's
  backbone and codec decoder on the same folder's weights (``peer_runtimes.py``), at both presets.

Ours, PyTorch and OpenVINO each run in a worker process (``peer_runtimes.py``) that loads once; the port is
one process per generation, as its command line runs.  Each run records the wall seconds (for the port the
whole process, its loading included), the synthesis seconds (the generation; for the port its own
``[Perf] Total``), RTF (synthesis over seconds of audio), the process's peak resident memory, the load average
before it and the cores other processes took during it (``/proc/stat`` less the run's own CPU seconds: the
machine may be shared).  ``x ours`` is the synthesis time over ours at the same step count and guidance
(Reference for 32 steps, Fast for 8), paired within each round, median over the rounds.  A peer that is
not given or not installed is named as such and left out of the table.

The figures other projects published on other CPUs are printed after, marked as published, never rerun here.
The command line, our commit and each peer's version are printed first and kept in ``--json``.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import pathlib
import re
import shlex
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from benchmarks.peer_runtimes import DURATION, RESULT, text  # noqa: E402
from omnivoice_demo.backbones.probe import busy_cpu_seconds  # noqa: E402
from omnivoice_demo.runtime.machine import cpu_name  # noqa: E402

#: published CPU figures of other OmniVoice runtimes: (name, RTF, threads, CPU, source); not rerun here
PUBLISHED = [
    ("CrispASR ggml port, Q8", 0.39, 8, "not stated", "CrispASR issue #254"),
    ("OpenVINO, W8A8", 0.59, 20, "Intel i7-14700 (20 cores)", "k2-fsa/OmniVoice issue #152"),
]
#: run -> (peer, what it runs, the run of ours it is compared with, what the peer's runner is asked)
RUNS = {
    "ours-reference": ("ours", "Reference: 32 steps, guidance every step", "ours-reference", "reference"),
    "ours-fast": ("ours", "Fast: 8 steps, guidance every 2nd step", "ours-fast", "fast"),
    "pytorch-32": ("pytorch", "32 steps, guidance every step", "ours-reference", "steps32"),
    "ggml-32": ("ggml", "32 steps, guidance every step", "ours-reference", "32"),
    "ggml-8": ("ggml", "8 steps, guidance every step", "ours-fast", "8"),
    "openvino-reference": ("openvino", "Reference: 32 steps, guidance every step", "ours-reference", "reference"),
    "openvino-fast": ("openvino", "Fast: 8 steps, guidance every 2nd step", "ours-fast", "fast"),
}
NAMES = {"ours": "ours (ONNX Runtime)", "pytorch": "PyTorch reference, fp32", "ggml": "GGML port omnivoice.cpp",
         "openvino": "OpenVINO (our loop, its backbone and decoder)"}
BUILD_GGML = "bash benchmarks/build_ggml_peer.sh --dest DIR --checkpoint CKPT"
PERF_TOTAL = re.compile(r"\[Perf\] Total ([0-9.]+) ms \(T=(\d+), audio ([0-9.]+) s")
CPU_FLAGS = ("avx2", "avx512f", "avx512_vnni", "avx512_bf16", "avx_vnni", "amx_tile", "amx_int8", "amx_bf16")


def our_commit() -> str | None:
    """This checkout's commit, ``-dirty`` when its tracked files differ from it; None outside git."""
    try:
        found = subprocess.run(["git", "describe", "--always", "--dirty", "--abbrev=12"], capture_output=True,
                               text=True, timeout=30, cwd=pathlib.Path(__file__).resolve().parent.parent)
    except (OSError, subprocess.SubprocessError):
        return None
    return found.stdout.strip() or None


def command_line(argv: list[str]) -> str:
    """The command as run, with the cache folder it used."""
    cache = os.environ.get("OMNIVOICE_CACHE")
    return (f"OMNIVOICE_CACHE={shlex.quote(cache)} " if cache else "") + shlex.join(["python", "benchmarks/peers.py",
                                                                                   *argv])


def package_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def cpu_flags() -> list[str]:
    try:
        info = pathlib.Path("/proc/cpuinfo").read_text(encoding="utf-8")
    except OSError:
        return []
    flags = next((line.split(":", 1)[1].split() for line in info.splitlines() if line.startswith("flags")), [])
    return [flag for flag in CPU_FLAGS if flag in flags]


class Worker:
    """A ``peer_runtimes`` worker process: loads its runtime once, then one generation per ``run``."""

    def __init__(self, python: str, kind: str, model: str, args, log: pathlib.Path):
        command = [python, "-m", "benchmarks.peer_runtimes", "--kind", kind, "--model", model, "--threads",
                   str(args.threads), "--seed", str(args.seed), "--backbone", args.backbone]
        self.log = log
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                        stderr=log.open("w"), cwd=pathlib.Path(__file__).resolve().parent.parent)
        self.facts = self._answer()

    def _answer(self) -> dict:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            if line.startswith(RESULT):
                return json.loads(line[len(RESULT):])
        tail = self.log.read_text(encoding="utf-8", errors="replace")[-1500:]
        raise RuntimeError(f"the worker stopped (exit {self.process.wait()}); its log ends:\n{tail}")

    def run(self, name: str) -> dict:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps({"run": name}) + "\n")
        self.process.stdin.flush()
        return self._answer()

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        self.process.wait(timeout=60)


class GgmlPort:
    """The port's ``omnivoice-tts``: one process per generation, its peak memory and CPU from ``wait4``."""

    def __init__(self, cli: pathlib.Path, models: pathlib.Path, quant: str, args, scratch: pathlib.Path):
        self.cli, self.args, self.scratch = cli, args, scratch
        self.model = models / f"omnivoice-base-{quant}.gguf"
        self.codec = models / "omnivoice-tokenizer-F32.gguf"
        missing = [str(p) for p in (self.model, self.codec) if not p.is_file()]
        if missing:
            raise FileNotFoundError(f"not in --ggml-models: {', '.join(missing)}")
        usage = subprocess.run([str(cli), "--help"], capture_output=True, text=True, timeout=60)
        self.facts = {"version": (usage.stderr or usage.stdout).splitlines()[0].strip(), "model": self.model.name,
                      "codec": self.codec.name, "threads_env": "OMNIVOICE_CPP_THREADS"}
        record = cli.resolve().parent.parent / "peer-build.json"  # build_ggml_peer.sh's: DIR/build/omnivoice-tts
        if record.is_file():
            self.facts["build"] = json.loads(record.read_text(encoding="utf-8"))
        self.generate(1)  # warm-up: the GGUFs into the page cache

    def generate(self, steps: int) -> dict:
        out = self.scratch / "ggml.wav"
        command = [str(self.cli), "--model", str(self.model), "--codec", str(self.codec), "--duration",
                   f"{DURATION:g}", "--seed", str(self.args.seed), "--steps", str(steps), "-o", str(out)]
        env = {**os.environ, "OMNIVOICE_CPP_THREADS": str(self.args.threads)}
        with tempfile.TemporaryFile("w+") as stdin, tempfile.TemporaryFile("w+") as log:
            stdin.write(text())
            stdin.seek(0)
            started = time.perf_counter()
            process = subprocess.Popen(command, stdin=stdin, stdout=log, stderr=log, env=env)
            _, status, usage = os.wait4(process.pid, 0)
            wall = time.perf_counter() - started
            process.returncode = os.waitstatus_to_exitcode(status)
            log.seek(0)
            printed = log.read()
        found = PERF_TOTAL.search(printed)
        if process.returncode != 0 or found is None:
            raise RuntimeError(f"{self.cli.name} exited {process.returncode} without its [Perf] Total line:\n"
                               f"{printed[-1500:]}")
        return {"wall_s": round(wall, 3), "synth_s": round(float(found.group(1)) / 1000, 3),
                "cpu_s": round(usage.ru_utime + usage.ru_stime, 3), "audio_s": float(found.group(3)),
                "peak_rss_mb": round(usage.ru_maxrss / 1024)}

    def run(self, name: str) -> dict:
        return self.generate(int(name))

    def close(self) -> None:
        pass


def has_openvino(python: str) -> bool:
    probe = subprocess.run([python, "-c", "import openvino"], capture_output=True, timeout=120)
    return probe.returncode == 0


def start_peers(args, scratch: pathlib.Path) -> tuple[dict, dict]:
    """``(peer -> runner, peer -> why it is not run)``; ours always runs."""
    runners: dict = {}
    absent: dict = {}
    python = sys.executable
    runners["ours"] = Worker(python, "ours", args.model, args, scratch / "ours.log")
    if not args.reference:
        absent["pytorch"] = "not run: give --reference (the PyTorch checkpoint folder)"
    else:
        runners["pytorch"] = Worker(python, "pytorch", args.reference, args, scratch / "pytorch.log")
        runners["pytorch"].facts["omnivoice"] = package_version("omnivoice")  # the worker runs this Python
    build = (f"build it with `{BUILD_GGML}`, then give --ggml-cli DIR/build/omnivoice-tts and "
             "--ggml-models DIR/models")
    if not args.ggml_cli or not args.ggml_models:
        absent["ggml"] = f"not installed: {build}"
    elif not pathlib.Path(args.ggml_cli).is_file():
        absent["ggml"] = f"not installed: no program at --ggml-cli {args.ggml_cli}; {build}"
    else:
        runners["ggml"] = GgmlPort(pathlib.Path(args.ggml_cli), pathlib.Path(args.ggml_models), args.ggml_quant, args,
                                   scratch)
    ov_python = args.openvino_python or python
    if not has_openvino(ov_python):
        absent["openvino"] = (f"not installed: {ov_python} has no openvino; give --openvino-python (a Python with "
                              "openvino beside this project's packages)")
    else:
        runners["openvino"] = Worker(ov_python, "openvino", args.model, args, scratch / "openvino.log")
    return runners, absent


def measure(runners: dict, rounds: int, only: list[str]) -> list[dict]:
    labels = [label for label, (peer, *_) in RUNS.items() if peer in runners and (not only or label in only)]
    table = []
    for index in range(rounds):
        row = {}
        for label in labels[index % len(labels):] + labels[:index % len(labels)]:
            load = os.getloadavg()[0]
            busy, started = busy_cpu_seconds(), time.perf_counter()
            peer, _, _, request = RUNS[label]
            result = runners[peer].run(request)
            wall = time.perf_counter() - started
            after = busy_cpu_seconds()
            others = None if busy is None or after is None else max(after - busy - result["cpu_s"], 0.0) / wall
            row[label] = {**result, "load": round(load, 2), "others_cores": None if others is None else round(others, 2),
                          "rtf": round(result["synth_s"] / result["audio_s"], 3)}
            print(json.dumps({"round": index, "run": label, **row[label]}), flush=True)  # a long run shows as it ends
        table.append(row)
    return table


def summary(rounds: list[dict]) -> dict:
    """run -> medians over the rounds and the paired ratio of its synthesis time to ours."""
    out = {}
    for label in rounds[0]:
        peer, what, mate, _ = RUNS[label]
        runs = [row[label] for row in rounds]
        out[label] = {"peer": peer, "runs": what, "compared_with": mate,
                      **{key: statistics.median(run[key] for run in runs)
                         for key in ("wall_s", "synth_s", "rtf", "audio_s")},
                      "peak_rss_mb": max(run["peak_rss_mb"] for run in runs),
                      "loads": [run["load"] for run in runs], "others_cores": [run["others_cores"] for run in runs],
                      "x_ours": statistics.median(row[label]["synth_s"] / row[mate]["synth_s"] for row in rounds)
                      if mate in rounds[0] else None}
    return out


def versions(facts: dict) -> str:
    """Each peer's commit or version, as its runner reported it."""
    said = []
    if "ours" in facts:
        said.append(f"ours {facts['ours'].get('commit') or 'commit unknown'} (onnxruntime {facts['ours'].get('onnxruntime')})")
    if "pytorch" in facts:
        said.append(f"PyTorch {facts['pytorch'].get('torch')}, omnivoice {facts['pytorch'].get('omnivoice')}")
    if "ggml" in facts:
        build = facts["ggml"].get("build")
        said.append(facts["ggml"]["version"] + (f", ggml {build['ggml']['commit'][:7]} from {build['ggml']['source']}, "
                                                f"{' '.join(build['cmake'])}" if build else
                                                ", ggml unknown (no peer-build.json beside its build folder)"))
    if "openvino" in facts:
        said.append(f"OpenVINO {facts['openvino'].get('openvino')}")
    return "; ".join(said)


def markdown(result: dict) -> str:
    lines = [f"CPU {result['cpu']} ({', '.join(result['cpu_flags']) or 'flags unknown'}), {result['threads']} threads, "
             f"{result['rounds']} round(s), {DURATION:g} s of speech", "", f"Versions: {versions(result['facts'])}",
             "", "| runtime | runs | wall s | synthesis s | RTF | peak RSS MB | load before | others' cores | "
             "x ours (synthesis) |", "|---|---|---|---|---|---|---|---|---|"]
    for row in result["summary"].values():
        loads = ", ".join(f"{x:.1f}" for x in row["loads"])
        others = ", ".join("?" if x is None else f"{x:.2f}" for x in row["others_cores"])
        lines.append(f"| {NAMES[row['peer']]} | {row['runs']} | {row['wall_s']:.1f} | {row['synth_s']:.2f} | "
                     f"{row['rtf']:.2f} | {row['peak_rss_mb']:.0f} | {loads} | {others} | "
                     + (f"{row['x_ours']:.2f}x (vs {row['compared_with']}) |" if row["x_ours"] else "not run |"))
    for peer, why in result["not_run"].items():
        lines.append(f"\n{NAMES[peer]}: {why}")
    lines += ["", "Published by other projects on other CPUs (not rerun here):", "",
              "| runtime | RTF | threads | CPU | source |", "|---|---|---|---|---|"]
    lines += [f"| {name} | {rtf:.2f} | {threads} | {cpu} | {source} (published) |"
              for name, rtf, threads, cpu, source in PUBLISHED]
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", required=True, help="our model folder (the int4 folder of the checkpoint)")
    parser.add_argument("--reference", help="the PyTorch checkpoint folder (the same weights)")
    parser.add_argument("--ggml-cli", help="omnivoice.cpp's omnivoice-tts, built by hand")
    parser.add_argument("--ggml-models", help="the folder of the port's GGUFs of the same checkpoint")
    parser.add_argument("--ggml-quant", default="Q8_0", help="the backbone GGUF's type (omnivoice-base-TYPE.gguf)")
    parser.add_argument("--openvino-python", help="a Python with openvino beside this project's packages")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--backbone", default="auto")
    parser.add_argument("--runs", help=f"only these runs, comma-separated (of {', '.join(RUNS)})")
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    unknown = set(args.runs.split(",")) - set(RUNS) if args.runs else set()
    if unknown:
        parser.error(f"unknown run {', '.join(sorted(unknown))}; the runs are {', '.join(RUNS)}")
    command, commit = command_line(sys.argv[1:] if argv is None else argv), our_commit()
    print(json.dumps({"command": command, "commit": commit}), flush=True)  # the log's head says what ran
    with tempfile.TemporaryDirectory(prefix="omnivoice-peers-") as scratch:
        runners, absent = start_peers(args, pathlib.Path(scratch))
        try:
            facts = {peer: runner.facts for peer, runner in runners.items()}
            facts["ours"]["commit"] = commit
            rounds = measure(runners, args.rounds, args.runs.split(",") if args.runs else [])
        finally:
            for runner in runners.values():
                runner.close()
    result = {"command": command, "cpu": cpu_name(), "cpu_flags": cpu_flags(), "threads": args.threads,
              "rounds": args.rounds, "facts": facts, "not_run": absent, "runs": rounds, "summary": summary(rounds)}
    print()
    print(markdown(result))
    print("\n" + json.dumps({"facts": facts}))
    if args.json:
        target = pathlib.Path(args.json)
        temporary = target.with_name(target.name + ".tmp")
        temporary.write_text(json.dumps(result, indent=1), encoding="utf-8")
        temporary.replace(target)
    return 0


if __name__ == "__main__":
    sys.exit(main())
