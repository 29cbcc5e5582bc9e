"""The Codec tab, /codec and /decode: audio -> 8 x T codes -> audio with the Higgs codec, and codes files -> audio."""

from __future__ import annotations

import time
from typing import Optional

import gradio as gr
import numpy as np

from ..gradio_api import api_errors, describe
from ...audio import processing as audio_ops
from ...audio.processing import save_audio
from ...storage.codes_file import load_codes, save_codes
from ...constants import BITS_PER_CODE, FRAME_RATE, HOP_LENGTH, NUM_CODEBOOKS, SAMPLE_RATE
from ...errors import InvalidInput
from .. import pictures
from ..error_mapping import ui_errors
from ..generation_panel import ENGINE_GROUP
from ..owners import owner_of
from ...audio.metrics import log_mel_distance, snr_db
from ...studio import Studio

BITRATE_KBPS = NUM_CODEBOOKS * BITS_PER_CODE * FRAME_RATE / 1000


def _stamp(kind: str) -> str:
    return f"{kind}-{time.strftime('%Y%m%d-%H%M%S')}"  # output_path adds the random token


def _codec_outputs(studio: Studio, codes: np.ndarray, audio_out: np.ndarray, stem: str, stats: dict,
                   timings: dict, owner: Optional[str]) -> dict:
    out_wav = save_audio(studio.output_path(stem, ".decoded.wav", owner), audio_out, SAMPLE_RATE)
    npz = save_codes(studio.output_path(stem, ".codes.npz", owner), codes, {"source": "codec tab"})
    frames = codes.shape[-1]
    lines = [f"**{frames} frames** ({frames / FRAME_RATE:.2f} s at {FRAME_RATE} frames/s) · {NUM_CODEBOOKS} codebooks "
             f"× {BITS_PER_CODE} bits × {FRAME_RATE}/s = **{BITRATE_KBPS:.1f} kbit/s**"]
    if stats:
        lines.append(f"Signal-to-noise **{stats['snr_db']:.1f} dB** · log-mel distance "
                     f"**{stats['log_mel_distance']:.3f}** (0 = identical) · input {stats['input_seconds']:.2f} s")
    lines.append("Timings: " + ", ".join(f"{k} {v:.2f} s" for k, v in timings.items()))
    return {"output": str(out_wav), "grid": pictures.code_grid(codes), "stats": "\n\n".join(lines),
            "codes_file": str(npz), "metrics": dict(stats, frames=int(frames), bitrate_kbps=BITRATE_KBPS,
                                                    timings={k: round(v, 4) for k, v in timings.items()})}


@ui_errors
def codec_roundtrip(studio: Studio, audio_path: Optional[str], owner: Optional[str] = None) -> dict:
    """Audio -> codes -> audio: both players, the code picture, frames, bitrate, SNR, log-mel distance (the files
    are ``owner``'s)."""
    if not audio_path:
        raise InvalidInput("Record or upload audio first.")
    studio.check_upload(str(audio_path), "audio file")
    # checked from the file's header and read only up to the limit (the engine checks the array again)
    wav, sr = audio_ops.load_audio_file(str(audio_path), max_seconds=studio.limits.max_codec_input_seconds,
                                        max_bytes=studio.max_upload_bytes)
    seconds = wav.shape[-1] / sr
    loaded = studio.models.get()
    engine = loaded.engine
    mono = audio_ops.to_mono(wav)
    if np.sqrt(np.mean(mono ** 2)) < audio_ops.SILENT_RMS:
        raise InvalidInput("The audio is silent; record or upload a clip where something is audible.")
    with loaded.lock:
        start = time.perf_counter()
        codes = engine.encode(mono, sr)
        encoded = time.perf_counter()
        out = engine.decode(codes)
        decoded = time.perf_counter()
    if sr != SAMPLE_RATE:
        from ...audio.resample import resample

        ref = resample(mono, sr, SAMPLE_RATE)[0]
    else:
        ref = mono[0]
    ref = ref[: codes.shape[-1] * HOP_LENGTH]
    stats = {"snr_db": round(snr_db(ref, out), 3), "log_mel_distance": round(log_mel_distance(ref, out), 4),
             "input_seconds": round(seconds, 3)}
    return _codec_outputs(studio, codes, out, _stamp("codec"), stats,
                          {"encode": encoded - start, "decode": decoded - encoded}, owner)


@ui_errors
def codec_decode(studio: Studio, codes_path: Optional[str], owner: Optional[str] = None) -> dict:
    """Uploaded codes (.npz) -> audio (``owner``'s file)."""
    if not codes_path:
        raise InvalidInput("Upload a codes file (.npz) saved by this app first.")
    studio.check_upload(str(codes_path), "codes file")
    codes = load_codes(codes_path, max_frames=studio.limits.max_decode_frames, max_bytes=studio.max_upload_bytes)
    loaded = studio.models.get()
    with loaded.lock:
        start = time.perf_counter()
        out = loaded.engine.decode(codes)
        took = time.perf_counter() - start
    return _codec_outputs(studio, codes, out, _stamp("decode"), {}, {"decode": took}, owner)


def build(studio: Studio) -> None:
    with gr.Tab("Codec", id="codec"):
        gr.Markdown(f"Audio → {NUM_CODEBOOKS} × T codes ({FRAME_RATE} frames per second, {2 ** BITS_PER_CODE} values "
                    "each) → audio, with the Higgs audio codec the model speaks in.")
        with gr.Row():
            audio_in = gr.Audio(sources=["upload", "microphone"], type="filepath", label="Input audio",
                                elem_id="codec-in")
            audio_out = gr.Audio(type="filepath", label="Decoded from the codes", interactive=False,
                                 elem_id="codec-out", buttons=["download"])
        go = gr.Button("Encode → decode", variant="primary", elem_id="codec-go")
        grid = gr.Image(label=f"Codes ({NUM_CODEBOOKS} × T)", type="pil", format="png", interactive=False,
                        elem_id="codec-grid", height=150)
        stats = gr.Markdown("", elem_id="codec-stats")
        with gr.Row():
            codes_out = gr.File(label="Codes (.npz) to download", interactive=False, elem_id="codec-codes")
            with gr.Column():
                upload = gr.File(label="Upload codes (.npz) to decode", file_types=[".npz"], elem_id="codec-upload")
                decode_button = gr.Button("Decode uploaded codes", elem_id="codec-decode")
    outputs = {"output": audio_out, "grid": grid, "stats": stats, "codes_file": codes_out}

    def shown(result: dict) -> dict:
        return {outputs[name]: value for name, value in result.items() if name in outputs}

    def roundtrip(path, request: gr.Request):
        return shown(codec_roundtrip(studio, path, owner_of(request)))

    def decode_uploaded(path, request: gr.Request):
        return shown(codec_decode(studio, path, owner_of(request)))

    go.click(roundtrip, inputs=audio_in, outputs=list(outputs.values()),
             concurrency_id=ENGINE_GROUP, concurrency_limit=1, api_visibility="private")
    decode_button.click(decode_uploaded, inputs=upload, outputs=list(outputs.values()),
                        concurrency_id=ENGINE_GROUP, concurrency_limit=1, api_visibility="private")


def build_api(studio: Studio) -> None:
    """/codec and /decode (inside the app's hidden column)."""
    def codec(audio, request: gr.Request = None):
        """Audio -> codes -> audio: the decoded audio, the codes (.npz) and the metrics (SNR, log-mel distance,
        frames, bitrate, timings)."""
        result = codec_roundtrip(studio, audio, owner_of(request))
        return result["output"], result["codes_file"], result["metrics"]

    gr.Button(visible=False).click(
        api_errors(codec), inputs=describe([gr.Audio(type="filepath", label="audio")]),
        outputs=[gr.Audio(type="filepath", label="decoded"), gr.File(label="codes"), gr.JSON(label="metrics")],
        api_name="codec", concurrency_id=ENGINE_GROUP, concurrency_limit=1)

    def decode(codes, request: gr.Request = None):
        """Codes (.npz from /codec or /speak's downloads) -> audio."""
        return codec_decode(studio, codes, owner_of(request))["output"]

    gr.Button(visible=False).click(api_errors(decode), inputs=describe([gr.File(label="codes")]),
                                   outputs=gr.Audio(type="filepath", label="audio"), api_name="decode",
                                   concurrency_id=ENGINE_GROUP, concurrency_limit=1)
