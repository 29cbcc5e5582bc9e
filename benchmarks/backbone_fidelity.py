"""Every backbone choice side by side: speed of one forward, fidelity to fp32, memory; PyTorch in the same run.

    python -m convert.random_checkpoint --size full --outliers --output /work/models/ckpt-outliers
    python -m convert --model /work/models/ckpt-outliers --output /work/models/full-int4 --device cpu
    python -m convert --model /work/models/ckpt-outliers --output /work/models/full-fp32 --device cpu_fp32 --no-higgs
    python benchmarks/backbone_fidelity.py --fp32 /work/models/full-fp32 --int4 /work/models/full-int4 \
        --checkpoint /work/models/ckpt-outliers --threads 2 [--lengths 256,512] [--repeats 3] \
        [--weights /work/models/ckpt-outliers] [--json out.json] [--markdown out.md] [--write-table]

Fidelity (``omnivoice_demo.backbones.fidelity.compare``): every choice built from the fp32 folder and
from the int4 folder of the same planted-outlier checkpoint, and with ``--weights`` (the checkpoint's
``model.safetensors``, no torch) every choice built on the int4 folder from the original weights
(``backbone_weights=``), against the fp32 folder's own forward: the hidden states' mean cosine and the
greedy audio codes' agreement.  With ``--weights`` the speed rows add ``int8-row`` and ``int8-block``
from the original weights and ``int8-row`` from the int4 folder, in the same rounds.
``--write-table`` stores these figures as ``omnivoice_demo/data/backbone_fidelity.json``,
the gate of ``backbone="auto"``.

Speed: one backbone forward at each length, best of ``--repeats`` rounds that take turns
between the choices (``dequantize.alternated_best``), and the PyTorch backbone
(``OmniVoice.llm``, SDPA, bidirectional mask) on the same checkpoint in the same rounds;
ratios against fp32 and int4 from the same run.  The choices are timed as built from the
fp32 folder (their speed does not depend on where the weights came from) plus int4 as built.
Say which CPU: the ``lscpu`` flags that matter are printed.
"""

from __future__ import annotations

import argparse
import gc
import json
import pathlib
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from omnivoice_demo.backbones.choice import _build  # noqa: E402
from omnivoice_demo.backbones.dequantize import alternated_best  # noqa: E402
from omnivoice_demo.backbones.fidelity import GATE_TOLERANCE, TABLE, check_sequence, compare  # noqa: E402
from omnivoice_demo.storage.manifest import BACKBONE_GRAPHS  # noqa: E402
from omnivoice_demo.engine.onnx_model import OmniVoiceOnnx
from omnivoice_demo.runtime.sessions import providers_for, session_options  # noqa: E402
from omnivoice_demo.runtime.machine import cpu_name, peak_rss_mb  # noqa: E402

CHOICES = {"fp32": ("as built", "int8-block", "int8", "int8-row", "int8-tensor"),
           "int4": ("as built", "fp32", "int8-block", "int8", "int8-row", "int8-tensor"),
           "checkpoint": ("fp32", "int8-block", "int8", "int8-row", "int8-tensor")}


def cpu_flags() -> str:
    try:
        flags = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return ""
    line = next((row for row in flags.splitlines() if row.startswith("Flags")), "")
    wanted = ("avx2", "avx512f", "avx512_vnni", "avx_vnni", "amx_int8", "amx_tile", "avx512_bf16")
    return " ".join(flag for flag in wanted if f" {flag}" in line)


def session_of(model, source: str, choice: str, folder: pathlib.Path, threads: int, cache: pathlib.Path,
               weights=None):
    if choice == "as built":
        return model.backbone, 0
    session, added, *_ = _build(model, choice, folder / BACKBONE_GRAPHS["backbone"], providers_for("cpu"),
                                lambda: session_options(threads), cache, weights if source == "checkpoint" else None)
    return session, added


def fidelity_rows(folders: dict, threads: int, cache: pathlib.Path, length: int, weights=None,
                  sources=tuple(CHOICES)) -> dict:
    reference = OmniVoiceOnnx(folders["fp32"], threads=threads)
    ids, mask = check_sequence(reference, length)
    table = {}
    for source, choices in CHOICES.items():
        if source not in sources or (source == "checkpoint" and weights is None):
            continue
        model = OmniVoiceOnnx(folders["int4" if source == "checkpoint" else source], threads=threads)
        built = model.backbone
        for choice in choices:
            started = time.perf_counter()
            session, added = session_of(model, source, choice, folders["int4" if source == "checkpoint" else source],
                                        threads, cache, weights)
            model.backbone = session
            name = source if choice == "as built" else choice
            row = compare(reference, model, ids, mask)
            row["weights_mb"] = round(added / 2**20, 1)
            table.setdefault(f"from_{source}", {})[name] = row
            print(f"fidelity {source:>4} -> {name:<11} {row}  ({time.perf_counter() - started:.1f} s)", flush=True)
            model.backbone = built
            del session
            gc.collect()
    return table


def torch_backbone(checkpoint: str, threads: int):
    import torch
    from omnivoice import OmniVoice

    torch.set_num_threads(threads)
    model = OmniVoice.from_pretrained(checkpoint, attn_implementation="sdpa").eval()

    def forward(embeds: np.ndarray):
        length = embeds.shape[1]
        with torch.inference_mode():
            mask = torch.ones((1, 1, length, length), dtype=torch.bool)
            model.llm(inputs_embeds=torch.from_numpy(embeds), attention_mask=mask)

    return forward


def speed_rows(folders: dict, threads: int, cache: pathlib.Path, lengths: list[int], repeats: int,
               checkpoint: str | None, weights=None, only: tuple = ()) -> dict:
    fp32 = OmniVoiceOnnx(folders["fp32"], threads=threads)
    int4 = OmniVoiceOnnx(folders["int4"], threads=threads)
    made = {"fp32": lambda: (fp32, fp32.backbone), "int4": lambda: (int4, int4.backbone)}
    for choice in ("int8-block", "int8", "int8-row", "int8-tensor"):
        made[choice] = lambda c=choice: (fp32, session_of(fp32, "fp32", c, folders["fp32"], threads, cache)[0])
    if weights is not None:
        made["int8-row (int4 folder)"] = lambda: (int4, session_of(int4, "int4", "int8-row", folders["int4"], threads,
                                                                   cache)[0])
        for choice in ("int8-row", "int8-block"):
            made[f"{choice} (original weights)"] = lambda c=choice: (int4, session_of(
                int4, "checkpoint", c, folders["int4"], threads, cache, weights)[0])
    sessions = {label: make() for label, make in made.items() if not only or label in only}
    runs_torch = torch_backbone(checkpoint, threads) if checkpoint else None
    seconds = {}
    for length in lengths:
        embeds = (0.02 * np.random.default_rng(0).standard_normal((1, length, int4.hidden_size))).astype(np.float32)

        def run(model, session, embeds=embeds, length=length):
            model.backbone = session
            model.hidden_states(embeds, [length])

        runs = {label: (lambda m=m, s=s: run(m, s)) for label, (m, s) in sessions.items()}
        if runs_torch:
            runs["pytorch fp32"] = lambda embeds=embeds: runs_torch(embeds)
        best = alternated_best(runs, repeats)
        seconds[length] = {label: round(value, 4) for label, value in best.items()}
        print(f"speed L={length}: {seconds[length]}", flush=True)
    return seconds


def markdown(report: dict) -> str:
    lengths = sorted(report["speed_s"], key=int)
    lines = [f"CPU: {report['cpu']} ({report['cpu_flags']}), {report['threads']} threads, "
             f"onnxruntime {report['onnxruntime']}", "",
             "| backbone | " + " | ".join(f"{n} positions (s)" for n in lengths)
             + " | x fp32 | x int4 | cosine (from fp32 / from int4) | codes agreement (from fp32 / from int4) |"
             " passes the gate |", "|---" * (len(lengths) + 6) + "|"]
    fid = report["fidelity"]
    int4_row = fid["from_int4"]["int4"]
    for label in next(iter(report["speed_s"].values())):
        times = [report["speed_s"][n][label] for n in lengths]
        last = report["speed_s"][lengths[-1]]
        ratio_fp32, ratio_int4 = (last[label] / last[base] if base in last else float("nan")
                                  for base in ("fp32", "int4"))
        choice, _, origin = label.partition(" (")
        a = fid["from_fp32"].get(choice, {"cosine": 1.0, "agreement": 1.0} if label == "fp32" else {})
        b = fid["from_int4"].get(choice, {})
        if origin:  # a choice timed as built from the original weights or from the int4 folder: that row only
            a = b = fid.get("from_checkpoint" if origin.startswith("original") else "from_int4", {}).get(choice, {})
        gate = "-" if label == "pytorch fp32" else ("yes" if all(
            b.get(k, a.get(k, 0)) >= int4_row[k] - GATE_TOLERANCE for k in ("cosine", "agreement")) else "**no**")
        lines.append(f"| {label} | " + " | ".join(f"{t:.3f}" for t in times)
                     + f" | {ratio_fp32:.2f} | {ratio_int4:.2f} | {a.get('cosine', '-')} / {b.get('cosine', '-')} | "
                     f"{a.get('agreement', '-')} / {b.get('agreement', '-')} | {gate} |")
    return "\n".join(lines) + "\n"


def fidelity_markdown(fidelity: dict) -> str:
    """The fidelity figures as a table: each choice from the fp32 and from the int4 folder, and the gate."""
    from omnivoice_demo.backbones.fidelity import passes_gate

    lines = ["| choice | from the fp32 folder: cosine / codes agreement | from the int4 folder: cosine / codes "
             "agreement | from the original weights: cosine / codes agreement | auto may choose it on an int4 folder "
             "(without / with the original weights) |", "|---|---|---|---|---|"]
    table = {key: fidelity.get(key, {}) for key in ("from_fp32", "from_int4", "from_checkpoint")}
    for choice in ("fp32", "int4", "int8-block", "int8-row", "int8", "int8-tensor"):
        a, b, c = (table[key].get(choice) for key in ("from_fp32", "from_int4", "from_checkpoint"))
        cell = lambda row: f"{row['cosine']:.3f} / {row['agreement']:.3f}" if row else "-"  # noqa: E731
        gate = "int4 itself" if choice == "int4" else " / ".join(
            "yes" if passes_gate(source, choice, table) else "no" for source in ("int4", "checkpoint"))
        lines.append(f"| `{choice}` | {cell(a)} | {cell(b)} | {cell(c)} | {gate} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    import onnxruntime

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fp32", required=True, help="fp32 folder of the planted-outlier checkpoint")
    parser.add_argument("--int4", required=True, help="int4 folder of the same checkpoint")
    parser.add_argument("--checkpoint", help="the PyTorch checkpoint, for the PyTorch row")
    parser.add_argument("--weights", help="the checkpoint's folder or model.safetensors: the rows built from the "
                                          "original weights (no torch)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--lengths", default="256,512")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--fidelity-length", type=int, default=256)
    parser.add_argument("--cache", default=None, help="where the 8-bit builds go (default: our cache)")
    parser.add_argument("--skip-speed", action="store_true")
    parser.add_argument("--speed-choices", default="",
                        help="comma-separated labels to time (default all), e.g. 'int4,int8-row (int4 folder),"
                             "int8-row (original weights)'")
    parser.add_argument("--sources", default=",".join(CHOICES),
                        help="whose fidelity rows to measure (fp32, int4, checkpoint); --write-table keeps the "
                             "table's rows of the others")
    parser.add_argument("--skip-fidelity", action="store_true",
                        help="time only; the fidelity columns come from the published table")
    parser.add_argument("--json")
    parser.add_argument("--markdown")
    parser.add_argument("--write-table", action="store_true", help=f"store the fidelity figures as {TABLE.name}")
    args = parser.parse_args(argv)
    folders = {"fp32": pathlib.Path(args.fp32), "int4": pathlib.Path(args.int4)}
    from omnivoice_demo.storage.cache import default_cache_dir

    cache = pathlib.Path(args.cache) if args.cache else default_cache_dir()
    from omnivoice_demo.hub.weights import backbone_weights

    weights = backbone_weights(args.weights, cache_dir=cache) if args.weights else None
    report = {"cpu": cpu_name(), "cpu_flags": cpu_flags(), "threads": args.threads,
              "onnxruntime": onnxruntime.__version__,
              "fidelity": (json.loads(TABLE.read_text(encoding="utf-8")) if args.skip_fidelity
                           else fidelity_rows(folders, args.threads, cache, args.fidelity_length, weights,
                                              tuple(args.sources.split(","))))}
    if not args.skip_speed:
        report["speed_s"] = speed_rows(folders, args.threads, cache, [int(n) for n in args.lengths.split(",")],
                                       args.repeats, args.checkpoint, weights,
                                       tuple(label for label in args.speed_choices.split(",") if label))
        report["peak_rss_mb"] = peak_rss_mb()
        text = markdown(report)
        print(text)
        if args.markdown:
            pathlib.Path(args.markdown).write_text(text, encoding="utf-8")
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(report, indent=1), encoding="utf-8")
    if args.write_table and not args.skip_fidelity:
        source = json.loads((folders["fp32"] / "omnivoice_manifest.json").read_text()).get("source", {})
        table = {"check": "full-size random checkpoint with planted outlier channels "
                          f"({source.get('random_weights', {})}), {args.fidelity_length} positions; "
                          "mean hidden-state cosine and greedy-code agreement against the fp32 folder",
                 "command": "python benchmarks/backbone_fidelity.py --fp32 FP32_FOLDER --int4 INT4_FOLDER --weights CHECKPOINT "
                            "--write-table",
                 "onnxruntime": onnxruntime.__version__, "cpu": report["cpu"],
                 **{key: value for key, value in json.loads(TABLE.read_text(encoding="utf-8")).items()
                    if key.startswith("from_")}, **report["fidelity"]}
        TABLE.write_text(json.dumps(table, indent=1) + "\n", encoding="utf-8")
        print(fidelity_markdown(table))
        print(f"wrote {TABLE}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
