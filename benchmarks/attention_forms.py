"""The backbone's attention as genai's ``GroupQueryAttention`` or in ONNX's own operators: forwards A/B in one process.

    python -m benchmarks.attention_forms --model /work/models/full-int4 --threads 2 [--precision int8-row] \\
        [--rows 168,125,281,450] [--past 325:125] [--repeats 10] [--json out.json]

Issue 48, item 3.  The folder's backbone is rebuilt twice in memory in ``--precision`` (``precision.rebuild``,
no outlier channels kept apart: the attention is what differs), once with genai's attention node as exported and
once with it rewritten as ``RotaryEmbedding`` and ``Attention`` (``backbones/attention.py``, what every rebuilt
backbone runs).  For each row count (a whole forward; the defaults are a design's conditional row of 43 + 125
positions, the target alone, and a 4 s and a 10 s clone's rows) and each ``past:new`` (a kept prompt), it checks
that the two give the same hidden states to the bit, then times them taking turns (``--repeats`` rounds) and
prints the ratios, standard over genai: of the best wall seconds, and of the median CPU seconds of the process
(the steadier on a loaded machine).  ``--profile-rows N`` adds ONNX Runtime's profile of a forward of N rows in
each form, by operator.  Say which CPU (``lscpu`` flags) and
the load (``uptime``): the ratio is from one run, the seconds are the machine's.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import sys
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))


def taking_turns(runs: dict, repeats: int) -> tuple[dict, dict]:
    """``(wall seconds, CPU seconds)`` of each of ``runs`` (callables) per round, over ``repeats`` rounds that take
    turns, the first round (allocations, prepacking) not counted.  CPU seconds are this process's, all threads:
    on a machine other work loads they move less than wall seconds do."""
    walls: dict = {label: [] for label in runs}
    cpus: dict = {label: [] for label in runs}
    for round_ in range(repeats + 1):
        for label in (list(runs) if round_ % 2 else list(runs)[::-1]):
            wall, cpu = time.perf_counter(), time.process_time()
            runs[label]()
            if round_:
                walls[label].append(time.perf_counter() - wall)
                cpus[label].append(time.process_time() - cpu)
    return walls, cpus


def operator_ms(sessions: dict, feed: dict, options, runs: int = 5, outputs=("hidden_states",)) -> dict:
    """ONNX Runtime's profiles (sessions made with ``enable_profiling``) of ``runs`` forwards each, the sessions
    taking turns after two forwards each that are not counted: ``{label: {operator type: mean ms per forward}}``."""
    import collections

    for round_ in range(2 + runs):
        for session in (list(sessions.values()) if round_ % 2 else list(sessions.values())[::-1]):
            session.run(list(outputs), feed, options)
    found = {}
    for label, session in sessions.items():
        path = pathlib.Path(session.end_profiling())
        events = json.loads(path.read_text())
        path.unlink()
        starts = sorted(e["ts"] for e in events if e.get("cat") == "Session" and e["name"] == "model_run")
        counted_from = starts[2] if len(starts) > 2 else 0
        totals: collections.Counter = collections.Counter()
        for event in events:
            if event.get("cat") == "Node" and event["name"].endswith("_kernel_time") and event["ts"] >= counted_from:
                totals[event["args"]["op_name"]] += event["dur"]
        found[label] = {op: us / runs / 1000 for op, us in totals.items()}
    return found


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="a model folder")
    parser.add_argument("--precision", default="int8-row")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rows", default="168,125,281,450", help="whole forwards' positions")
    parser.add_argument("--past", default="325:125", help="past:new forwards on a kept prompt, comma-separated")
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--profile-rows", type=int, default=0,
                        help="also profile a whole forward of this many rows in each form: the operators' time")
    parser.add_argument("--json")
    args = parser.parse_args(argv)

    import onnx
    from onnx import numpy_helper

    from omnivoice_demo.backbones.precision import rebuild
    from omnivoice_demo.engine.onnx_model import read_genai_decoder_config
    from omnivoice_demo.runtime.machine import cpu_name
    from omnivoice_demo.runtime.sessions import in_memory_session, providers_for, run_options, session_options
    from omnivoice_demo.storage.manifest import BACKBONE_GRAPHS

    folder = pathlib.Path(args.model)
    decoder = read_genai_decoder_config(folder)
    kv_heads, head, hidden = (int(decoder[k]) for k in ("num_key_value_heads", "head_size", "hidden_size"))
    sessions, profiled = {}, {}
    for form, standard in (("genai", False), ("standard", True)):
        model = onnx.load(str(folder / BACKBONE_GRAPHS["backbone"]))
        constants = rebuild(model, args.precision, standard_attention=standard)
        # shapes and scalars in the graph itself (ONNX Runtime reads a Reshape's shape at load), weights beside it
        small = {name: value for name, value in constants.items() if value.nbytes < 1024}
        model.graph.initializer.extend(numpy_helper.from_array(value, name) for name, value in small.items())
        large = {name: value for name, value in constants.items() if name not in small}
        sessions[form] = in_memory_session(model, large, providers_for("cpu"), session_options(args.threads))
        if args.profile_rows:
            profiling = session_options(args.threads)
            profiling.enable_profiling = True
            profiled[form] = in_memory_session(model, large, providers_for("cpu"), profiling)
        del model, constants
    past_names = [i.name for i in sessions["genai"].get_inputs() if i.name.startswith("past_key_values.")]
    options = run_options()
    rng = np.random.default_rng(0)

    def feeds(new: int, past: int) -> dict:
        feed = {"inputs_embeds": rng.standard_normal((1, new, hidden)).astype(np.float32),
                "attention_mask": np.ones((1, past + new), np.int64)}
        for name in past_names:
            feed[name] = rng.standard_normal((1, kv_heads, past, head)).astype(np.float32)
        return feed

    cases = [(int(r), 0) for r in args.rows.split(",") if r]
    cases += [(int(new), int(past)) for past, new in (p.split(":") for p in args.past.split(",") if p)]
    rows = []
    print(f"CPU {cpu_name()}, {args.threads} threads, {args.precision}, load {os.getloadavg()[0]:.2f}")
    print("| positions (past + new) | genai s | standard s | standard / genai | genai CPU s | standard CPU s | "
          "standard / genai, CPU | same to the bit |")
    print("|---|---|---|---|---|---|---|---|")
    for new, past in cases:
        feed = feeds(new, past)
        outputs = {form: s.run(["hidden_states"], feed, options)[0] for form, s in sessions.items()}
        same = bool(np.array_equal(outputs["genai"], outputs["standard"]))
        walls, cpus = taking_turns({form: (lambda s=s, feed=feed: s.run(["hidden_states"], feed, options))
                                    for form, s in sessions.items()}, args.repeats)
        best = {form: min(seconds) for form, seconds in walls.items()}
        cpu = {form: float(np.median(seconds)) for form, seconds in cpus.items()}
        ratio, cpu_ratio = best["standard"] / best["genai"], cpu["standard"] / cpu["genai"]
        rows.append({"past": past, "new": new, "genai_s": round(best["genai"], 5),
                     "standard_s": round(best["standard"], 5), "ratio": round(ratio, 3),
                     "genai_cpu_s": round(cpu["genai"], 5), "standard_cpu_s": round(cpu["standard"], 5),
                     "cpu_ratio": round(cpu_ratio, 3), "same_to_the_bit": same})
        print(f"| {past} + {new} | {best['genai']:.4f} | {best['standard']:.4f} | {ratio:.3f} | {cpu['genai']:.4f} | "
              f"{cpu['standard']:.4f} | {cpu_ratio:.3f} | {'yes' if same else 'NO'} |", flush=True)
    operators = operator_ms(profiled, feeds(args.profile_rows, 0), options) if profiled else {}
    if operators:
        print(f"\n| operator, a forward of {args.profile_rows} rows (ms, mean of 5, the forms taking turns) | genai "
              "| standard |")
        print("|---|---|---|")
        for op in sorted(set(operators["genai"]) | set(operators["standard"]),
                         key=lambda op: -max(operators["genai"].get(op, 0), operators["standard"].get(op, 0))):
            print(f"| {op} | {operators['genai'].get(op, 0):.2f} | {operators['standard'].get(op, 0):.2f} |")
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps({"cpu": cpu_name(), "threads": args.threads,
                                                       "precision": args.precision, "cases": rows}, indent=1))
    return 0 if all(row["same_to_the_bit"] for row in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
