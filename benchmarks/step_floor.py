"""How close the engine's forwards run to this CPU's kernels: the floor at the lengths a request really has.

    OMNIVOICE_CACHE=/tmp/ov-cache python -m benchmarks.step_floor --model /work/models/full-int4 \
        [--backbone int8-row] --threads 2 [--reference /work/models/ckpt-full | --pytorch-seconds S] \
        [--rounds 2] [--json floor.json]

Issue 48 (after issue 42): Reference at least 4.5x PyTorch's 32-step ``generate``, Fast at least 20x, and the
backbone within 1.15x of its floor.  The rows a step runs are not guessed: each request is planned by the
engine itself (``OmniVoiceEngine.prepare`` and the estimator's ``plan_work``, which build the conditional row
with ``build_condition_ids``): ``targets.py``'s text and 5 s as a voice design (what the targets measure), and
the same text cloned from a 4 s and a 10 s reference (``--requests``).  For each request and preset the steps
are those the engine runs: the conditional row whole or, between refreshes of a kept prompt, its target frames
on the prompt's keys and values; the unconditional row (the target frames alone) where the step is guided.

What a forward costs when nothing but the model's products and attention runs, on this machine, in one process:

* **the weight products as the model chains them**: one graph that holds every ``MatMulIntegerToFloat`` of the
  backbone, with its own weights and in the graph's order (a layer's products, x the layers), each fed
  activations already in int8 (no quantisation, no norms, no reshapes), timed at each row count a request
  runs.  Each product's output ends in a one-element ``Slice`` so that the graph's one output needs them all
  and ONNX Runtime prunes none.  The same products one node at a time (a one-node graph per shape, times
  how many the graph has) are printed beside it;
* **attention**: the folder's own ``GroupQueryAttention`` node (its attributes, rotary caches, ``causal=0``)
  alone, and the same node in ONNX's own operators (``backbones/attention.py``, what a rebuilt backbone runs),
  at each row's length and past (a kept prompt), times the layers: the faster of the two;
* **the products as built**: the same products from their activations in fp32, with what the build's arithmetic
  adds around each (``built_products_model``: one activation scale per row, the row scale, the outlier channels'
  fp32 product), copied from the graph: what the products cost in this runtime's operators (its CPU kernels have
  no product that quantises its activation per row: the row's scale and codes are passes of their own, and a
  per-row ``a_scale`` given to ``MatMulIntegerToFloat`` gives the same bits as the separate ``Mul``, no faster).
  A forward's "products as built" floor is these plus attention; the engine's distance to it is what the rest
  of a forward (norms, rotary, the gate, residuals, shapes) and running the two rows side by side cost.

These graphs are cut out of the backbone by ``floor_graphs.py``; this script plans the requests, times the
graphs and the engine, and reports.  A forward's floor is its products plus its attention; a guided step's floor takes the cheaper of its two rows'
products apart or packed in one product (what packing the rows would give).  A preset's backbone floor is the
sum over the steps the engine runs for that request.  It is set against the engine itself: the same request
generated (``--rounds`` times, the best kept), its stage timer's backbone seconds over the floor (the engine's
ratio to its floor), and its whole generation; and, for each request's guided whole step, the engine's two
forwards side by side (``hidden_states_pair``) over that step's floor.  With ``--reference`` (PyTorch's
32-step ``generate`` of the design, timed in this run after the rest) or ``--pytorch-seconds`` it prints, for
the design, the highest ratio to PyTorch each preset's backbone floor allows (no graph computing these
products and this attention on these kernels can beat it) and the ratio at the engine's backbone and whole
generation.  Heads, sampling and the codec are outside the floor.  ``--candidate`` adds any configuration in
``omnivoice eval``'s form (e.g. ``preset=fast,num_step=4``); its quality is for ``omnivoice eval`` to measure.
Say the machine's load (``uptime``) and CPU flags with the figures: the JSON records the load average before
each generation.  Every part is also timed in this process's CPU seconds, and each generation too: on a machine
that other work loads, a long call's wall time takes the others' share of the cores while a short one can run
between them, so there the CPU table (the floor's CPU seconds against the whole generation's) is the one that
compares them; the wall table is the idle machine's.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import pathlib
import sys
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from benchmarks.floor_graphs import (ATTENTION, WEIGHT_PRODUCT, attention_models,  # noqa: E402,F401
                                     built_products_model, chained_products_model, products_of,
                                     single_product_model)
from omnivoice_demo.runtime.machine import cpu_name  # noqa: E402

#: the engine's 8-bit builds whose weight products are ``MatMulIntegerToFloat`` (int8-block's are not)
DENSE_EIGHT_BIT = ("int8-row", "int8", "int8-tensor")
#: the requests measured: a voice design (the targets' request) and two clones, by their reference's seconds
REQUESTS = {"design": 0.0, "clone 4 s": 4.0, "clone 10 s": 10.0}


def session(model, threads: int, profiling: bool = False):
    """A CPU session of ``model`` (a ``ModelProto``, its serialized bytes or a graph file) with the engine's options
    (``session_options``), and ONNX Runtime's profiler on with ``profiling``."""
    import onnxruntime as ort

    from omnivoice_demo.runtime.sessions import session_options

    options = session_options(threads)
    options.enable_profiling = profiling
    source = (model if isinstance(model, bytes) else str(model) if isinstance(model, pathlib.Path)
              else model.SerializeToString())
    return ort.InferenceSession(source, options, providers=["CPUExecutionProvider"])


def step_of(products, attention, cond: int, past: int, uncond: int) -> float:
    """A step from its parts, ``products(rows)`` and ``attention(rows, past)``: the conditional row (``cond``
    positions on ``past`` kept ones) and, where guided, the unconditional row of ``uncond`` positions, their products
    apart or packed, whichever is cheaper."""
    if not uncond:
        return products(cond) + attention(cond, past)
    return min(products(cond) + products(uncond), products(cond + uncond)) + attention(cond, past) + attention(uncond, 0)


def built_feed(built_session, rows: int) -> dict:
    """Activations of ``rows`` positions for each input ``x<K>`` of the products as built (``built_products_model``)."""
    rng = np.random.default_rng(rows)
    return {item.name: rng.standard_normal((1, rows, int(item.name[1:])), dtype=np.float32)
            for item in built_session.get_inputs()}


def timed(run, repeats: int) -> tuple[float, float]:
    """The fastest of ``repeats`` calls after two uncounted ones: ``(wall seconds, this process's CPU seconds)``,
    each the least of the calls.  A floor is a best case, and the forwards it is compared with are taken the
    same way.  On a loaded machine the wall time of a long call cannot escape the other processes' share of
    the cores while a call of a few milliseconds can, so the CPU seconds (no runtime here spins while it
    waits: ``session_options``) are the figure that compares long and short calls there."""
    run()
    run()
    walls, cpus = [], []
    for _ in range(repeats):
        started, cpu = time.perf_counter(), time.process_time()
        run()
        walls.append(time.perf_counter() - started)
        cpus.append(time.process_time() - cpu)
    return min(walls), min(cpus)


class Floor:
    """The floor's parts on this machine, each measured once per row count (and past) and kept."""

    def __init__(self, model, threads: int, repeats: int, attention_graph=None):
        graph = model.graph
        self.threads, self.repeats = threads, repeats
        self.products = products_of(graph)
        self.widths = sorted({k for _, k, _ in self.products})
        self.shapes = collections.Counter((k, n) for _, k, n in self.products)
        attention_graph = attention_graph if attention_graph is not None else graph
        self.layers = sum(1 for node in attention_graph.node if node.op_type == ATTENTION)
        self.chain = session(chained_products_model(graph), threads)
        #: the products as built, serialized (``built_operator_ms`` profiles the same graph)
        self.built_graph = built_products_model(model).SerializeToString()
        self.built_chain = session(self.built_graph, threads)
        self.singles = {shape: session(single_product_model(*shape), threads) for shape in self.shapes}
        models, self.heads, self.kv_heads, self.head_dim = attention_models(graph, attention_graph)
        self.attention_sessions = {form: session(model, threads) for form, model in models.items()}
        self.chained_s: dict[int, float] = {}
        self.built_s: dict[int, float] = {}
        self.single_s: dict[int, float] = {}
        self.attention_s: dict[tuple[int, int], float] = {}
        self.cpu_s: dict[tuple, float] = {}   # ("chained", rows) or ("attention", rows, past): CPU seconds

    def chained(self, rows: int) -> float:
        """Every product of a forward of ``rows`` positions, as the model chains them."""
        if rows not in self.chained_s:
            rng = np.random.default_rng(rows)
            feed = {f"a{k}": rng.integers(0, 256, (rows, k), dtype=np.uint8) for k in self.widths}
            self.chained_s[rows], self.cpu_s[("chained", rows)] = timed(lambda: self.chain.run(None, feed),
                                                                        self.repeats)
            self.single_s[rows] = sum(count * self.single(k, n, rows) for (k, n), count in self.shapes.items())
            work = 2 * rows * sum(k * n for _, k, n in self.products)
            print(json.dumps({"products": len(self.products), "rows": rows,
                              "chained_ms": round(self.chained_s[rows] * 1e3, 2),
                              "one_node_at_a_time_ms": round(self.single_s[rows] * 1e3, 2),
                              "chained_gops": round(work / self.chained_s[rows] / 1e9)}), flush=True)
        return self.chained_s[rows]

    def built(self, rows: int) -> float:
        """Every product of a forward of ``rows`` positions as the build computes it (``built_products_model``)."""
        if rows not in self.built_s:
            feed = built_feed(self.built_chain, rows)
            self.built_s[rows], self.cpu_s[("built", rows)] = timed(lambda: self.built_chain.run(None, feed),
                                                                    self.repeats)
            print(json.dumps({"products_as_built": len(self.products), "rows": rows,
                              "built_ms": round(self.built_s[rows] * 1e3, 2),
                              "built_over_chained": round(self.built_s[rows] / self.chained(rows), 3)}), flush=True)
        return self.built_s[rows]

    def single(self, k: int, n: int, rows: int) -> float:
        feed = {"a": np.random.default_rng(rows).integers(0, 256, (rows, k), dtype=np.uint8)}
        return timed(lambda: self.singles[(k, n)].run(None, feed), self.repeats)[0]

    def attention(self, rows: int, past: int = 0) -> float:
        """Every layer's attention of ``rows`` new positions on ``past`` kept ones."""
        if (rows, past) not in self.attention_s:
            rng = np.random.default_rng(rows)
            kv = self.kv_heads * self.head_dim
            feed = {"q": rng.standard_normal((1, rows, self.heads * self.head_dim), dtype=np.float32),
                    "k": rng.standard_normal((1, rows, kv), dtype=np.float32),
                    "v": rng.standard_normal((1, rows, kv), dtype=np.float32),
                    "past_k": rng.standard_normal((1, self.kv_heads, past, self.head_dim), dtype=np.float32),
                    "past_v": rng.standard_normal((1, self.kv_heads, past, self.head_dim), dtype=np.float32),
                    "seqlens_k": np.array([past + rows - 1], np.int32), "total": np.array(past + rows, np.int32)}
            forms = {form: timed(lambda s=s: s.run(["out"], feed), self.repeats)
                     for form, s in self.attention_sessions.items()}
            self.attention_s[(rows, past)] = self.layers * min(wall for wall, _ in forms.values())
            self.cpu_s[("attention", rows, past)] = self.layers * min(cpu for _, cpu in forms.values())
            print(json.dumps({"attention_layers": self.layers, "rows": rows, "past": past,
                              "ms": round(self.attention_s[(rows, past)] * 1e3, 2),
                              **{f"{form}_ms": round(self.layers * wall * 1e3, 2)
                                 for form, (wall, _) in forms.items()}}), flush=True)
        return self.attention_s[(rows, past)]

    def step(self, cond: int, past: int, uncond: int) -> float:
        """A step's floor (``step_of``): the products alone and attention."""
        return step_of(self.chained, self.attention, cond, past, uncond)

    def built_step(self, cond: int, past: int, uncond: int) -> float:
        """``step`` with the products as the build computes them (``built``) instead of alone."""
        return step_of(self.built, self.attention, cond, past, uncond)

    def step_cpu(self, cond: int, past: int, uncond: int) -> float:
        """``step`` in CPU seconds (its parts measured by ``step`` first)."""
        self.step(cond, past, uncond)
        cpu = self.cpu_s
        return step_of(lambda rows: cpu[("chained", rows)], lambda rows, kept: cpu[("attention", rows, kept)],
                       cond, past, uncond)


def steps_of(work) -> list[tuple[int, int, int]]:
    """``(conditional positions, past, unconditional positions)`` of each forward-running step of a one-chunk
    ``PlanWork`` (``work.plan_work``: what the engine's loop runs)."""
    (chunk,) = work.chunks
    return [(chunk.conditional(whole), 0 if whole else chunk.prefix, chunk.frames if uncond else 0)
            for k, uncond, whole in zip(chunk.schedule, chunk.uncond, chunk.whole) if k > 0]


def clone_voice(engine, seconds: float):
    """A voice of ``seconds`` of reference frames (random codes) and a transcript of proportional length, as
    ``refresh_threshold.py`` makes them: the row lengths of a clone, without a codec encode."""
    from benchmarks.prompt_refresh_fidelity import TRANSCRIPT_10S
    from omnivoice_demo.constants import FRAME_RATE
    from omnivoice_demo.storage.voice_file import Voice

    words = TRANSCRIPT_10S.split()
    codes = np.random.default_rng(int(seconds)).integers(0, 1024, (engine.num_codebooks, int(seconds * FRAME_RATE)))
    return Voice(codes=codes.astype(np.int64), transcript=" ".join(words[:max(1, round(len(words) * seconds / 10))]),
                 rms=0.1)


def pytorch_seconds(checkpoint: str, threads: int) -> float:
    """Wall seconds of PyTorch's 32-step ``generate`` (``targets.pytorch_baseline``: its text, duration and seed),
    after a 2-step warm-up: the baseline of the targets' ratios."""
    from benchmarks.targets import pytorch_baseline

    generate = pytorch_baseline(checkpoint, threads)
    generate(2)
    started = time.perf_counter()
    generate(32)
    return round(time.perf_counter() - started, 2)


def built_operator_ms(built_graph: bytes, rows: int, threads: int) -> dict:
    """The products as built (``Floor.built_graph``) at ``rows`` positions, profiled by ONNX Runtime on one
    thread and on ``threads``, taking turns: ``{operator type: {"1": ms, str(threads): ms}}`` per forward.
    An operator that takes as long on both does not use the second thread."""
    from benchmarks.attention_forms import operator_ms
    from omnivoice_demo.runtime.sessions import run_options

    sessions = {str(count): session(built_graph, count, profiling=True) for count in sorted({1, threads})}
    feed = built_feed(next(iter(sessions.values())), rows)
    found = operator_ms(sessions, feed, run_options(), outputs=("out",))
    operators = sorted({op for ms in found.values() for op in ms}, key=lambda op: -found[str(threads)].get(op, 0.0))
    return {op: {label: round(found[label].get(op, 0.0), 3) for label in sessions} for op in operators}


def pair_seconds(engine, cond: int, uncond: int, repeats: int) -> float:
    """The engine's two forwards of a guided whole step side by side (``hidden_states_pair``), best of ``repeats``."""
    model = engine.model
    rng = np.random.default_rng(cond)
    first = ((rng.standard_normal((1, cond, model.hidden_size)) * 0.05).astype(np.float32), [cond])
    second = ((rng.standard_normal((1, uncond, model.hidden_size)) * 0.05).astype(np.float32), [uncond])
    return timed(lambda: model.hidden_states_pair(first, second), repeats)[0]


def print_table(summary: dict) -> None:
    """The summary as the tables docs/speed.md shows."""
    from benchmarks.targets import TARGETS

    print(f"\n{summary['cpu']}, {summary['threads']} threads, {summary['graph']}, load before/after "
          f"{summary['load_before']} / {summary['load_after']}; PyTorch's 32-step generate: {summary['pytorch_s']} s")
    print("| request | positions (prompt + target) | a guided whole step: floor s | products as built: floor s | "
          "engine's pair s | pair / floor |")
    print("|---|---|---|---|---|---|")
    for name, request in summary["requests"].items():
        step = request["guided_whole_step"]
        print(f"| {name} | {request['prefix']} + {request['frames']} | {step['floor_s']:.3f} | "
              f"{step['built_floor_s']:.3f} ({step['built_floor_over_floor']:.2f}x) | "
              f"{step['measured_s']:.3f} | {step['measured_over_floor']:.2f}x |")
    print("\n| request | preset | forwards | backbone floor s | products as built: floor s | engine's backbone s | "
          "engine / floor | engine / products-as-built floor | engine's generation s | best x PyTorch the floor allows | "
          "x PyTorch at the products-as-built floor | x PyTorch at the engine's backbone | "
          "x PyTorch, whole generation | target |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name, request in summary["requests"].items():
        for preset, row in request["presets"].items():
            print(f"| {name} | {preset} | {row['forwards']} | {row['backbone_floor_s']:.2f} | "
                  f"{row['built_floor_s']:.2f} ({row['built_floor_over_floor']:.2f}x) | "
                  f"{row['backbone_measured_s']:.2f} | {row['backbone_over_floor']:.2f}x | "
                  f"{row['backbone_over_built_floor']:.2f}x | {row['generation_s']:.2f} | "
                  f"{row.get('best_ratio_to_pytorch', '-')} | {row.get('ratio_at_built_floor', '-')} | "
                  f"{row.get('ratio_at_measured_backbone', '-')} | "
                  f"{row.get('ratio_of_generation', '-')} | "
                  f"{f'{TARGETS[preset]}x' if name == 'design' and preset in TARGETS else '-'} |")
    if "built_operators_ms" in summary:
        profiled = summary["built_operators_ms"]
        threads = str(summary["threads"])
        print(f"\n| operator, the products as built at {profiled['rows']} rows | ms per forward, 1 thread | "
              f"ms, {threads} threads | 1 thread / {threads} |")
        print("|---|---|---|---|")
        for op, ms in profiled["operators"].items():
            ratio = f"{ms['1'] / ms[threads]:.2f}" if ms.get(threads) else "-"
            print(f"| {op} | {ms['1']:.2f} | {ms.get(threads, 0.0):.2f} | {ratio} |")
    print("\n| request | preset | backbone floor, CPU s | engine's whole generation, CPU s | generation / floor (CPU) |")
    print("|---|---|---|---|---|")
    for name, request in summary["requests"].items():
        for preset, row in request["presets"].items():
            print(f"| {name} | {preset} | {row['floor_cpu_s']:.2f} | {row['generation_cpu_s']:.2f} | "
                  f"{row['generation_cpu_over_floor_cpu']:.2f}x |")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", required=True, help="a model folder: the engine's --backbone build of it is measured")
    parser.add_argument("--backbone", default="int8-row", choices=DENSE_EIGHT_BIT, help="a dense 8-bit build")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--requests", default=",".join(REQUESTS), help=f"of {', '.join(REQUESTS)}")
    parser.add_argument("--repeats", type=int, default=7, help="timings of each floor part (the best is kept)")
    parser.add_argument("--rounds", type=int, default=2, help="generations of each request and preset (the best)")
    parser.add_argument("--reference", help="a PyTorch checkpoint folder: its 32-step generate is timed in this run")
    parser.add_argument("--pytorch-seconds", type=float, help="PyTorch's 32-step generate on this machine")
    parser.add_argument("--candidate", action="append", default=[], metavar="SPEC",
                        help="also a configuration as omnivoice eval takes it (e.g. preset=fast,num_step=4): its "
                             "forwards' floor, to see what a target would take; its quality is eval's to measure")
    parser.add_argument("--profile-rows", type=int, default=0,
                        help="also profile the products as built at this many rows, on one thread and on --threads: "
                             "what each operator of the per-row arithmetic costs, and which run on one thread")
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    unknown = [name for name in args.requests.split(",") if name not in REQUESTS]
    if unknown:
        raise SystemExit(f"unknown request {unknown[0]!r}: choose among {', '.join(REQUESTS)}")

    import onnx

    from benchmarks.targets import DURATION
    from omnivoice_demo.engine.loop import OmniVoiceEngine
    from omnivoice_demo.eval.candidates import parse_candidate
    from omnivoice_demo.eval.quick_bench import TEXTS
    from omnivoice_demo.settings.generation import GenerationConfig
    from omnivoice_demo.storage.manifest import BACKBONE_GRAPHS

    load_before = os.getloadavg()
    engine = OmniVoiceEngine(args.model, threads=args.threads, verify="size", backbone=args.backbone)
    engine.backbone_watch.close()  # no background probe during the runs
    if engine.backbone_choice.get("choice") != args.backbone or not engine.backbone_choice.get("cache"):
        raise SystemExit(f"the engine did not run a {args.backbone} build: {engine.backbone_choice.get('compute')}")
    path = pathlib.Path(engine.backbone_choice["cache"]) / BACKBONE_GRAPHS["backbone"]
    folder_graph = onnx.load(str(pathlib.Path(args.model) / BACKBONE_GRAPHS["backbone"]), load_external_data=False)
    floor = Floor(onnx.load(str(path)), args.threads, args.repeats, folder_graph.graph)

    configs = {name: GenerationConfig.preset(name) for name in ("reference", "fast")}
    configs.update({candidate.name: candidate.config for candidate in map(parse_candidate, args.candidate)})
    text = TEXTS["medium"]
    summary: dict = {"cpu": cpu_name(), "threads": args.threads, "graph": path.parent.name, "layers": floor.layers,
                     "products_per_forward": len(floor.products), "load_before": [round(x, 2) for x in load_before],
                     "requests": {}}
    plans = {}
    for name in args.requests.split(","):
        voice = clone_voice(engine, REQUESTS[name]) if REQUESTS[name] else None
        for preset, config in configs.items():
            plan = engine.prepare(text, voice=voice, config=config.replace(seed=1, duration=DURATION))
            plans[(name, preset)] = (plan, steps_of(engine._work(plan)))
        (chunk,) = engine._work(plans[(name, "reference")][0]).chunks
        step_floor = floor.step(chunk.length, 0, chunk.frames)
        built_floor = floor.built_step(chunk.length, 0, chunk.frames)
        measured = pair_seconds(engine, chunk.length, chunk.frames, args.repeats)
        summary["requests"][name] = {
            "reference_s": REQUESTS[name], "prefix": chunk.prefix, "frames": chunk.frames,
            "guided_whole_step": {"floor_s": round(step_floor, 6), "built_floor_s": round(built_floor, 6),
                                  "measured_s": round(measured, 6),
                                  "measured_over_floor": round(measured / step_floor, 3),
                                  "built_floor_over_floor": round(built_floor / step_floor, 3)},
            "presets": {}}
    best: dict = {}
    for round_ in range(args.rounds):
        for (name, preset), (plan, _) in plans.items():
            load, cpu = os.getloadavg()[0], time.process_time()
            result = engine.generate(text, voice=plan.voice, config=plan.config)
            row = {"round": round_, "request": name, "preset": preset, "load_before": round(load, 2),
                   "backbone_s": round(result.timings["backbone"], 3), "total_s": round(result.timings["total"], 3),
                   "cpu_s": round(time.process_time() - cpu, 3)}
            print(json.dumps(row), flush=True)
            kept = best.setdefault((name, preset), row)
            for key in ("backbone_s", "total_s", "cpu_s"):
                kept[key] = min(kept[key], row[key])
    pytorch_s = args.pytorch_seconds or (pytorch_seconds(args.reference, args.threads) if args.reference else None)
    summary["pytorch_s"] = pytorch_s
    for (name, preset), (_plan, steps) in plans.items():
        backbone_floor = sum(floor.step(*step) for step in steps)
        built_floor = sum(floor.built_step(*step) for step in steps)
        floor_cpu = sum(floor.step_cpu(*step) for step in steps)
        measured = best[(name, preset)]
        row = {"forwards": sum(2 if uncond else 1 for _, _, uncond in steps),
               "steps": [list(step) for step in steps], "backbone_floor_s": round(backbone_floor, 6),
               "backbone_measured_s": measured["backbone_s"], "generation_s": measured["total_s"],
               "backbone_over_floor": round(measured["backbone_s"] / backbone_floor, 3),
               "built_floor_s": round(built_floor, 6), "built_floor_over_floor": round(built_floor / backbone_floor, 3),
               "backbone_over_built_floor": round(measured["backbone_s"] / built_floor, 3),
               "floor_cpu_s": round(floor_cpu, 6), "generation_cpu_s": measured["cpu_s"],
               "generation_cpu_over_floor_cpu": round(measured["cpu_s"] / floor_cpu, 3)}
        if pytorch_s and name == "design":
            row["best_ratio_to_pytorch"] = round(pytorch_s / backbone_floor, 2)
            row["ratio_at_built_floor"] = round(pytorch_s / built_floor, 2)
            row["ratio_at_measured_backbone"] = round(pytorch_s / measured["backbone_s"], 2)
            row["ratio_of_generation"] = round(pytorch_s / measured["total_s"], 2)
        summary["requests"][name]["presets"][preset] = row
    summary["products_s"] = {"chained": {str(k): round(v, 6) for k, v in sorted(floor.chained_s.items())},
                             "built": {str(k): round(v, 6) for k, v in sorted(floor.built_s.items())},
                             "one_node_at_a_time": {str(k): round(v, 6) for k, v in sorted(floor.single_s.items())}}
    summary["attention_s"] = {f"{rows}+{past}": round(v, 6) for (rows, past), v in sorted(floor.attention_s.items())}
    summary["floor_cpu_s"] = {"+".join(map(str, key)): round(v, 6) for key, v in sorted(floor.cpu_s.items())}
    if args.profile_rows:
        summary["built_operators_ms"] = {"rows": args.profile_rows,
                                         "operators": built_operator_ms(floor.built_graph, args.profile_rows, args.threads)}
    summary["load_after"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps(summary), flush=True)
    print_table(summary)
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
