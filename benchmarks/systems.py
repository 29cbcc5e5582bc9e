"""The systems the side-by-side benchmark times, each run in its own child process (``WORKERS``).

Every worker takes (target, case, text, steps, repeats, threads, seed) and returns a JSON-able dict
with the seconds per stage (``omnivoice_demo.constants.STAGES`` where it has them), the total, the
audio seconds and the process's peak RSS (``omnivoice_demo.runtime.machine.peak_rss_mb``).
"""

from __future__ import annotations

import os
import pathlib
import tempfile
import time

import numpy as np

from omnivoice_demo.constants import AUDIO_MASK_ID, FRAME_RATE, NUM_CODEBOOKS, SAMPLE_RATE
from omnivoice_demo.runtime.machine import peak_rss_mb

CASES = {
    # case -> (text key, duration in seconds or None to estimate, reference clip seconds or None)
    "auto": ("medium", 5.0, None),
    "clone": ("medium", 5.0, 5.0),
    "long": ("long", None, None),
    "paragraph": ("paragraph", None, None),
}
REFERENCE_TRANSCRIPT = "This reference clip is five seconds of synthetic speech for the benchmark."


def make_reference_clip(seconds: float) -> tuple[np.ndarray, int]:
    """A speech-like reference clip (harmonics with vibrato under a syllable envelope)."""
    sr = SAMPLE_RATE
    t = np.arange(int(seconds * sr)) / sr
    f0 = 120 + 12 * np.sin(2 * np.pi * 5.5 * t)
    phase = 2 * np.pi * np.cumsum(f0) / sr
    voiced = sum(np.sin(h * phase) / h for h in range(1, 9))
    envelope = np.clip(np.sin(np.pi * 4.0 * t) ** 2 * 1.4 - 0.2, 0, 1)
    return (0.2 * voiced * envelope).astype(np.float32), sr


def engine_label(engine) -> str:
    """engine:<profile>, with the int4 block size and accuracy level where they apply, and the backbone
    choice when it is not the graph as built."""
    precision = engine.manifest.get("precision", {})
    label = f"engine:{engine.profile}"
    if precision.get("backbone") == "int4":
        label += f" (int4 block {precision.get('int4_block_size')}, accuracy level {precision.get('int4_accuracy_level')})"
    choice = backbone_run_as(engine)
    if choice != "as built":
        label += f" run as {choice} (backbone {engine.backbone_choice.get('mode', 'auto')})"
    return label


def backbone_run_as(engine) -> str:
    """What the backbone runs as: ``as built``, ``fp32`` (int4 dequantized) or an 8-bit choice."""
    return engine.backbone_choice.get("choice", "as built")


def dequantized(engine) -> bool:
    """Whether this folder's int4 backbone runs as fp32 MatMuls (``backbone="fp32"`` or auto's choice)."""
    return backbone_run_as(engine) == "fp32"


def run_engine_system(folder: str, case: str, text: str, steps: int, repeats: int, threads: int, seed: int,
                      backbone: str = "auto") -> dict:
    from omnivoice_demo.engine.loop import OmniVoiceEngine

    _, duration, ref_seconds = CASES[case]
    started = time.perf_counter()
    engine = OmniVoiceEngine(folder, threads=threads, verify="size", backbone=backbone)
    load_seconds = time.perf_counter() - started
    voice = None
    clone_seconds = 0.0
    if ref_seconds:
        clip, sr = make_reference_clip(ref_seconds)
        tick = time.perf_counter()
        voice = engine.clone_voice(clip, sr, REFERENCE_TRANSCRIPT)
        clone_seconds = time.perf_counter() - tick
    runs = []
    for _ in range(repeats):
        first_audio = None
        tick = time.perf_counter()
        for event in engine.stream(text, voice=voice, duration=duration, num_step=steps, seed=seed):
            if event.kind == "chunk" and first_audio is None:
                first_audio = time.perf_counter() - tick
            if event.kind == "result":
                result = event
        runs.append(dict(result.timings, first_audio=first_audio, audio_seconds=result.duration,
                         frames=result.frames, chunks=len(result.chunks)))
    best = min(runs, key=lambda r: r["total"])
    dims = engine.manifest.get("model", {})
    prompt = len(engine.tokenizer.encode(text).ids) + 12 + (voice.frames if voice else 0)
    return dict(system=engine_label(engine), folder=folder, load_seconds=load_seconds,
                backbone_precision=(engine.manifest.get("precision", {}).get("backbone", "fp32")
                                    if backbone_run_as(engine) == "as built" else backbone_run_as(engine)),
                clone_seconds=clone_seconds, steps=steps, prompt_positions=prompt, dims=dims,
                peak_rss_mb=peak_rss_mb(), runs=runs, **best)


def run_reference_system(checkpoint: str, case: str, text: str, steps: int, repeats: int, threads: int,
                         seed: int) -> dict:
    import torch
    from omnivoice import OmniVoice

    torch.set_num_threads(threads)
    _, duration, ref_seconds = CASES[case]
    started = time.perf_counter()
    model = OmniVoice.from_pretrained(checkpoint, attn_implementation="sdpa", dtype=torch.float32).eval()
    load_seconds = time.perf_counter() - started
    stages: dict[str, float] = {}

    def timed(name, function):
        def wrapper(*args, **kwargs):
            tick = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                stages[name] = stages.get(name, 0.0) + time.perf_counter() - tick
        return wrapper

    model.forward = timed("forward", model.forward)
    model._predict_tokens_with_scoring = timed("sampling", model._predict_tokens_with_scoring)
    model.audio_tokenizer.decode = timed("codec_decode", model.audio_tokenizer.decode)
    model._post_process_audio = timed("postprocess", model._post_process_audio)
    prompt = None
    clone_seconds = 0.0
    if ref_seconds:
        clip, sr = make_reference_clip(ref_seconds)
        tick = time.perf_counter()
        prompt = model.create_voice_clone_prompt((torch.from_numpy(clip), sr), ref_text=REFERENCE_TRANSCRIPT)
        clone_seconds = time.perf_counter() - tick
    runs = []
    for _ in range(repeats):
        stages.clear()
        torch.manual_seed(seed)
        tick = time.perf_counter()
        with torch.inference_mode():
            audio = model.generate(text=text, voice_clone_prompt=prompt, duration=duration, num_step=steps)[0]
        total = time.perf_counter() - tick
        runs.append(dict(stages, total=total, audio_seconds=len(audio) / SAMPLE_RATE))
    best = min(runs, key=lambda r: r["total"])
    return dict(system="pytorch", folder=checkpoint, load_seconds=load_seconds, clone_seconds=clone_seconds,
                steps=steps, peak_rss_mb=peak_rss_mb(), runs=runs, **best)


def run_published_style_system(folder: str, case: str, text: str, steps: int, repeats: int, threads: int,
                               seed: int) -> dict:
    """One causal forward of the three graphs per step on the conditional row, no CFG, no sampling."""
    import shutil

    import onnx

    from omnivoice_demo.engine.duration import plan_target_frames
    from omnivoice_demo.engine.onnx_model import OmniVoiceOnnx
    from omnivoice_demo.backbones.repair import attention_nodes
    from omnivoice_demo.text.prompt import build_condition_ids, load_text_tokenizer

    _, duration, _ = CASES[case]
    frames, _ = plan_target_frames(text, duration=duration)
    # the conditional row as the engine builds it; the published loop has no language/instruct, but the
    # few style tokens do not change the cost
    text_ids = build_condition_ids(text, load_text_tokenizer(folder))
    ids = np.concatenate([np.broadcast_to(text_ids, (NUM_CODEBOOKS, len(text_ids))),
                          np.full((NUM_CODEBOOKS, frames), AUDIO_MASK_ID, dtype=np.int64)], axis=1)[np.newaxis]
    mask = np.zeros((1, ids.shape[-1]), dtype=bool)
    mask[0, len(text_ids):] = True
    # a causal copy beside the folder: hard links (onnxruntime refuses external data reached through a
    # symlink that leaves the model's folder), a copy where links are not possible
    with tempfile.TemporaryDirectory(dir=pathlib.Path(folder).resolve().parent) as tmp:
        causal = pathlib.Path(tmp)
        for item in pathlib.Path(folder).iterdir():
            if item.is_file() and item.name != "llm_decoder.onnx":
                try:
                    os.link(item, causal / item.name)
                except OSError:
                    shutil.copy2(item, causal / item.name)
        graph = onnx.load(str(pathlib.Path(folder) / "llm_decoder.onnx"), load_external_data=False)
        for node in attention_nodes(graph):
            for attribute in node.attribute:
                if attribute.name == "causal":
                    attribute.i = 1
        onnx.save(graph, str(causal / "llm_decoder.onnx"))
        model = OmniVoiceOnnx(causal, threads=threads)
        runs = []
        for _ in range(repeats):
            tick = time.perf_counter()
            for _ in range(steps):
                model.logits(ids, mask, positions=slice(ids.shape[-1] - frames, None))
            runs.append(dict(total=time.perf_counter() - tick, audio_seconds=frames / FRAME_RATE, backbone=None))
        del model
        shutil.rmtree(causal, ignore_errors=True)
    best = min(runs, key=lambda r: r["total"])
    return dict(system="published-style (causal, 1 forward/step, no CFG: not the model)", folder=folder,
                steps=steps, peak_rss_mb=peak_rss_mb(), runs=runs, **best)


def run_greedy_codes(folder: str, case: str, text: str, steps: int, repeats: int, threads: int, seed: int) -> dict:
    """Deterministic codes (position and class temperature 0) for the agreement table."""
    from omnivoice_demo.engine.loop import OmniVoiceEngine

    _, duration, _ = CASES[case]
    engine = OmniVoiceEngine(folder, threads=threads, verify="size")
    result = engine.generate(text, duration=duration, num_step=steps, position_temperature=0.0,
                             class_temperature=0.0, seed=seed)
    return dict(system=engine_label(engine), folder=folder, precision=engine.manifest.get("precision"),
                codes=[c.tolist() for c in result.codes], total=result.timings["total"])


WORKERS = {"codes": run_greedy_codes, "engine": run_engine_system, "pytorch": run_reference_system, "published": run_published_style_system}
