"""How close a step's forwards run to this CPU's kernels: the floor under Reference and Fast (issue 42).

    OMNIVOICE_CACHE=/tmp/ov-cache python -m benchmarks.step_floor --model /work/models/full-int4 \
        [--backbone int8-row] --threads 2 [--reference /work/models/ckpt-full] [--json floor.json]

Issue 42 asks for Reference at 4.5x and Fast at 30x PyTorch's 32-step ``generate``.  The profile
(``profile_generation.py``) puts nearly all of a step in the backbone's weight products and attention.
This script measures, on this machine and in one process, what those two cost when nothing else runs:

* **the weight products**: every ``MatMulIntegerToFloat`` shape of the graph (``K x N``, how many per
  forward), alone in a one-node graph, its activations already int8 (no quantisation), at the step's row
  counts: the conditional row (``--cond``, 275 positions: a 5 s auto-voice step), the unconditional row
  (``--uncond``, 125: the target alone) and both rows in one product (400: what packing them would give);
* **attention**: the graph's own ``GroupQueryAttention`` node (its attributes, rotary caches and
  ``causal=0``), alone, at each row's length;
* **the step as the engine runs it**: the graph's two forwards side by side (``hidden_states_pair``).

The floor of a guided step is the cheaper of the products at 400 rows and the products at 275 plus 125,
plus both rows' attention: what a step would cost if every other node (norms, the per-row activation
quantisation, reshapes, the scheduler's gaps between nodes) cost nothing.  The floor of a generation
counts the forwards its preset runs on 125 target frames (``unmask_schedule``, ``guidance_schedule``:
Reference 32 guided steps, Fast 8 steps of which 4 guided; ``--candidate`` adds any configuration in
``omnivoice eval``'s form, e.g. ``preset=fast,num_step=4``, to see how few forwards a target would take:
their quality is for ``omnivoice eval`` to measure on the real weights).  With ``--reference`` (a PyTorch checkpoint
folder: its 32-step ``generate`` of ``targets.py``'s text and 5 s, timed in this run after the rest) or
``--pytorch-seconds``, it prints the highest ratio to PyTorch that each floor allows: no graph that
computes these products and this attention on these kernels can beat it.  The backbone is the engine's
build of ``--backbone`` from ``--model`` (made into our cache if it is not there yet), or ``--graph``.
The heads, sampling and the codec (about 9% of a Reference generation on ``int8-row``) are left out, so
the real bound is lower still.
"""

from __future__ import annotations

import argparse
import collections
import concurrent.futures
import json
import pathlib
import sys
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from omnivoice_demo.runtime.machine import cpu_name  # noqa: E402

WEIGHT_PRODUCT = "MatMulIntegerToFloat"
#: the engine's 8-bit builds whose weight products are ``MatMulIntegerToFloat`` (int8-block's are not)
DENSE_EIGHT_BIT = ("int8-row", "int8", "int8-tensor")
ATTENTION = "GroupQueryAttention"


def session(model, threads: int):
    """A CPU session of ``model`` (a ``ModelProto`` or a graph file) with the engine's options (``session_options``)."""
    import onnxruntime as ort

    from omnivoice_demo.runtime.sessions import session_options

    source = str(model) if isinstance(model, pathlib.Path) else model.SerializeToString()
    return ort.InferenceSession(source, session_options(threads), providers=["CPUExecutionProvider"])


def timed(run, repeats: int) -> float:
    """The fastest of ``repeats`` calls after two uncounted ones, in wall seconds: a floor is a best case,
    and the forwards it is compared with are taken the same way, so noise from other work on the machine
    moves neither."""
    run()
    run()
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return min(times)


def product_shapes(graph) -> collections.Counter:
    """``(K, N)`` of every weight product in the graph, counted."""
    shapes = {init.name: tuple(init.dims) for init in graph.initializer}
    found = collections.Counter(shapes[node.input[1]] for node in graph.node if node.op_type == WEIGHT_PRODUCT)
    if not found:
        raise SystemExit(f"the graph has no {WEIGHT_PRODUCT} nodes: give a dense 8-bit backbone "
                         "(int8-row, int8 or int8-tensor, built into the cache by the engine)")
    return found


def product_seconds(k: int, n: int, rows: int, threads: int, repeats: int) -> float:
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    weights = rng.integers(-127, 128, (k, n), dtype=np.int8)
    graph = helper.make_graph(
        [helper.make_node(WEIGHT_PRODUCT, ["a", "w", "a_scale", "w_scale", "a_zero"], ["y"], domain="com.microsoft")],
        "product",
        [helper.make_tensor_value_info("a", TensorProto.UINT8, [rows, k])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [rows, n])],
        [numpy_helper.from_array(weights, "w"), numpy_helper.from_array(np.float32(0.01), "a_scale"),
         numpy_helper.from_array(np.full(n, 0.01, np.float32), "w_scale"),
         numpy_helper.from_array(np.uint8(128), "a_zero")])  # as the graph's per-row codes: uint8, zero point 128
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])
    run = session(model, threads)
    feed = {"a": rng.integers(0, 256, (rows, k), dtype=np.uint8)}
    return timed(lambda: run.run(None, feed), repeats)


def attention_node(graph) -> tuple:
    """The graph's first attention node: ``(node, attributes, rotary caches, head size)``."""
    from onnx import helper

    node = next(node for node in graph.node if node.op_type == ATTENTION)
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    initializers = {init.name: init for init in graph.initializer}
    caches = [initializers[name] for name in node.input[7:9] if name in initializers]
    if len(caches) != 2:
        raise SystemExit("the attention node's rotary caches are not among the graph's initializers")
    return node, attrs, caches, int(caches[0].dims[1]) * 2  # the caches hold half a head's angles


def hidden_size(graph) -> int:
    """The residual stream's width: the first RMSNorm's weight."""
    initializers = {init.name: init for init in graph.initializer}
    norm = next(node for node in graph.node if node.op_type == "SimplifiedLayerNormalization")
    return int(initializers[norm.input[1]].dims[0])


def attention_seconds(full_graph, rows: int, threads: int, repeats: int) -> float:
    """The graph's first attention node alone at ``rows`` positions, no past (a step's whole forward)."""
    from onnx import TensorProto, helper

    node, attrs, caches, head_dim = attention_node(full_graph)
    heads, kv_heads = int(attrs["num_heads"]), int(attrs["kv_num_heads"])
    names = ["q", "k", "v", "past_k", "past_v", "seqlens_k", "total", *[c.name for c in caches]]
    inputs = [helper.make_tensor_value_info("q", TensorProto.FLOAT, [1, rows, heads * head_dim]),
              helper.make_tensor_value_info("k", TensorProto.FLOAT, [1, rows, kv_heads * head_dim]),
              helper.make_tensor_value_info("v", TensorProto.FLOAT, [1, rows, kv_heads * head_dim]),
              helper.make_tensor_value_info("past_k", TensorProto.FLOAT, [1, kv_heads, 0, head_dim]),
              helper.make_tensor_value_info("past_v", TensorProto.FLOAT, [1, kv_heads, 0, head_dim]),
              helper.make_tensor_value_info("seqlens_k", TensorProto.INT32, [1]),
              helper.make_tensor_value_info("total", TensorProto.INT32, [])]
    gqa = helper.make_node(ATTENTION, names, ["out", "present_k", "present_v"], domain="com.microsoft", **attrs)
    graph = helper.make_graph([gqa], "attention", inputs,
                              [helper.make_tensor_value_info("out", TensorProto.FLOAT, None)], caches)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])
    run = session(model, threads)
    rng = np.random.default_rng(0)
    feed = {"q": rng.standard_normal((1, rows, heads * head_dim), dtype=np.float32),
            "k": rng.standard_normal((1, rows, kv_heads * head_dim), dtype=np.float32),
            "v": rng.standard_normal((1, rows, kv_heads * head_dim), dtype=np.float32),
            "past_k": np.zeros((1, kv_heads, 0, head_dim), np.float32),
            "past_v": np.zeros((1, kv_heads, 0, head_dim), np.float32),
            "seqlens_k": np.array([rows - 1], np.int32), "total": np.array(rows, np.int32)}
    return timed(lambda: run.run(["out"], feed), repeats)


def step_seconds(path: pathlib.Path, cond: int, uncond: int, threads: int, repeats: int, hidden: int,
                 head_dim: int) -> dict:
    """The real graph: each row's forward alone, and both side by side as ``hidden_states_pair`` runs them."""
    backbone = session(path, threads)
    inputs = {i.name: i for i in backbone.get_inputs()}

    def feed(rows: int) -> dict:
        rng = np.random.default_rng(rows)
        values = {"inputs_embeds": (rng.standard_normal((1, rows, hidden)) * 0.05).astype(np.float32),
                  "attention_mask": np.ones((1, rows), np.int64)}
        for name, info in inputs.items():
            if name.startswith("past_key_values."):
                values[name] = np.zeros((1, info.shape[1], 0, head_dim), np.float32)
        return values

    first, second = feed(cond), feed(uncond)
    worker = concurrent.futures.ThreadPoolExecutor(1)

    def pair():
        pending = worker.submit(backbone.run, ["hidden_states"], second)
        backbone.run(["hidden_states"], first)
        pending.result()

    return {"cond_s": timed(lambda: backbone.run(["hidden_states"], first), repeats),
            "uncond_s": timed(lambda: backbone.run(["hidden_states"], second), repeats),
            "pair_s": timed(pair, repeats)}


def built_graph(model: str, backbone: str, threads: int) -> pathlib.Path:
    """The graph file of the engine's ``backbone`` build of ``model``, made into our cache if it is not there yet
    (``backbones.choice.cached_backbone``, which the engine builds with)."""
    from omnivoice_demo.backbones.choice import cached_backbone
    from omnivoice_demo.engine.onnx_model import OmniVoiceOnnx
    from omnivoice_demo.runtime.sessions import providers_for, session_options
    from omnivoice_demo.storage.manifest import BACKBONE_GRAPHS

    folder = pathlib.Path(model)
    return cached_backbone(folder / BACKBONE_GRAPHS["backbone"], backbone, OmniVoiceOnnx(folder, threads=threads),
                           providers_for("cpu"), lambda: session_options(threads))


def pytorch_seconds(checkpoint: str, threads: int) -> float:
    """Wall seconds of PyTorch's 32-step ``generate`` (``targets.pytorch_baseline``: its text, duration and seed),
    after a 2-step warm-up: the baseline of issue 42's ratios."""
    from benchmarks.targets import pytorch_baseline

    generate = pytorch_baseline(checkpoint, threads)
    generate(2)
    started = time.perf_counter()
    generate(32)
    return round(time.perf_counter() - started, 2)


def forwards(config, frames: int) -> tuple[int, int]:
    """(guided steps, conditional-only steps) a ``GenerationConfig`` runs on ``frames`` target frames."""
    from omnivoice_demo.engine.sampling import guidance_schedule, unmask_schedule

    schedule = unmask_schedule(frames, 8, config.num_step, config.t_shift)
    guided = guidance_schedule(schedule, config.guidance_every)
    steps = [k > 0 for k in schedule]
    return sum(guided), sum(steps) - sum(guided)


def print_table(summary: dict) -> None:
    """The summary as the table docs/speed.md shows."""
    from benchmarks.targets import TARGETS

    print(f"\n{summary['cpu']}, {summary['threads']} threads, {summary['graph']}, rows {summary['positions']}; "
          f"a guided step: floor {summary['floor_s']['pair']:.3f} s, measured {summary['measured_s']['pair_s']:.3f} s "
          f"({summary['pair_over_floor']:.2f}x the floor); PyTorch's 32-step generate: {summary['pytorch_s']} s")
    print("| preset | forwards | backbone floor s | backbone measured s | best x PyTorch the floor allows | "
          "x PyTorch at the measured backbone | target |")
    print("|---|---|---|---|---|---|---|")
    for name, row in summary["presets"].items():
        forwards_run = 2 * row["guided_steps"] + row["conditional_only_steps"]
        print(f"| {name} | {forwards_run} | {row['backbone_floor_s']:.2f} | {row['backbone_measured_s']:.2f} | "
              f"{row.get('best_ratio_to_pytorch', '-')} | {row.get('ratio_at_measured_backbone', '-')} | "
              f"{f'{TARGETS[name]}x' if name in TARGETS else '-'} |")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--model", help="a model folder: the engine's --backbone build of it is measured")
    source.add_argument("--graph", help="a dense 8-bit backbone graph (llm_decoder.onnx)")
    parser.add_argument("--backbone", default="int8-row", choices=DENSE_EIGHT_BIT,
                        help="with --model: a dense 8-bit build")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--cond", type=int, default=275)
    parser.add_argument("--uncond", type=int, default=125)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--reference", help="a PyTorch checkpoint folder: its 32-step generate is timed in this run")
    parser.add_argument("--pytorch-seconds", type=float, help="PyTorch's 32-step generate on this machine")
    parser.add_argument("--candidate", action="append", default=[], metavar="SPEC",
                        help="also a configuration as omnivoice eval takes it (e.g. preset=fast,num_step=4): its "
                             "forwards' floor, to see what a target would take; its quality is eval's to measure")
    parser.add_argument("--json")
    args = parser.parse_args(argv)

    import onnx

    path = pathlib.Path(args.graph) if args.graph else built_graph(args.model, args.backbone, args.threads)
    full = onnx.load(str(path))  # the attention node's rotary caches are among its initializers
    shapes = product_shapes(full.graph)
    layers = sum(1 for node in full.graph.node if node.op_type == ATTENTION)
    row_counts = {"cond": args.cond, "uncond": args.uncond, "both": args.cond + args.uncond}
    products = {name: 0.0 for name in row_counts}
    for (k, n), count in sorted(shapes.items()):
        for name, rows in row_counts.items():
            seconds = product_seconds(k, n, rows, args.threads, args.repeats)
            products[name] += count * seconds
            print(json.dumps({"product": f"{k}x{n}", "per_forward": count, "rows": rows, "ms": round(seconds * 1e3, 3),
                              "gops": round(2 * rows * k * n / seconds / 1e9)}), flush=True)
    attention = {name: layers * attention_seconds(full.graph, rows, args.threads, args.repeats)
                 for name, rows in row_counts.items() if name != "both"}
    hidden, head_dim = hidden_size(full.graph), attention_node(full.graph)[3]
    del full
    measured = step_seconds(path, args.cond, args.uncond, args.threads, args.repeats, hidden, head_dim)

    pytorch_s = args.pytorch_seconds or (pytorch_seconds(args.reference, args.threads) if args.reference else None)
    cond_floor = products["cond"] + attention["cond"]
    pair_floor = min(products["both"], products["cond"] + products["uncond"]) + attention["cond"] + attention["uncond"]
    summary = {
        "cpu": cpu_name(), "threads": args.threads, "graph": path.parent.name, "layers": layers,
        "positions": [args.cond, args.uncond],
        "weight_products_s": {name: round(value, 6) for name, value in products.items()},
        "attention_s": {name: round(value, 6) for name, value in attention.items()},
        "floor_s": {"cond": round(cond_floor, 6), "pair": round(pair_floor, 6)},
        "measured_s": {name: round(value, 4) for name, value in measured.items()},
        "pair_over_floor": round(measured["pair_s"] / pair_floor, 3),
        "pytorch_s": pytorch_s,
        "presets": {},
    }
    from omnivoice_demo.eval.candidates import parse_candidate
    from omnivoice_demo.settings.generation import GenerationConfig

    configs = {name: GenerationConfig.preset(name) for name in ("reference", "fast")}
    configs.update({candidate.name: candidate.config for candidate in map(parse_candidate, args.candidate)})
    for preset, config in configs.items():
        guided, alone = forwards(config, args.uncond)
        floor = guided * pair_floor + alone * cond_floor
        now = guided * measured["pair_s"] + alone * measured["cond_s"]
        row = {"guided_steps": guided, "conditional_only_steps": alone, "backbone_floor_s": round(floor, 6),
               "backbone_measured_s": round(now, 6)}
        if pytorch_s:
            row["best_ratio_to_pytorch"] = round(pytorch_s / floor, 2)
            row["ratio_at_measured_backbone"] = round(pytorch_s / now, 2)
        summary["presets"][preset] = row
    print(json.dumps(summary), flush=True)
    print_table(summary)
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
