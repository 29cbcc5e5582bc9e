"""Per-core comparison: our presets on this machine next to the published figures of other CPU runtimes.

    OMNIVOICE_CACHE=/tmp/ov-cache python benchmarks/peers.py --model /work/models/full-int4 --threads 2
    python benchmarks/peers.py --from-json targets.json     # reuse benchmarks/targets.py's rounds

Ours: one generation of 5 s of speech per preset (Reference, Balanced, Fast) after a warm-up, the presets
taking turns over ``--rounds`` rounds (median wall seconds), with the load average before each run.
Peers: the figures their authors published, with the thread count and where they said it (``PEERS``);
none of them is rerun here.

The per-core column is RTF x threads: core-seconds per second of speech.  It assumes a runtime scales
linearly with threads, which none does, so it flatters nobody at few threads and overstates the cost of
a run made on many (8 or 20) threads; read it as a rough guide.  The CPUs differ too (our VM is a 2-core
AMD EPYC with AVX-512 VNNI; the peers' are named in their rows).
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from omnivoice_demo.runtime.machine import cpu_name  # noqa: E402

#: published CPU figures of other OmniVoice runtimes: (name, RTF, threads, CPU, source)
PEERS = [
    ("CrispASR ggml port, Q8", 0.39, 8, "not stated", "CrispASR issue #254"),
    ("OpenVINO, W8A8", 0.59, 20, "Intel i7-14700 (20 cores)", "k2-fsa/OmniVoice issue #152"),
]
PRESETS = ("reference", "balanced", "fast")
DURATION = 5.0


def measure(model: str, threads: int, rounds: int, backbone: str) -> dict:
    from omnivoice_demo import OmniVoiceEngine
    from omnivoice_demo.settings.generation import GenerationConfig
    from omnivoice_demo.eval.quick_bench import TEXTS

    engine = OmniVoiceEngine(model, threads=threads, verify="size", backbone=backbone)
    engine.backbone_watch.close()
    configs = {p: GenerationConfig.preset(p).replace(seed=1, duration=DURATION) for p in PRESETS}
    engine.generate(TEXTS["medium"], config=configs["fast"])  # warm-up
    runs: dict = {p: [] for p in PRESETS}
    for index in range(rounds):
        order = PRESETS[index % 3:] + PRESETS[:index % 3]
        for preset in order:
            load = os.getloadavg()[0]
            started = time.perf_counter()
            result = engine.generate(TEXTS["medium"], config=configs[preset])
            wall = time.perf_counter() - started
            runs[preset].append({"wall_s": wall, "audio_s": result.duration, "load": load})
    return {"cpu": cpu_name(), "threads": threads, "backbone": engine.backbone_choice["compute"],
            "rtf": {p: statistics.median(r["wall_s"] / r["audio_s"] for r in rs) for p, rs in runs.items()},
            "loads": {p: [round(r["load"], 1) for r in rs] for p, rs in runs.items()}}


def from_targets(path: str) -> dict:
    """The Reference and Fast rows of a ``benchmarks/targets.py --json`` file (its median RTF)."""
    data = json.loads(pathlib.Path(path).read_text(encoding="utf-8"))
    rounds = data["rounds"]
    return {"cpu": data["cpu"], "threads": data["threads"], "backbone": str(data["backbone"].get("compute", "")),
            "rtf": {p: statistics.median(r[p]["rtf"] for r in rounds) for p in ("reference", "fast")},
            "loads": {p: [r[p]["load"] for r in rounds] for p in ("reference", "fast")},
            "pytorch_rtf": statistics.median(r["pytorch"]["rtf"] for r in rounds)}


def table(ours: dict) -> str:
    lines = ["| runtime | RTF | threads | core-s per s of speech | CPU | source |", "|---|---|---|---|---|---|"]
    for preset, rtf in ours["rtf"].items():
        loads = ", ".join(str(x) for x in ours["loads"][preset])
        lines.append(f"| ours, {preset} | {rtf:.2f} | {ours['threads']} | {rtf * ours['threads']:.2f} | "
                     f"{ours['cpu']} (load before: {loads}) | this run |")
    if "pytorch_rtf" in ours:
        rtf = ours["pytorch_rtf"]
        lines.append(f"| PyTorch reference, 32 steps | {rtf:.2f} | {ours['threads']} | {rtf * ours['threads']:.2f} | "
                     f"{ours['cpu']} | this run |")
    for name, rtf, threads, cpu, source in PEERS:
        lines.append(f"| {name} | {rtf:.2f} | {threads} | {rtf * threads:.2f} | {cpu} | {source} (published) |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--backbone", default="auto")
    parser.add_argument("--from-json", help="a benchmarks/targets.py --json file instead of measuring")
    args = parser.parse_args()
    if not args.model and not args.from_json:
        parser.error("give --model to measure, or --from-json")
    ours = from_targets(args.from_json) if args.from_json else measure(args.model, args.threads, args.rounds,
                                                                       args.backbone)
    print(f"ours: {ours['cpu']}, {ours['threads']} threads, backbone {ours['backbone']}")
    print(table(ours))


if __name__ == "__main__":
    main()
