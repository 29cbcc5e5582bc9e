"""What the app's buttons do, as plain functions over a ``Studio`` (testable without a browser).

Each handler takes plain values (text, numbers, file paths) and returns, or for
a generation yields, a ``dict`` from output *names* to values; the layout
(``omnivoice_demo.ui.layout``) maps names to components.  User mistakes raise
``gr.Error`` with a message that says what to do (``user_errors``); nothing
shows a traceback, and the server keeps serving.
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import functools
import hashlib
import html
import inspect
import io
import json
import logging
import os
import pathlib
import secrets
import tempfile
import threading
import time
from collections import OrderedDict
from typing import Any, Iterator, Optional

import numpy as np

from .. import audio as audio_ops
from ..engine import SAMPLE_RATE, ChunkEvent, GenerationResult, StepEvent
from ..voice import Voice
from ..voice_design import has_chinese, instruct_categories, resolve_instruct
from . import pictures
from .metrics import log_mel_distance, snr_db
from .models import ModelManager, ModelNotReady
from .voices import VoiceLibrary

log = logging.getLogger(__name__)

AUTO = "Auto"
NO_VOICE = "(none)"
#: references longer than this are cut at a pause to about TRIM_TO seconds
TRIM_ABOVE_SECONDS = 20.0
TRIM_TO_SECONDS = 15.0
DESIGN_CATEGORIES = ("gender", "age", "pitch", "style", "accent", "dialect")
#: generation controls shared by Speak and Clone, with their defaults (the engine's)
CONTROL_DEFAULTS: dict[str, Any] = {
    "language": AUTO, "gender": AUTO, "age": AUTO, "pitch": AUTO, "style": AUTO, "accent": AUTO,
    "dialect": AUTO, "instruct": "", "voice": NO_VOICE, "speed": 1.0, "duration": 0.0, "num_step": 32,
    "guidance_scale": 2.0, "t_shift": 0.1, "position_temperature": 5.0, "class_temperature": 0.0,
    "layer_penalty_factor": 5.0, "denoise": True, "postprocess": True, "seed": 0, "randomize": True,
}


@dataclasses.dataclass
class Studio:
    """What the handlers work on: the models, the saved voices, where output files go."""

    models: ModelManager
    voices: VoiceLibrary
    out_dir: pathlib.Path = dataclasses.field(
        default_factory=lambda: pathlib.Path(tempfile.mkdtemp(prefix="omnivoice-studio-")))
    max_upload_mb: float = 50.0
    history_limit: int = 20
    min_update_interval: float = 0.08   # seconds between two step pictures sent to the browser
    keep_outputs_seconds: float = 6 * 3600
    _voice_cache: "OrderedDict[tuple, Voice]" = dataclasses.field(default_factory=OrderedDict)
    _cache_lock: threading.Lock = dataclasses.field(default_factory=threading.Lock)

    def output_path(self, stem: str, suffix: str) -> pathlib.Path:
        self.out_dir.mkdir(parents=True, exist_ok=True)
        self._sweep()
        return self.out_dir / f"{stem}{suffix}"

    def _sweep(self) -> None:
        """Delete output files older than ``keep_outputs_seconds``."""
        cutoff = time.time() - self.keep_outputs_seconds
        for path in self.out_dir.glob("*"):
            with contextlib.suppress(OSError):
                if path.is_file() and path.stat().st_mtime < cutoff:
                    path.unlink()


# --- errors ---------------------------------------------------------------------------------

def _gr():
    import gradio as gr

    return gr


def user_message(text: str) -> str:
    """A message for gr.Error / gr.Warning (which render HTML): escaped, line breaks kept."""
    return html.escape(str(text), quote=False).replace("\n", "<br>")


def as_user_error(exc: BaseException):
    gr = _gr()
    if isinstance(exc, gr.Error):
        return exc
    if isinstance(exc, ModelNotReady):
        return gr.Error(user_message(exc), title="Model not available", print_exception=False)
    if isinstance(exc, ValueError):
        return gr.Error(user_message(exc), print_exception=False)
    log.exception("unexpected error in a handler")
    return gr.Error(user_message(f"Something went wrong ({type(exc).__name__}: {exc}). The app is still running; "
                                 "the details are in the server log."), title="Unexpected error",
                    print_exception=False)


def user_errors(fn):
    """Turn ``ValueError`` (and anything unexpected) raised by ``fn`` into ``gr.Error``; works on generators."""
    if inspect.isgeneratorfunction(fn):
        @functools.wraps(fn)
        def generator(*args, **kwargs):
            with contextlib.closing(fn(*args, **kwargs)) as inner:
                try:
                    yield from inner
                except Exception as exc:
                    raise as_user_error(exc) from None
        return generator

    @functools.wraps(fn)
    def plain(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except Exception as exc:
            raise as_user_error(exc) from None
    return plain


# --- small formatting helpers ---------------------------------------------------------------

def fmt_seconds(seconds: Optional[float]) -> str:
    if seconds is None or not np.isfinite(seconds):
        return "?"
    if seconds < 0.1:
        return "under 0.1 s"
    if seconds < 10:
        return f"{seconds:.1f} s"
    if seconds < 120:
        return f"{seconds:.0f} s"
    return f"{int(seconds // 60)} min {int(seconds % 60):02d} s"


def progress_html(fraction: float, headline: str, detail: str = "", state: str = "running") -> str:
    percent = max(0.0, min(1.0, fraction)) * 100
    return (f'<div class="ov-progress ov-{state}" data-fraction="{fraction:.4f}">'
            f'<div class="ov-progress-text"><b>{html.escape(headline)}</b>'
            f'<span>{html.escape(detail)}</span></div>'
            f'<div class="ov-progress-track"><div class="ov-progress-fill" style="width:{percent:.1f}%"></div></div>'
            '</div>')


def idle_progress(text: str = "Ready.") -> str:
    return progress_html(0.0, text, state="idle")


def wav_bytes(audio: np.ndarray, sample_rate: int = SAMPLE_RATE) -> bytes:
    import soundfile as sf

    buffer = io.BytesIO()
    sf.write(buffer, np.asarray(audio, dtype=np.float32), sample_rate, format="WAV", subtype="PCM_16")
    return buffer.getvalue()


def chunk_player_html(run_id: str, chunks: list[tuple[int, str]], total: int) -> str:
    """The chunks finished so far, each an <audio> element; the page's script plays new ones in order."""
    if not chunks:
        return ""
    items = "".join(
        f'<div class="ov-chunk-row"><span>chunk {index + 1}/{total}</span>'
        f'<audio controls preload="auto" data-ov-chunk="{run_id}:{index}" src="{uri}"></audio></div>'
        for index, uri in chunks)
    return f'<div class="ov-chunks" data-ov-run="{run_id}">{items}</div>'


def _number(value, default):
    if value is None or (isinstance(value, str) and not value.strip()):
        return default
    try:
        return float(value)
    except (TypeError, ValueError):
        raise ValueError(f"Expected a number, got {value!r}.") from None


# --- voice design ---------------------------------------------------------------------------

def compose_instruct(values: dict) -> Optional[str]:
    """The dropdown choices and the free-text box joined into one instruct string (None when empty)."""
    items = [str(values.get(c) or "").strip() for c in DESIGN_CATEGORIES]
    items = [i for i in items if i and i != AUTO]
    free = str(values.get("instruct") or "").strip()
    if free:
        items.append(free)
    if not items:
        return None
    joiner = "，" if any(has_chinese(i) for i in items) else ", "
    return joiner.join(items)


def check_instruct(values: dict, text: str = "") -> str:
    """Markdown: what the model will be told, or why the instruct is not accepted (with suggestions)."""
    instruct = compose_instruct(values)
    if instruct is None:
        return "Voice design: *none* (the model picks a voice)."
    try:
        resolved = resolve_instruct(instruct, use_zh=has_chinese(text))
    except ValueError as exc:
        first = str(exc).split("\n\n")[0]
        return "⚠ " + html.escape(first).replace("\n", "<br>")
    return f"Voice design: `{resolved}`"


def design_choices() -> dict[str, list[str]]:
    categories = instruct_categories()
    return {name: [AUTO] + items for name, items in categories.items()}


# --- generation settings --------------------------------------------------------------------

def generation_kwargs(values: dict) -> tuple[dict, int]:
    """Control values -> ``engine.prepare`` keyword arguments and the seed that will be used."""
    merged = dict(CONTROL_DEFAULTS)
    merged.update({k: v for k, v in values.items() if v is not None})
    language = str(merged["language"] or "").strip()
    if language.lower() in ("", "auto"):
        language = None
    duration = _number(merged["duration"], 0.0)
    seed = merged["seed"]
    if merged["randomize"] or seed is None or (isinstance(seed, (int, float)) and seed < 0) or seed == "":
        seed = secrets.randbelow(2**31)
    seed_value = _number(seed, 0)
    if seed_value != int(seed_value) or seed_value < 0:
        raise ValueError(f"The seed must be a whole number from 0 up, got {seed!r}.")
    kwargs = dict(
        language=language, instruct=compose_instruct(merged),
        speed=_number(merged["speed"], 1.0), duration=duration if duration and duration > 0 else None,
        num_step=int(_number(merged["num_step"], 32)), guidance_scale=_number(merged["guidance_scale"], 2.0),
        t_shift=_number(merged["t_shift"], 0.1), position_temperature=_number(merged["position_temperature"], 5.0),
        class_temperature=_number(merged["class_temperature"], 0.0),
        layer_penalty_factor=_number(merged["layer_penalty_factor"], 5.0), denoise=bool(merged["denoise"]),
        postprocess=bool(merged["postprocess"]), seed=int(seed_value))
    return kwargs, int(seed_value)


def saved_voice(studio: Studio, name: Optional[str], session: Optional[str]) -> Optional[Voice]:
    if not name or name == NO_VOICE:
        return None
    return studio.voices.load(name, session)


def text_info(studio: Studio, text: str, values: dict, voice: Optional[Voice] = None) -> str:
    """Character count, the length of speech it makes, and the time this machine needs for it."""
    text = text or ""
    count = f"{len(text)} characters"
    if not text.strip():
        return count
    try:
        loaded = studio.models.get()
    except ModelNotReady:
        return count
    try:
        kwargs, _ = generation_kwargs(values)
        plan = loaded.engine.prepare(text, voice=voice, **kwargs)
    except ValueError as exc:
        return f"{count} · ⚠ {html.escape(str(exc).splitlines()[0])}"
    seconds = plan.target_frames / 25.0
    estimate = loaded.engine.estimate_seconds(plan)
    parts = [count, f"about {fmt_seconds(seconds)} of speech"]
    if len(plan.chunks) > 1:
        parts.append(f"{len(plan.chunks)} chunks (played as they finish)")
    parts.append(f"estimated {fmt_seconds(estimate)} to generate on this machine" if estimate is not None
                 else "time estimate after the first generation")
    return " · ".join(parts)


# --- the generation loop -----------------------------------------------------------------------

def _save_outputs(studio: Studio, result: GenerationResult, stem: str, text: str) -> dict[str, pathlib.Path]:
    import soundfile as sf

    wav = studio.output_path(stem, ".wav")
    flac = studio.output_path(stem, ".flac")
    npz = studio.output_path(stem, ".codes.npz")
    sf.write(wav, result.audio, result.sample_rate, subtype="PCM_16")
    sf.write(flac, result.audio, result.sample_rate, subtype="PCM_16", format="FLAC")
    save_codes(npz, result.codes, {"seed": result.seed, "text": text, "settings": result.settings})
    return {"wav": wav, "flac": flac, "npz": npz}


def save_codes(path: pathlib.Path, codes: list[np.ndarray] | np.ndarray, meta: Optional[dict] = None) -> pathlib.Path:
    """Codes as ``.npz``: ``codes`` int16 [8, T] (chunks joined), ``chunk_frames``, ``meta`` (JSON)."""
    parts = [np.asarray(codes)] if isinstance(codes, np.ndarray) else [np.asarray(c) for c in codes]
    joined = np.concatenate(parts, axis=-1).astype(np.int16)
    with open(path, "wb") as handle:
        np.savez_compressed(handle, codes=joined, chunk_frames=np.array([p.shape[-1] for p in parts]),
                            meta=np.array(json.dumps(dict(meta or {}, format="omnivoice-codes", version=1),
                                                     default=str, ensure_ascii=False)))
    return pathlib.Path(path)


def load_codes(path) -> np.ndarray:
    """Codes ``[8, T]`` from an ``.npz`` written by this app (or any npz with an ``codes`` array)."""
    try:
        with np.load(path, allow_pickle=False) as data:
            if "codes" not in data:
                raise ValueError(f"it holds {', '.join(data.files) or 'nothing'}, not 'codes'")
            codes = np.asarray(data["codes"])
    except ValueError as exc:
        raise ValueError(f"This file is not a codes file of this app ({exc}); download one from the Codec "
                         "or Speak tab.") from None
    except (OSError, EOFError) as exc:
        raise ValueError(f"Cannot read the codes file ({exc}); upload the .npz this app saved.") from None
    if codes.ndim == 3 and codes.shape[0] == 1:
        codes = codes[0]
    if codes.ndim != 2 or codes.shape[0] != 8 or codes.shape[1] == 0:
        raise ValueError(f"The codes have shape {codes.shape}; expected [8, frames].")
    if not np.issubdtype(codes.dtype, np.integer) or codes.min() < 0 or codes.max() > 1023:
        raise ValueError("The codes must be whole numbers from 0 to 1023.")
    return codes.astype(np.int64)


def result_info(result: GenerationResult, model_label: str) -> str:
    stages = ", ".join(f"{k} {v:.2f} s" for k, v in result.timings.items() if k != "total")
    return (f"**{result.duration:.2f} s** of audio in **{result.timings['total']:.2f} s** "
            f"(RTF {result.rtf:.2f}) · seed **{result.seed}** · {len(result.chunks)} chunk"
            f"{'s' if len(result.chunks) > 1 else ''} · {result.settings['num_step']} steps · {model_label}\n\n"
            f"Timings: {stages}.")


def history_rows(history: list[dict]) -> list[list]:
    return [[h["when"], h["tab"], h["text"], h["seed"], h["duration"], h["rtf"]] for h in reversed(history)]


HISTORY_HEADERS = ["time", "tab", "text", "seed", "audio (s)", "RTF"]


def run_generation(studio: Studio, text: str, values: dict, voice: Optional[Voice], history: Optional[list],
                   tab: str) -> Iterator[dict]:
    """A generation with live progress: yields updates for the progress bar, the code grid, the finished
    chunks, and at the end the audio, the files, the info, the seed used and the history."""
    loaded = studio.models.get()
    engine = loaded.engine
    kwargs, seed = generation_kwargs(values)
    plan = engine.prepare(text, voice=voice, **kwargs)  # validates: ValueError -> a message
    estimate = engine.estimate_seconds(plan)
    run_id = secrets.token_hex(4)
    num_chunks = len(plan.chunks)
    first = (f"Estimated {fmt_seconds(estimate)} on this machine" if estimate is not None
             else "First run: measuring this machine's speed")
    yield {"progress": progress_html(0.0, "Starting…", f"{first} · {plan.target_frames / 25:.1f} s of speech"
                                     f"{f' in {num_chunks} chunks' if num_chunks > 1 else ''}"),
           "grid": pictures.code_grid(np.full((8, max(1, plan.target_frames if num_chunks == 1 else 1)), 1024)),
           "chunks": "", "seed": seed, "audio": None, "files": None, "info": ""}

    stream = engine.stream(text, voice=voice, **kwargs)
    finished: list[np.ndarray] = []
    chunk_audio: list[tuple[int, str]] = []
    last_sent = 0.0
    result: Optional[GenerationResult] = None
    try:
        while True:
            with loaded.lock:  # one step of one generation at a time on this engine
                event = next(stream, None)
            if event is None:
                break
            if isinstance(event, StepEvent):
                now = time.perf_counter()
                final_step = event.step == event.num_steps
                if now - last_sent < studio.min_update_interval and not final_step and event.step != 1:
                    continue
                last_sent = now
                done = (event.chunk + event.step / event.num_steps) / event.num_chunks
                left = event.elapsed * (1 - done) / done if done > 0 else estimate
                detail = (f"chunk {event.chunk + 1} of {event.num_chunks} · {fmt_seconds(event.elapsed)} elapsed · "
                          f"about {fmt_seconds(left)} left")
                yield {"progress": progress_html(done, f"Step {event.step} of {event.num_steps}", detail),
                       "grid": pictures.code_grid(finished + [event.codes], event.decided)}
            elif isinstance(event, ChunkEvent):
                finished.append(event.codes)
                if event.num_chunks > 1:
                    uri = "data:audio/wav;base64," + base64.b64encode(wav_bytes(event.audio)).decode("ascii")
                    chunk_audio.append((event.chunk, uri))
                    yield {"chunks": chunk_player_html(run_id, chunk_audio, event.num_chunks),
                           "grid": pictures.code_grid(finished)}
            elif isinstance(event, GenerationResult):
                result = event
    finally:
        stream.close()  # stops the engine within a step when the run is cancelled
        if result is None:
            log.info("generation %s stopped before the end (%d of %d chunks done)", run_id, len(finished), num_chunks)
    if result is None:
        return
    stem = f"omnivoice-{time.strftime('%Y%m%d-%H%M%S')}-{tab.lower()}-{result.seed}-{run_id}"
    files = _save_outputs(studio, result, stem, text)
    history = list(history or [])
    history.append({"when": time.strftime("%H:%M:%S"), "tab": tab, "text": text if len(text) <= 60 else text[:57] + "…",
                    "seed": result.seed, "duration": round(result.duration, 2), "rtf": round(result.rtf, 3),
                    "wav": str(files["wav"])})
    history = history[-studio.history_limit:]
    yield {"progress": progress_html(1.0, "Done", f"{result.duration:.2f} s of audio in "
                                                  f"{fmt_seconds(result.timings['total'])}", state="done"),
           "grid": pictures.code_grid(result.codes),
           "audio": str(files["wav"]), "files": [str(files["wav"]), str(files["flac"]), str(files["npz"])],
           "info": result_info(result, loaded.label), "seed": result.seed, "history": history,
           "history_table": history_rows(history)}


@user_errors
def speak(studio: Studio, text: str, values: dict, history: Optional[list] = None,
          session: Optional[str] = None) -> Iterator[dict]:
    """The Speak tab: text (and voice design, or a saved voice) -> speech, with live progress."""
    voice = saved_voice(studio, values.get("voice"), session)
    yield from run_generation(studio, text, values, voice, history, "Speak")


# --- cloning --------------------------------------------------------------------------------

def _file_size_check(studio: Studio, path: str, what: str) -> None:
    size = os.path.getsize(path)
    if size > studio.max_upload_mb * 1024 * 1024:
        raise ValueError(f"The {what} is {size / 1024 / 1024:.0f} MB; the limit is {studio.max_upload_mb:.0f} MB. "
                         "Upload a shorter clip (3-10 s of speech is best).")


def read_reference(studio: Studio, path: Optional[str]) -> tuple[np.ndarray, int, str]:
    """(audio [C, N], sample rate, note) of an uploaded or recorded reference, cut when it is long."""
    if not path:
        raise ValueError("Record or upload a reference clip first (3-10 s of one speaker, with its transcript).")
    path = str(path)
    _file_size_check(studio, path, "reference file")
    wav, sr = audio_ops.load_audio_file(path)
    seconds = wav.shape[-1] / sr
    channels = "mono" if wav.shape[0] == 1 else f"{wav.shape[0]} channels (mixed to mono)"
    note = f"Reference: {seconds:.1f} s, {sr} Hz, {channels}."
    if seconds > audio_ops.MAX_REFERENCE_SECONDS:
        raise ValueError(f"The reference is {seconds:.0f} s long; the limit is "
                         f"{audio_ops.MAX_REFERENCE_SECONDS:.0f} s. Upload 3-10 s of clear speech.")
    if seconds > TRIM_ABOVE_SECONDS:
        mono = audio_ops.to_mono(wav)
        trimmed = audio_ops.trim_long_audio(mono, sr, max_duration=TRIM_TO_SECONDS, trim_threshold=TRIM_ABOVE_SECONDS)
        if trimmed.shape[-1] < mono.shape[-1]:
            wav = trimmed
            note += (f" It is long, so only the first {wav.shape[-1] / sr:.1f} s are used (cut at a pause): "
                     "the transcript must be what is said in that part.")
    return wav, sr, note


def reference_note(studio: Studio, path: Optional[str]) -> str:
    """Markdown shown when a reference is recorded or uploaded (problems as a note, not an error)."""
    if not path:
        return "Record or upload 3-10 s of one speaker, and type exactly what is said."
    try:
        wav, sr, note = read_reference(studio, path)
        audio_ops.prepare_reference(wav, sr, transcript_given=True, preprocess=False)
    except ValueError as exc:
        return "⚠ " + html.escape(str(exc))
    return note


def clone_voice(studio: Studio, path: Optional[str], transcript: str, consent: bool, preprocess: bool = True,
                name: str = "") -> tuple[Voice, str]:
    """The voice of a reference clip (cached by file content, transcript and model)."""
    if not consent:
        raise ValueError("Tick “I have the right to use this voice” first: clone only your own voice or one "
                         "you have permission to use.")
    if not transcript or not transcript.strip():
        raise ValueError("Type the transcript of the reference: exactly what is said in the clip (the model needs "
                         "it to clone the voice).")
    loaded = studio.models.get()
    wav, sr, note = read_reference(studio, path)
    digest = hashlib.sha1(np.ascontiguousarray(wav).tobytes()).hexdigest()
    key = (loaded.label, digest, sr, transcript.strip(), bool(preprocess))
    with studio._cache_lock:
        voice = studio._voice_cache.get(key)
    if voice is None:
        with loaded.lock:
            voice = loaded.engine.clone_voice(wav, sr, transcript, preprocess=bool(preprocess), name=name)
        with studio._cache_lock:
            studio._voice_cache[key] = voice
            while len(studio._voice_cache) > 8:
                studio._voice_cache.popitem(last=False)
    return dataclasses.replace(voice, name=name or voice.name), note


@user_errors
def clone(studio: Studio, reference: Optional[str], transcript: str, consent: bool, text: str, values: dict,
          preprocess: bool = True, history: Optional[list] = None) -> Iterator[dict]:
    """The Clone tab: reference + transcript + consent + text -> speech in that voice."""
    voice, note = clone_voice(studio, reference, transcript, consent, preprocess)
    if "only the first" in note:
        _gr().Warning(user_message(note))
    values = dict(values, voice=None)
    yield from run_generation(studio, text, values, voice, history, "Clone")


@user_errors
def save_voice(studio: Studio, reference: Optional[str], transcript: str, consent: bool, name: str,
               preprocess: bool = True, session: Optional[str] = None) -> dict:
    """Save the reference's voice under ``name`` in the user data folder (offered in Speak)."""
    from .voices import clean_name

    name = clean_name(name)
    voice, _ = clone_voice(studio, reference, transcript, consent, preprocess, name=name)
    path = studio.voices.save(voice, name, session)
    names = studio.voices.names(session)
    where = "for this browser session" if studio.voices.private else f"in {path.parent}"
    return {"message": f"Saved the voice **{html.escape(name)}** ({voice.seconds:.1f} s of reference) {where}. "
                       "Pick it in the Speak tab's voice list.",
            "voices": names, "selected": name}


def voice_names(studio: Studio, session: Optional[str] = None) -> list[str]:
    return [NO_VOICE] + studio.voices.names(session)


# --- codec ----------------------------------------------------------------------------------

def _codec_outputs(studio: Studio, codes: np.ndarray, audio_out: np.ndarray, stem: str, stats: dict,
                   timings: dict) -> dict:
    import soundfile as sf

    out_wav = studio.output_path(stem, ".decoded.wav")
    sf.write(out_wav, audio_out, SAMPLE_RATE, subtype="PCM_16")
    npz = save_codes(studio.output_path(stem, ".codes.npz"), codes, {"source": "codec tab"})
    frames = codes.shape[-1]
    lines = [f"**{frames} frames** ({frames / 25:.2f} s at 25 frames/s) · 8 codebooks × 10 bits × 25/s = "
             f"**{8 * 10 * 25 / 1000:.1f} kbit/s**"]
    if stats:
        lines.append(f"Signal-to-noise **{stats['snr_db']:.1f} dB** · log-mel distance "
                     f"**{stats['log_mel_distance']:.3f}** (0 = identical) · input {stats['input_seconds']:.2f} s")
    lines.append("Timings: " + ", ".join(f"{k} {v:.2f} s" for k, v in timings.items()))
    return {"output": str(out_wav), "grid": pictures.code_grid(codes), "stats": "\n\n".join(lines),
            "codes_file": str(npz), "metrics": dict(stats, frames=int(frames), bitrate_kbps=2.0,
                                                    timings={k: round(v, 4) for k, v in timings.items()})}


@user_errors
def codec_roundtrip(studio: Studio, audio_path: Optional[str]) -> dict:
    """Audio -> codes -> audio: both players, the code picture, frames, bitrate, SNR, log-mel distance."""
    if not audio_path:
        raise ValueError("Record or upload audio first.")
    _file_size_check(studio, str(audio_path), "audio file")
    wav, sr = audio_ops.load_audio_file(str(audio_path))
    seconds = wav.shape[-1] / sr
    if seconds > 300:
        raise ValueError(f"The audio is {seconds:.0f} s long; the Codec tab takes up to 300 s.")
    loaded = studio.models.get()
    engine = loaded.engine
    mono = audio_ops.to_mono(wav)
    if np.sqrt(np.mean(mono ** 2)) < audio_ops.SILENT_RMS:
        raise ValueError("The audio is silent; record or upload a clip where something is audible.")
    with loaded.lock:
        start = time.perf_counter()
        codes = engine.encode(mono, sr)
        encoded = time.perf_counter()
        out = engine.decode(codes)
        decoded = time.perf_counter()
    if sr != SAMPLE_RATE:
        from ..resample import resample

        ref = resample(mono, sr, SAMPLE_RATE)[0]
    else:
        ref = mono[0]
    ref = ref[: codes.shape[-1] * 960]
    stats = {"snr_db": round(snr_db(ref, out), 3), "log_mel_distance": round(log_mel_distance(ref, out), 4),
             "input_seconds": round(seconds, 3)}
    stem = f"codec-{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(3)}"
    return _codec_outputs(studio, codes, out, stem, stats, {"encode": encoded - start, "decode": decoded - encoded})


@user_errors
def codec_decode(studio: Studio, codes_path: Optional[str]) -> dict:
    """Uploaded codes (.npz) -> audio."""
    if not codes_path:
        raise ValueError("Upload a codes file (.npz) saved by this app first.")
    _file_size_check(studio, str(codes_path), "codes file")
    codes = load_codes(codes_path)
    loaded = studio.models.get()
    with loaded.lock:
        start = time.perf_counter()
        out = loaded.engine.decode(codes)
        took = time.perf_counter() - start
    stem = f"decode-{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(3)}"
    return _codec_outputs(studio, codes, out, stem, {}, {"decode": took})


# --- benchmark ------------------------------------------------------------------------------

BENCH_COLUMNS = ["model", "profile", "num_step", "frames", "audio_s", "prompt_s", "embeddings_s", "backbone_s",
                 "heads_s", "sampling_s", "codec_decode_s", "postprocess_s", "total_s", "per_step_ms", "rtf",
                 "peak_rss_mb"]


@user_errors
def benchmark(studio: Studio, labels: Optional[list[str]], length: str = "short", num_step: int = 32,
              repeats: int = 1, progress=None) -> dict:
    """Time the chosen loaded models on the same text: table, chart, machine, CSV."""
    from ..quick_bench import TEXTS, machine_info, rows_to_csv, run_benchmark

    if length not in TEXTS:
        raise ValueError(f"Text length must be one of {', '.join(TEXTS)}, got {length!r}.")
    num_step = int(_number(num_step, 32))
    if not 1 <= num_step <= 64:
        raise ValueError(f"Steps must be between 1 and 64 in the benchmark, got {num_step}.")
    repeats = int(_number(repeats, 1))
    if not 1 <= repeats <= 10:
        raise ValueError(f"Repetitions must be between 1 and 10, got {repeats}.")
    labels = [label for label in (labels or []) if label]
    if not labels:
        labels = [studio.models.get().label]
    chosen = [studio.models.get(label) for label in labels]
    engines = {m.label: m.engine for m in chosen}
    locks = [m.lock for m in chosen]
    with contextlib.ExitStack() as stack:
        for lock in locks:
            stack.enter_context(lock)
        rows = run_benchmark(engines, TEXTS[length], num_step=num_step, repeats=repeats,
                             progress=(lambda message, fraction: progress(fraction, desc=message)) if progress else None)
    machine = machine_info(chosen[0].engine)
    stages = ["prompt", "embeddings", "backbone", "heads", "sampling", "codec_decode", "postprocess"]
    chart = pictures.bar_chart(stages + ["total"], {r["model"]: [r[f"{s}_s"] for s in stages] + [r["total_s"]]
                                                    for r in rows},
                               title=f"Seconds per stage · {length} text · {num_step} steps · mean of {repeats}")
    csv_path = studio.output_path(f"benchmark-{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(3)}", ".csv")
    csv_path.write_text(rows_to_csv(rows), encoding="utf-8")
    machine_md = (f"**Machine:** {machine['cpu']} · {machine['usable_cores']} of {machine['cores']} cores usable · "
                  f"{machine['os']} · Python {machine['python']} · onnxruntime {machine['onnxruntime']} · "
                  f"provider {machine['provider']} · threads {machine['threads']}")
    return {"table": {"headers": BENCH_COLUMNS, "data": [[r.get(c) for c in BENCH_COLUMNS] for r in rows]},
            "chart": chart, "machine": machine_md, "csv": str(csv_path), "rows": rows}


# --- the model bar -------------------------------------------------------------------------

def model_bar(studio: Studio) -> str:
    """HTML: the active model, or what is loading (with progress), or what went wrong and what to do."""
    manager = studio.models
    status = manager.status
    parts = []
    try:
        active = manager.get() if manager.active else None
    except ModelNotReady:
        active = None
    if active is not None:
        eng = active.engine
        parts.append(f'<span class="ov-badge ov-ready">ready</span> <b>{html.escape(active.label)}</b> · profile '
                     f'<code>{html.escape(eng.profile)}</code> · provider <code>{html.escape(active.provider)}</code>'
                     f' · <span class="ov-dim">{html.escape(str(active.folder))}</span>')
        if active.repaired:
            parts.append('<span class="ov-notice">Repaired: the published backbone attended causally; a '
                         'bidirectional copy is used (see the Model tab).</span>')
    if status.state == "loading":
        fraction = status.fraction
        bar = (f'<div class="ov-progress-track"><div class="ov-progress-fill" style="width:{fraction * 100:.1f}%">'
               f'</div></div>') if fraction is not None else ""
        parts.append(f'<span class="ov-badge ov-loading">loading</span> {html.escape(status.request)} · '
                     f'<b>{html.escape(status.stage)}</b>: {html.escape(status.message)}{bar}')
    elif status.state == "error":
        parts.append(f'<span class="ov-badge ov-error">not loaded</span> {html.escape(status.request)}: '
                     f'{html.escape(status.message)}<br><span class="ov-dim">What to do: give a local model folder '
                     f'in the Model tab (or start with <code>--model DIR</code>), or connect this machine to the '
                     f'internet so the model can be downloaded from the Hugging Face Hub, then press Load.</span>')
    elif active is None:
        parts.append('<span class="ov-badge ov-error">no model</span> No model is loaded. Open the <b>Model</b> tab, '
                     'give a model folder or a Hub repo and press <b>Load</b>, or start the app with '
                     '<code>--model DIR</code>.')
    for notice in status.notices[-3:]:
        parts.append(f'<span class="ov-notice">{html.escape(notice)}</span>')
    return '<div class="ov-model-bar">' + "<br>".join(parts) + "</div>"


def model_details(studio: Studio) -> str:
    """Markdown for the Model tab: every loaded model with its precision, files, repair and licence."""
    manager = studio.models
    if not manager.models:
        return "No model loaded yet."
    blocks = []
    for label, model in manager.models.items():
        info = model.engine.describe()
        precision = ", ".join(f"{k} {v}" for k, v in info["precision"].items() if v and not k.startswith("int4_"))
        lines = [f"### {'▶ ' if label == manager.active else ''}{label}",
                 f"- source: `{model.source}`", f"- folder: `{model.folder}`",
                 f"- profile `{info['profile']}`: {precision}",
                 f"- provider `{model.provider}`, threads {info['threads'] or 'default'}, backbone attention "
                 f"{info['backbone_attention']}, loaded in {model.load_seconds:.1f} s"]
        if model.repaired or info.get("repairs"):
            lines.append("- **repaired**: the published `llm_decoder.onnx` attends causally, but OmniVoice's "
                         "backbone attends in both directions; a bidirectional copy was made (`make_bidirectional`)")
        for notice in model.notices:
            lines.append(f"- note: {notice}")
        lines.append(f"- licence of the weights: {model.licence}")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)
