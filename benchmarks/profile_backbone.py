"""Where the backbone's time goes: ONNX Runtime's per-operator profile, int4 against fp32.

    python benchmarks/profile_backbone.py --model /work/models/int4 --threads 2 \
        [--lengths 128,256,512,1024] [--profile-length 256] [--json out.json] [--markdown out.md]

For each way of running the same int4 folder's backbone -- as built (``MatMulNBits``,
block 32, accuracy level 4: int8 activations), and dequantized once at load into
fp32 ``MatMul`` (``omnivoice_demo.backbones.dequantize``) -- each with and without IO
binding (inputs and the output bound to buffers that are reused across calls):

* the wall seconds of one forward at each length (best of ``--repeats`` rounds
  that take turns between the variants: ``dequantize.alternated_best``), and
  the int4 / fp32 time ratio (what ``backbone="auto"`` decides on);
* ONNX Runtime's profiler (``SessionOptions.enable_profiling``) at
  ``--profile-length``: the share of each operator type;
* the GEMM operators' rate: the FLOPs of the graph's matrix products (2*M*K*N
  from each ``MatMulNBits``' K and N) over the time the profiler gives those
  nodes, against this machine's dense GEMM throughput through ONNX Runtime
  (``throughput.gemm_throughput``: int8 ``MatMulInteger`` for int4, fp32
  ``MatMul`` for fp32) -- the "fraction of the int8 rate" of issue 10.

All variants run in one process, one after another, so their ratios are
comparable even on a noisy machine; say which CPU (``lscpu`` flags are printed).
"""

from __future__ import annotations

import argparse
import collections
import json
import pathlib
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from benchmarks.throughput import gemm_throughput  # noqa: E402
from omnivoice_demo.backbones.choice import dequantized_backbone  # noqa: E402
from omnivoice_demo.backbones.dequantize import alternated_best  # noqa: E402
from omnivoice_demo.storage.manifest import BACKBONE_GRAPHS  # noqa: E402
from omnivoice_demo.engine.onnx_model import OmniVoiceOnnx
from omnivoice_demo.runtime.sessions import open_session, providers_for, session_options  # noqa: E402
from omnivoice_demo.runtime.machine import cpu_name  # noqa: E402

GEMM_OPS = {"MatMulNBits", "MatMul", "FusedMatMul", "Gemm", "MatMulInteger", "DynamicQuantizeMatMul"}


def matmul_shapes(path: pathlib.Path) -> list[tuple[int, int]]:
    """(K, N) of every 4-bit MatMulNBits in the backbone graph (the weights' matrix products)."""
    import onnx

    graph = onnx.load(str(path), load_external_data=False).graph
    shapes = []
    for node in graph.node:
        if node.op_type == "MatMulNBits":
            attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
            shapes.append((int(attrs["K"]), int(attrs["N"])))
    return shapes


class Runner:
    """One backbone session, called as the engine calls it, optionally through IO binding."""

    def __init__(self, model: OmniVoiceOnnx, session, io_binding: bool):
        self.model, self.session, self.io_binding = model, session, io_binding
        self.cache: dict[int, tuple] = {}

    def __call__(self, embeds: np.ndarray) -> None:
        if not self.io_binding:
            self.model.backbone = self.session
            self.model.hidden_states(embeds, [embeds.shape[1]])
            return
        import onnxruntime as ort

        length = embeds.shape[1]
        if length not in self.cache:  # buffers made once per length, then reused
            binding = self.session.io_binding()
            feeds = {"inputs_embeds": ort.OrtValue.ortvalue_from_numpy(embeds.astype(self.model.embeds_type)),
                     "attention_mask": ort.OrtValue.ortvalue_from_numpy(
                         np.ones((1, length), dtype=self.model.mask_type))}
            for name in self.model.past_names:
                feeds[name] = ort.OrtValue.ortvalue_from_numpy(
                    np.zeros((1, self.model.kv_heads, 0, self.model.head_dim), dtype=self.model.past_type))
            for name, value in feeds.items():
                binding.bind_ortvalue_input(name, value)
            out = ort.OrtValue.ortvalue_from_shape_and_type([1, length, self.model.hidden_size], np.float32)
            binding.bind_ortvalue_output("hidden_states", out)
            for output in self.session.get_outputs():
                if output.name != "hidden_states":
                    binding.bind_output(output.name)
            self.cache[length] = (binding, feeds, out)
        binding, feeds, _ = self.cache[length]
        feeds["inputs_embeds"].update_inplace(embeds.astype(self.model.embeds_type, copy=False))
        self.session.run_with_iobinding(binding)


def profile_ops(make_session, model: OmniVoiceOnnx, embeds: np.ndarray, repeats: int, threads: int) -> dict[str, float]:
    """Seconds per forward of each operator type, from ONNX Runtime's profiler."""
    with tempfile.TemporaryDirectory() as tmp:
        options = session_options(threads)
        options.enable_profiling = True
        options.profile_file_prefix = str(pathlib.Path(tmp) / "backbone")
        session = make_session(options)
        run = Runner(model, session, io_binding=False)
        run(embeds)
        for _ in range(repeats):
            run(embeds)
        trace = json.loads(pathlib.Path(session.end_profiling()).read_text())
    per_op: dict[str, float] = collections.defaultdict(float)
    calls = repeats + 1
    for event in trace:
        if event.get("cat") == "Node" and event.get("name", "").endswith("_kernel_time"):
            per_op[event["args"]["op_name"]] += event["dur"] / 1e6 / calls
    return dict(sorted(per_op.items(), key=lambda item: -item[1]))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="a model folder with an int4 backbone (cpu profile)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--lengths", default="128,256,512,1024", help="positions per forward to time")
    parser.add_argument("--profile-length", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--no-io-binding", action="store_true", help="skip the IO-binding variants")
    parser.add_argument("--json", default=None)
    parser.add_argument("--markdown", default=None)
    args = parser.parse_args(argv)

    folder = pathlib.Path(args.model)
    path = folder / BACKBONE_GRAPHS["backbone"]
    providers = providers_for("cpu")
    model = OmniVoiceOnnx(folder, threads=args.threads)
    shapes = matmul_shapes(path)
    if not shapes:
        parser.error(f"{path} has no 4-bit MatMulNBits: give an int4 (cpu profile) folder")
    flags = subprocess.run("lscpu | grep -o -E 'avx512_vnni|avx512f|avx_vnni|avx2|amx_tile' | sort -u",
                           shell=True, capture_output=True, text=True).stdout.split()
    rates = gemm_throughput(args.threads)
    info = dict(model=str(folder), threads=args.threads, cpu=cpu_name(), cpu_flags=flags,
                gemm_rate_gflops={k: round(v / 1e9, 1) for k, v in rates.items()}, command=" ".join(sys.argv))
    print(json.dumps(info), flush=True)

    built = model.backbone
    dequantized, added = dequantized_backbone(path, providers, session_options(args.threads))
    makers = {"int4": lambda options: open_session(path, providers, options),
              "fp32": lambda options: dequantized_backbone(path, providers, options)[0]}
    sessions = {"int4": built, "fp32": dequantized}
    variants = [(kind, io) for kind in ("int4", "fp32") for io in ((False,) if args.no_io_binding else (False, True))]
    runners = {variant: Runner(model, sessions[variant[0]], io_binding=variant[1]) for variant in variants}
    lengths = [int(x) for x in args.lengths.split(",")]
    rng = np.random.default_rng(0)
    rows = {variant: dict(backbone=variant[0], io_binding=variant[1]) for variant in variants}
    for length in lengths:
        embeds = (0.02 * rng.standard_normal((1, length, model.hidden_size))).astype(np.float32)
        best = alternated_best({variant: (lambda run=run, embeds=embeds: run(embeds)) for variant, run in runners.items()},
                               args.repeats)
        for variant, seconds in best.items():
            rows[variant][f"s_at_{length}"] = round(seconds, 4)
    rows = list(rows.values())
    for row in rows:
        print(json.dumps(row), flush=True)
    profiles = {}
    embeds = (0.02 * rng.standard_normal((1, args.profile_length, model.hidden_size))).astype(np.float32)
    gemm_flops = sum(2.0 * args.profile_length * k * n for k, n in shapes)
    for kind in ("int4", "fp32"):
        ops = profile_ops(makers[kind], model, embeds, args.repeats, args.threads)
        total = sum(ops.values())
        gemm = sum(seconds for op, seconds in ops.items() if op in GEMM_OPS)
        limit = rates["int8" if kind == "int4" else "fp32"]
        profiles[kind] = dict(
            op_seconds={op: round(s, 4) for op, s in ops.items()},
            op_share={op: round(s / total, 3) for op, s in ops.items()},
            gemm_share=round(gemm / total, 3),
            gemm_kernel_gflops=round(gemm_flops / gemm / 1e9, 1),
            gemm_kernel_fraction=round(gemm_flops / gemm / limit, 3),
            against="int8 MatMulInteger" if kind == "int4" else "fp32 MatMul")
        print(json.dumps(dict(backbone=kind, **profiles[kind])), flush=True)
    plain = {r["backbone"]: r for r in rows if not r["io_binding"]}
    ratios = {length: round(plain["int4"][f"s_at_{length}"] / plain["fp32"][f"s_at_{length}"], 3) for length in lengths}
    summary = dict(int4_over_fp32_seconds=ratios, fp32_added_mb=round(added / 2**20, 1))
    print(json.dumps(summary), flush=True)
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(dict(info=info, rows=rows, profiles=profiles,
                                                           summary=summary), indent=1))
    if args.markdown:
        pathlib.Path(args.markdown).write_text(markdown(info, rows, profiles, summary, lengths, args.profile_length))
    return 0


def markdown(info, rows, profiles, summary, lengths, profile_length) -> str:
    lines = [f"CPU: {info['cpu']} ({', '.join(info['cpu_flags'])}), {info['threads']} threads; dense GEMM through "
             f"ONNX Runtime: fp32 {info['gemm_rate_gflops']['fp32']} GFLOP/s, int8 {info['gemm_rate_gflops']['int8']} GOP/s.",
             "", "| backbone | IO binding | " + " | ".join(f"s at {n}" for n in lengths) + " |",
             "|---|---|" + "---|" * len(lengths)]
    for row in rows:
        lines.append(f"| {row['backbone']} | {'yes' if row['io_binding'] else 'no'} | "
                     + " | ".join(str(row[f's_at_{n}']) for n in lengths) + " |")
    lines += ["", "int4 / fp32 seconds: " + ", ".join(f"{n}: {r}" for n, r in summary["int4_over_fp32_seconds"].items()),
              "", f"Profile at {profile_length} positions (share of operator time):", "",
              "| backbone | GEMM share | GEMM kernel GFLOP/s | fraction of the dense rate | top operators |",
              "|---|---|---|---|---|"]
    for kind, p in profiles.items():
        top = ", ".join(f"{op} {share:.1%}" for op, share in list(p["op_share"].items())[:5])
        lines.append(f"| {kind} | {p['gemm_share']:.1%} | {p['gemm_kernel_gflops']} | "
                     f"{p['gemm_kernel_fraction']:.2f} of {p['against']} | {top} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())
