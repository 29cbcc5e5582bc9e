"""The heads and scoring at the masked cells only, against the whole grid: A/B in one process, per preset.

    OMNIVOICE_CACHE=/work/models/cache python -m benchmarks.heads_where_scored \\
        --model /work/models/full-int4 --threads 2 [--rounds 3] [--text ...] [--crossover | --schedule]

One engine.  Each round runs the same text (``benchmarks.latency.FIVE``, seed 1) at each preset twice,
alternating: ``whole grid`` (the heads graph on every step and ``score_tokens`` on every cell, as before
issue 59) and ``masked cells`` (``steps.CELL_SHARE`` and ``sampling.decode_step`` as they are).  Both give the
same codes (checked).  Printed per run: wall seconds, the engine's ``heads`` and ``sampling`` stages, and the
load average before it; the last lines give each preset's best heads + sampling seconds of each side and the
saving.  The ratios come from the same run: report ``uptime`` beside them (a shared machine).

``--crossover`` measures instead the heads alone at full size (``T`` frames of random hidden states, one and
two rows): the whole heads graph against ``steps.CellHeads`` at shares of masked cells, alternating, best of
``--rounds`` each, which is where ``steps.CELL_SHARE`` comes from.

``--schedule`` measures the heads and the scoring alone over each preset's steps, without the backbone (whose
time on a shared machine drowns theirs): ``--frames`` target frames of random hidden states (two rows where the
preset runs the unconditional forward, one else, as ``steps.unmask``), the schedule and sampling of the preset
(seed 1), each side in turn, best of ``--rounds``; both sides must decide the same codes (a full-size check of
the exactness, on random hidden states).
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import time

import numpy as np


def whole_grid_decode_step(tokens, cond, uncond, k, *, guidance_scale, class_temperature, layer_penalty_factor,
                           position_temperature, rng, mask_id, overwrite=False):
    """``decode_step`` as it was: every cell scored (in the logits' buffers where ``overwrite``), then the decided
    ones given -inf."""
    from omnivoice_demo.engine import sampling

    pred, confidence = sampling.score_tokens(cond, uncond, guidance_scale, class_temperature, rng,
                                             mask_id=mask_id, overwrite=overwrite)
    decided = sampling.select_positions(confidence, tokens, k, layer_penalty_factor, position_temperature, rng,
                                        mask_id=mask_id)
    tokens[decided] = pred[decided]
    return decided


def crossover(folder: str, threads: int, rounds: int, frames: int) -> None:
    """The whole heads graph against the heads at the masked cells, per share of cells masked (one and two rows)."""
    import pathlib

    from omnivoice_demo.engine.onnx_model import OmniVoiceOnnx
    from omnivoice_demo.engine.steps import CellHeads
    from omnivoice_demo.runtime.sessions import providers_for, session_options

    model = OmniVoiceOnnx(pathlib.Path(folder), provider="cpu", threads=threads)
    heads = CellHeads(pathlib.Path(folder), providers_for("cpu"), session_options(threads))
    if not heads.available:
        raise SystemExit("this folder's heads graph is not the exporter's MatMul form: no cell heads")
    data = np.random.default_rng(0)
    rows = [data.standard_normal((1, frames, model.hidden_size)).astype(np.float32) for _ in range(2)]
    both = np.concatenate(rows)

    def alternating(whole_run, cells_run):
        """Best seconds of each, the two taking turns."""
        times: tuple[list, list] = ([], [])
        for _ in range(rounds):
            for run, spent in ((whole_run, times[0]), (cells_run, times[1])):
                tick = time.perf_counter()
                run()
                spent.append(time.perf_counter() - tick)
        return min(times[0]), min(times[1])

    for share in (0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1):
        masked = data.random((heads.codebooks, frames)) < share
        line: dict = {"share": share, "load": round(os.getloadavg()[0], 2)}
        for name, given, stacked in (("1 row", rows[:1], rows[0]), ("2 rows", rows, both)):
            whole, cells = alternating(functools.partial(model.audio_logits, stacked),
                                       functools.partial(heads.logits, given, masked))
            line[name] = {"whole_ms": round(whole * 1e3, 1), "cells_ms": round(cells * 1e3, 1),
                          "ratio": round(cells / whole, 2)}
        print(json.dumps(line), flush=True)


def schedule(folder: str, threads: int, rounds: int, frames: int, presets: list[str]) -> None:
    """Heads + scoring seconds over each preset's steps, whole grid against masked cells, the backbone left out."""
    import pathlib

    from omnivoice_demo.engine import sampling, steps
    from omnivoice_demo.engine.onnx_model import OmniVoiceOnnx
    from omnivoice_demo.runtime.sessions import providers_for, session_options
    from omnivoice_demo.settings.generation import GenerationConfig

    model = OmniVoiceOnnx(pathlib.Path(folder), provider="cpu", threads=threads)
    heads = steps.CellHeads(pathlib.Path(folder), providers_for("cpu"), session_options(threads))
    data = np.random.default_rng(0)
    mask_id = 1024

    def run(config, hidden, cells: bool):
        tokens = np.full((heads.codebooks, frames), mask_id, dtype=np.int64)
        rng = np.random.default_rng(1)
        plan = sampling.unmask_schedule(frames, heads.codebooks, config.num_step, config.t_shift)
        fresh_steps = sampling.guidance_schedule(plan, config.guidance_every)
        last_uncond, tick = None, time.perf_counter()
        for k, fresh in zip(plan, fresh_steps):
            if k <= 0:
                continue
            rows = [hidden[0], hidden[1]] if fresh else [hidden[0]]
            if cells:
                logits = steps.step_logits(model, heads, rows, tokens == mask_id)
            else:
                logits = model.audio_logits(np.concatenate(rows) if len(rows) > 1 else rows[0])
            reused = config.guidance_every > 1
            if cells:   # as steps.unmask: the reused logits are never computed in
                last_uncond = logits[1] if fresh else last_uncond
                uncond, overwrite = last_uncond, not reused
            else:       # as the loop before: a copy kept for reuse, the logits given computed in
                last_uncond = logits[1].copy() if fresh and reused else last_uncond
                uncond, overwrite = (logits[1] if fresh else last_uncond.copy()), True
            decide = sampling.decode_step if cells else whole_grid_decode_step
            decide(tokens, logits[0], uncond, k, guidance_scale=config.guidance_scale,
                   class_temperature=config.class_temperature, layer_penalty_factor=config.layer_penalty_factor,
                   position_temperature=config.position_temperature, rng=rng, mask_id=mask_id, overwrite=overwrite)
        return time.perf_counter() - tick, tokens

    for preset in presets:
        config = GenerationConfig.preset(preset)
        hidden = [data.standard_normal((1, frames, model.hidden_size)).astype(np.float32) for _ in range(2)]
        best = {"whole grid": np.inf, "masked cells": np.inf}
        codes = {}
        for _ in range(rounds):
            for side in best:
                seconds, codes[side] = run(config, hidden, side == "masked cells")
                best[side] = min(best[side], seconds)
        if not np.array_equal(codes["whole grid"], codes["masked cells"]):
            raise SystemExit(f"{preset}: the two sides decided different codes")
        print(json.dumps({"preset": preset, "frames": frames, "whole_grid_s": round(best["whole grid"], 3),
                          "masked_cells_s": round(best["masked cells"], 3),
                          "saved": f"{1 - best['masked cells'] / best['whole grid']:.1%}", "same_codes": True,
                          "load": round(os.getloadavg()[0], 2)}), flush=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--backbone", default="auto")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--presets", default="reference,balanced,fast")
    parser.add_argument("--text", default=None)
    parser.add_argument("--crossover", action="store_true", help="the heads alone, whole graph against cells")
    parser.add_argument("--schedule", action="store_true", help="the heads and scoring over the steps alone")
    parser.add_argument("--frames", type=int, default=125, help="--crossover, --schedule: target frames per row")
    args = parser.parse_args(argv)
    if args.schedule:
        schedule(args.model, args.threads, args.rounds, args.frames, args.presets.split(","))
        return 0
    if args.crossover:
        crossover(args.model, args.threads, args.rounds, args.frames)
        return 0

    from benchmarks.latency import FIVE
    from omnivoice_demo.engine import loop, sampling, steps
    from omnivoice_demo.engine.loop import OmniVoiceEngine
    from omnivoice_demo.settings.generation import GenerationConfig

    engine = OmniVoiceEngine(args.model, threads=args.threads, verify="size", backbone=args.backbone)
    text = args.text or FIVE
    share = steps.CELL_SHARE
    sides = {"whole grid": (0.0, whole_grid_decode_step), "masked cells": (share, sampling.decode_step)}
    best: dict = {}
    for round_ in range(args.rounds):
        for preset in args.presets.split(","):
            codes = {}
            for side, (cell_share, decide) in sides.items():
                steps.CELL_SHARE, loop.decode_step = cell_share, decide
                load = os.getloadavg()[0]
                tick = time.perf_counter()
                result = engine.generate(text, config=GenerationConfig.preset(preset), seed=1)
                wall = time.perf_counter() - tick
                codes[side] = result.codes
                stages = {name: round(result.timings.get(name, 0.0), 3) for name in ("heads", "sampling", "backbone")}
                print(json.dumps({"round": round_ + 1, "preset": preset, "side": side, "wall_s": round(wall, 3),
                                  **stages, "load": round(load, 2)}), flush=True)
                scored = stages["heads"] + stages["sampling"]
                best[(preset, side)] = min(best.get((preset, side), scored), scored)
            same = all(np.array_equal(a, b) for a, b in zip(codes["whole grid"], codes["masked cells"]))
            if not same:
                raise SystemExit(f"{preset}: the two sides gave different codes")
    steps.CELL_SHARE, loop.decode_step = share, sampling.decode_step
    for preset in args.presets.split(","):
        before, after = best[(preset, "whole grid")], best[(preset, "masked cells")]
        print(f"{preset}: heads + sampling, best of {args.rounds}: whole grid {before:.3f} s, masked cells "
              f"{after:.3f} s (saved {before - after:.3f} s, {1 - after / before:.1%}); same codes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
