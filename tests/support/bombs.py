"""The inputs of issue 12 that took the server down, built from numbers (no downloads), and a meter.

``build_all(folder)`` writes every bomb file into ``folder`` and returns their
paths by name.  ``ENGINE_CASES`` replays each case through the Python API in a
way that runs on any checkout (before and after the fix), so

    python -m tests.support.bombs --checkout /path/to/checkout --model TINY_FOLDER

prints, for that checkout, each case's outcome (refused with which message,
served, crashed, killed) and the peak RSS of a fresh process running it.  A
process is killed at ``--kill-mb`` (default 3000) so the "before" runs cannot
take the machine down; such a case is reported as ">= kill-mb".
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import struct
import subprocess
import sys
import time
import zipfile

import numpy as np

# --- the files ---------------------------------------------------------------------------------

def tone(seconds: float, rate: int, seed: int = 0) -> np.ndarray:
    """A speech-like mono signal (float32 [N])."""
    from tests.support.signals import speech_like

    return speech_like(seconds, rate, seed=seed)[0]


def wav_at(path: pathlib.Path, seconds: float, rate: int) -> pathlib.Path:
    import soundfile as sf

    sf.write(path, tone(seconds, rate), rate, subtype="PCM_16")
    return path


def wav_claiming_rate(path: pathlib.Path, claimed: int) -> pathlib.Path:
    """A 0.5 s 16 kHz WAV whose header says ``claimed`` Hz (the sample-rate and byte-rate fields patched)."""
    wav_at(path, 0.5, 16000)
    data = bytearray(path.read_bytes())
    assert data[:4] == b"RIFF" and data[12:16] == b"fmt "
    data[24:28] = struct.pack("<I", claimed)
    data[28:32] = struct.pack("<I", min(claimed * 2, 2**32 - 1))
    path.write_bytes(bytes(data))
    return path


def flac_of_silence(path: pathlib.Path, seconds: float = 3600, rate: int = 16000) -> pathlib.Path:
    """An hour of silence as FLAC (well under a megabyte), written in blocks."""
    import soundfile as sf

    block = np.zeros(rate * 60, dtype=np.int16)
    with sf.SoundFile(path, "w", samplerate=rate, channels=1, format="FLAC", subtype="PCM_16") as out:
        for _ in range(int(seconds // 60)):
            out.write(block)
    return path


def npz_of_zero_codes(path: pathlib.Path, frames: int = 30000) -> pathlib.Path:
    """A codes file of zeros [8, frames] (compressed: a few hundred bytes)."""
    with open(path, "wb") as handle:
        np.savez_compressed(handle, codes=np.zeros((8, frames), dtype=np.int16),
                            meta=np.array(json.dumps({"format": "omnivoice-codes", "version": 1})))
    return path


def npz_bomb_voice(path: pathlib.Path, frames: int = 16 * 1024 * 1024) -> pathlib.Path:
    """A voice file whose codes member inflates to ``8 * frames * 8`` bytes (1 GiB by default) from ~1 MB."""
    header = {"descr": "<i8", "fortran_order": False, "shape": (8, frames)}
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        with archive.open("codes.npy", "w", force_zip64=True) as member:
            np.lib.format.write_array_header_1_0(member, header)
            zeros = bytes(1 << 22)
            remaining = 8 * frames * 8
            while remaining > 0:
                member.write(zeros[:min(remaining, len(zeros))])
                remaining -= len(zeros)
        meta = {"format_version": 1, "transcript": "hello.", "rms": 0.1, "name": "bomb"}
        with archive.open("meta.npy", "w") as member:
            np.lib.format.write_array(member, np.array(json.dumps(meta)))
    return path


def voice_with(path: pathlib.Path, codes=None, **meta_changes) -> pathlib.Path:
    """A small voice file with some field changed (``meta_changes``; None removes a key; ``meta=`` replaces it)."""
    codes = np.zeros((8, 50), dtype=np.int64) if codes is None else codes
    meta = {"format_version": 1, "transcript": "hello there.", "rms": 0.05, "name": "edited"}
    if "meta" in meta_changes:
        meta = meta_changes.pop("meta")
    for key, value in meta_changes.items():
        if value is None:
            meta.pop(key, None)
        else:
            meta[key] = value
    with open(path, "wb") as handle:
        np.savez(handle, codes=codes, meta=np.array(json.dumps(meta)))
    return path


def build_all(folder: pathlib.Path, voice_bomb_frames: int = 16 * 1024 * 1024) -> dict[str, pathlib.Path]:
    folder.mkdir(parents=True, exist_ok=True)
    files = {
        "wav_12001hz": wav_at(folder / "rate-12001.wav", 14000 / 12001, 12001),
        "wav_claims_2147483647hz": wav_claiming_rate(folder / "rate-claimed.wav", 2147483647),
        "flac_hour_of_silence": flac_of_silence(folder / "hour.flac"),
        "codes_zeros_8x30000": npz_of_zero_codes(folder / "zeros.npz"),
        "voice_npz_bomb": npz_bomb_voice(folder / "bomb-voice.npz", voice_bomb_frames),
        "voice_rms_nan": voice_with(folder / "rms-nan.npz", rms=float("nan")),
        "voice_rms_negative": voice_with(folder / "rms-neg.npz", rms=-5.0),
        "voice_float_codes": voice_with(folder / "float-codes.npz", codes=np.zeros((8, 50)) + 0.5),
        "voice_bool_codes": voice_with(folder / "bool-codes.npz", codes=np.ones((8, 50), dtype=bool)),
        "voice_meta_list": voice_with(folder / "meta-list.npz", meta=[1, 2]),
        "voice_no_transcript": voice_with(folder / "no-transcript.npz", transcript=None),
    }
    for rate in range(1009, 1032, 5):
        files[f"wav_{rate}hz"] = wav_at(folder / f"rate-{rate}.wav", 2.0, rate)
    return files


# --- the cases through the Python API (the same calls on any checkout) ----------------------------

PUNCTUATED_100K = ("This is one sentence of a very long text. " * 2400)[:100000]


def _engine(model: str):
    from omnivoice_demo.engine.loop import OmniVoiceEngine

    return OmniVoiceEngine(model, verify="none")


def _clone(model, path):
    return _engine(model).clone_voice(str(path), transcript="hello there, this is a test.")


def _codec(model, *paths):
    from omnivoice_demo.audio.processing import load_audio_file

    engine = _engine(model)
    for path in paths:
        audio, rate = load_audio_file(str(path))
        engine.decode(engine.encode(audio, rate))


def _decode(model, path):
    with np.load(path) as data:
        codes = np.asarray(data["codes"]).astype(np.int64)
    return _engine(model).decode(codes)


def _voice(model, path):
    from omnivoice_demo.storage.voice_file import Voice

    voice = Voice.load(path)
    return _engine(model).generate("Hello.", voice=voice, num_step=1, seed=0)


def _text(model, text, **settings):
    return _engine(model).generate(text, seed=0, **settings)


def _plan(model, text, **settings):
    return _engine(model).prepare(text, **settings)


ENGINE_CASES = {
    "wav_12001hz": lambda m, f: _clone(m, f["wav_12001hz"]),
    "wav_claims_2147483647hz": lambda m, f: _clone(m, f["wav_claims_2147483647hz"]),
    "codec_1009_to_1029hz_x5": lambda m, f: _codec(m, *(f[k] for k in f if k.startswith("wav_10"))),
    "flac_hour_of_silence": lambda m, f: _clone(m, f["flac_hour_of_silence"]),
    "decode_zeros_8x30000": lambda m, f: _decode(m, f["codes_zeros_8x30000"]),
    "voice_npz_bomb": lambda m, f: _voice(m, f["voice_npz_bomb"]),
    "text_4000_a": lambda m, f: _text(m, "a" * 4000, num_step=1),
    "text_30000_a": lambda m, f: _text(m, "a" * 30000, num_step=1),
    "text_100000_punctuated": lambda m, f: _plan(m, PUNCTUATED_100K),
    "speed_10": lambda m, f: _text(m, "Hello there.", num_step=1, speed=10.0),
    "voice_rms_nan": lambda m, f: _voice(m, f["voice_rms_nan"]),
    "voice_rms_negative": lambda m, f: _voice(m, f["voice_rms_negative"]),
    "voice_float_codes": lambda m, f: _voice(m, f["voice_float_codes"]),
    "voice_bool_codes": lambda m, f: _voice(m, f["voice_bool_codes"]),
    "voice_meta_list": lambda m, f: _voice(m, f["voice_meta_list"]),
    "voice_no_transcript": lambda m, f: _voice(m, f["voice_no_transcript"]),
    "chunk_duration_0": lambda m, f: _plan(m, "Hello there.", chunk_duration=0),
}


# --- the meter -----------------------------------------------------------------------------------

# the child imports omnivoice_demo from the checkout measured, and this file by its path (that checkout's
# tests/ need not have it)
CHILD = """
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("bombs", {bombs!r})
bombs = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bombs)
files = {{k: __import__("pathlib").Path(v) for k, v in json.loads({files!r}).items()}}
try:
    bombs.ENGINE_CASES[{case!r}]({model!r}, files)
    print("OUTCOME served")
except Exception as exc:
    from omnivoice_demo.errors import OmniVoiceError
    kind = "refused" if isinstance(exc, (OmniVoiceError, ValueError)) and not isinstance(exc, (RuntimeError,)) else "crashed"
    print("OUTCOME", kind, type(exc).__name__ + ":", " ".join(str(exc).split())[:200])
"""


def measure(case: str, checkout: pathlib.Path, model: str, files: dict, kill_mb: float, timeout: float) -> dict:
    """Run one case in a fresh process on ``checkout``: outcome, seconds, peak RSS (MB)."""
    import psutil

    code = CHILD.format(bombs=str(pathlib.Path(__file__).resolve()), files=json.dumps({k: str(v) for k, v in files.items()}), case=case,
                        model=model)
    env = dict(os.environ, PYTHONPATH=str(checkout), HF_HUB_OFFLINE="1", OMP_NUM_THREADS="2")
    started = time.monotonic()
    child = subprocess.Popen([sys.executable, "-c", code], cwd=checkout, env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    process, peak, killed = psutil.Process(child.pid), 0.0, ""
    while child.poll() is None:
        try:
            peak = max(peak, process.memory_info().rss / 2**20)
        except psutil.NoSuchProcess:
            break
        if peak >= kill_mb:
            killed = f"killed at {kill_mb:.0f} MB"
        elif time.monotonic() - started > timeout:
            killed = f"killed after {timeout:.0f} s"
        if killed:
            child.kill()
            break
        time.sleep(0.02)
    out, err = child.communicate()
    seconds = time.monotonic() - started
    lines = [line for line in out.splitlines() if line.startswith("OUTCOME")]
    outcome = killed or (lines[-1][8:] if lines else f"crashed (exit {child.returncode}): {err.strip()[-200:]}")
    return {"case": case, "outcome": outcome, "seconds": round(seconds, 1), "peak_rss_mb": round(peak)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkout", required=True, type=pathlib.Path)
    parser.add_argument("--model", required=True)
    parser.add_argument("--work", type=pathlib.Path, default=pathlib.Path("/tmp/omnivoice-bombs"))
    parser.add_argument("--kill-mb", type=float, default=3000)
    parser.add_argument("--timeout", type=float, default=120)
    parser.add_argument("--cases", default="", help="comma-separated subset")
    args = parser.parse_args(argv)
    files = build_all(args.work)
    cases = [c for c in ENGINE_CASES if not args.cases or c in args.cases.split(",")]
    for case in cases:
        row = measure(case, args.checkout.resolve(), args.model, files, args.kill_mb, args.timeout)
        print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
