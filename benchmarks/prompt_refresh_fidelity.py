"""How far keeping the prompt's keys and values (``prompt_refresh=k``) moves a generation from the exact loop.

    OMNIVOICE_CACHE=/work/models/<branch>-cache python benchmarks/prompt_refresh_fidelity.py \\
        --model /work/models/full-int4 --threads 2 [--ks 1,2,4,8] [--steps 32] [--backbone auto] [--free-running] [--conditions design,clone]

Two conditions: voice design (no reference: the prompt is the instruct and the text) and a clone with a
10 s reference clip (the prompt holds its ~250 frames).  Greedy (position and class temperature 0), so
every difference is the approximation's, not the noise's.

Per step (teacher-forced: every row follows the exact loop's tokens), for each ``k``: the conditional
row's target hidden states computed on the prompt's keys and values kept at the last refresh step
(``0, k, 2k, ...``) against the whole forward of that step, as the relative RMS gap and the lowest
cosine over the target frames, beside how far the exact target moves from the step before; and the share of the still-masked cells whose greedy (guided) token
changes.  On a refresh step every gap is 0 (the exactness test: tests/test_prompt_refresh.py).
With ``--free-running``: each k's whole generation, run on its own, and the share of its final codes
that equal the exact loop's.
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from benchmarks.latency import FIVE, reference_clip  # noqa: E402
from omnivoice_demo import OmniVoiceEngine  # noqa: E402
from omnivoice_demo.settings.generation import GenerationConfig  # noqa: E402
from omnivoice_demo.engine.onnx_model import PromptPast  # noqa: E402
from omnivoice_demo.engine.sampling import decode_step, score_tokens, unmask_schedule  # noqa: E402

#: about ten seconds of speech, for the reference clip's transcript
TRANSCRIPT_10S = ("This reference clip is ten seconds of synthetic speech, recorded for the benchmark of the "
                  "prompt's kept keys and values, and it goes on a little longer.")
GREEDY = dict(position_temperature=0.0, class_temperature=0.0)


def teacher_forced(engine, plan, ks) -> list[dict]:
    """Per step of the exact greedy loop: each k's hidden-state gap and greedy-token change (see the module doc)."""
    config, model = plan.config, engine.model
    voice = plan.voice
    frames = plan.target_frames
    cond_ids, cond_mask = engine._rows(plan.chunks[0], frames, voice.transcript if voice else None,
                                       voice.codes if voice else None, plan)
    length = cond_ids.shape[-1]
    prefix = length - frames
    tokens = np.full((engine.num_codebooks, frames), engine.mask_id, dtype=np.int64)
    schedule = unmask_schedule(frames, engine.num_codebooks, config.num_step, config.t_shift)
    kept = {k: PromptPast(prefix) for k in ks}
    rng = np.random.default_rng(0)
    rows, before = [], None
    for step, count in enumerate(schedule):
        cond_ids[0, :, prefix:] = tokens
        embeds = model.embed(cond_ids, cond_mask)
        now = PromptPast(prefix)
        whole = model.hidden_states(embeds, [length], keep=now)[:, prefix:].astype(np.float32)
        uncond = model.hidden_states(model.embed(tokens[np.newaxis], np.ones((1, frames), bool)), [frames])
        logits = model.audio_logits(np.concatenate([whole, uncond.astype(np.float32)]))
        exact_tokens, _ = score_tokens(logits[0], logits[1], config.guidance_scale, 0.0)
        masked = tokens == engine.mask_id
        # how far the exact target moves from the step before: the scale the gaps are read against
        row = {"step": step + 1, "masked": int(masked.sum()), "moved": rms_gap(whole, before) if step else 0.0}
        before = whole
        for k in ks:
            if step % k == 0:
                kept[k] = now
                row[k] = (0.0, 1.0, 0.0)
                continue
            split = model.hidden_states(embeds[:, prefix:], [frames], past=kept[k]).astype(np.float32)
            gap = rms_gap(split, whole)
            cosine = float(((split * whole).sum(-1) / (np.linalg.norm(split, axis=-1) * np.linalg.norm(whole, axis=-1))).min())
            split_logits = model.audio_logits(split)
            k_tokens, _ = score_tokens(split_logits[0], logits[1], config.guidance_scale, 0.0)
            changed = float((k_tokens != exact_tokens)[masked].mean()) if masked.any() else 0.0
            row[k] = (gap, cosine, changed)
        decode_step(tokens, logits[0], logits[1], count, guidance_scale=config.guidance_scale,
                    layer_penalty_factor=config.layer_penalty_factor, rng=rng, mask_id=engine.mask_id,
                    overwrite=True, **GREEDY)
        rows.append(row)
        print(f"  step {step + 1}: moved {row['moved']:.4f}, " + ", ".join(f"k={k} {row[k][0]:.4f}/{100 * row[k][2]:.1f}%" for k in ks),
              file=sys.stderr, flush=True)
    return rows


def rms_gap(got: np.ndarray, expected: np.ndarray) -> float:
    """Relative RMS difference: ``rms(got - expected) / rms(expected)``."""
    return float(np.sqrt(((got - expected) ** 2).mean() / (expected ** 2).mean()))


def free_running(engine, text, voice, config, ks) -> dict:
    exact = engine.generate(text, voice=voice, config=config).codes[0]
    return {k: float((engine.generate(text, voice=voice, config=config.replace(prompt_refresh=k)).codes[0]
                      == exact).mean()) for k in ks}


def print_table(title: str, rows: list[dict], ks) -> None:
    print(f"\n{title}")
    header = "| step | masked | exact: moved from the step before | " + " | ".join(f"k={k}: gap / min cos / tokens changed" for k in ks) + " |"
    print(header)
    print("|" + "---|" * (3 + len(ks)))
    for row in rows:
        cells = " | ".join(f"{row[k][0]:.4f} / {row[k][1]:.4f} / {100 * row[k][2]:.1f}%" for k in ks)
        print(f"| {row['step']} | {row['masked']} | {row['moved']:.4f} | {cells} |")
    means = " | ".join(
        f"{np.mean([r[k][0] for r in rows]):.4f} / {min(r[k][1] for r in rows):.4f} / "
        f"{100 * np.mean([r[k][2] for r in rows]):.1f}%" for k in ks)
    print(f"| mean (min cos: lowest) | | {np.mean([r['moved'] for r in rows[1:]]):.4f} | {means} |")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--backbone", default="auto")
    parser.add_argument("--ks", default="1,2,4,8")
    parser.add_argument("--steps", type=int, default=32)
    parser.add_argument("--free-running", action="store_true")
    parser.add_argument("--conditions", default="design,clone", help="design (no reference), clone, or both")
    args = parser.parse_args(argv)
    ks = [int(k) for k in args.ks.split(",")]
    engine = OmniVoiceEngine(args.model, threads=args.threads, verify="none", backbone=args.backbone)
    print(f"backbone: {engine.backbone_choice['compute']}")
    voice = engine.clone_voice(*reference_clip(10.0), TRANSCRIPT_10S)
    config = GenerationConfig(num_step=args.steps, seed=1, duration=5.0, **GREEDY)
    conditions = {"design": ("voice design (no reference)", None),
                  "clone": (f"clone, {voice.frames / 25:.1f} s reference", voice)}
    for title, who in (conditions[name] for name in args.conditions.split(",")):
        started = time.perf_counter()
        plan = engine.prepare(FIVE, voice=who, config=config)
        rows = teacher_forced(engine, plan, ks)
        print_table(f"{title}, {plan.target_frames} target frames, {args.steps} steps "
                    f"(teacher-forced, {time.perf_counter() - started:.0f} s)", rows, ks)
        if args.free_running:
            agreement = free_running(engine, FIVE, who, config, ks)
            print("free-running, final codes equal to the exact loop's: "
                  + ", ".join(f"k={k}: {100 * share:.1f}%" for k, share in agreement.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
