"""One generation with live progress, shared by Speak and Clone (plain functions of a ``Studio``).

``run_generation`` yields ``dict`` updates from output *names* (progress, grid, chunks, audio,
files, info, seed, history, history_table, takes: the result's sentences) to values; the panel
(generation_panel.py) maps the names to components.  ``text_info`` is the line under the text box.
"""

from __future__ import annotations

import base64
import html
import logging
import pathlib
import secrets
import time
from typing import Iterator, Optional

import numpy as np

from ..audio.processing import audio_bytes, save_audio
from ..batch.subtitles import word_subtitles
from ..storage.atomic import write_atomically
from ..storage.codes_file import save_codes
from ..storage.outputs import text_stem
from ..constants import AUDIO_MASK_ID, FRAME_RATE, NUM_CODEBOOKS
from ..engine.events import GenerationPlan
from ..text.normalize_choice import normalization_note
from ..engine.loop import ChunkEvent, GenerationResult, StepEvent
from ..studio.sentences import SentenceResult, model_key
from ..studio.service import QueueEvent
from ..errors import InvalidInput, OmniVoiceError
from ..storage.voice_file import Voice
from . import pictures
from .controls import generation_request, styled_request
from .display import (check_rows, chunk_player_html, fmt_seconds, history_rows, progress_html, read_along_html,
                      result_info, shown, style_note)
from ..studio.models import ModelNotReady
from .speed_controls import preset_estimates, time_left
from ..studio import Studio

log = logging.getLogger(__name__)


def text_info(studio: Studio, text: str, values: dict, voice: Optional[Voice] = None, ssml: bool = False) -> str:
    """Character count, the length of speech it makes, and the time this machine needs for it (SSML: the count;
    its own line says what it holds)."""
    text = text or ""
    count = f"{len(text)} characters"
    if not text.strip() or ssml:
        return count
    try:
        loaded = studio.models.get()
    except ModelNotReady:
        return count
    try:
        arguments = generation_request(values, studio.limits).engine_arguments()
        plan = loaded.engine.prepare(text, voice=voice, **arguments)
    except OmniVoiceError as exc:   # a wrong request, or a setting whose package or model is missing: said, never a 500
        return f"{count} · ⚠ {_first_line(exc)}"
    estimate = loaded.engine.estimate_seconds(plan)
    parts = [count, f"about {fmt_seconds(plan.target_frames / FRAME_RATE)} of speech"]
    if len(plan.chunks) > 1:
        parts.append(f"{len(plan.chunks)} chunks (played as they finish)")
    parts.append(f"estimated {fmt_seconds(estimate)} to generate on this machine" if estimate is not None
                 else "time estimate after the first generation")
    presets = preset_estimates(loaded.engine, text, voice, **arguments) if estimate is not None else ""
    if voice is not None and estimate is not None:
        presets += reference_cost(loaded.engine, text, voice, plan, estimate, arguments)
    read = f"  \nWhat will be read: {shown(plan.text, PREVIEW_CHARS)}" if plan.text != text else ""
    numbers = f"  \nNumbers: {html.escape(normalization_note(plan))}"   # whether, and in which language, as words
    return " · ".join(parts) + read + numbers + (f"  \n{presets}" if presets else "")


#: how much of the normalised text the preview shows
PREVIEW_CHARS = 400


#: the clip length the Clone tab compares a reference with (the model's README: 3-10 s works best)
COMPARED_REFERENCE_SECONDS = 6.0


def reference_cost(engine, text: str, voice: Voice, plan, estimate: float, arguments: dict) -> str:
    """What the reference clip's length costs: this text's estimate with it against one with a 6 s clip
    (every step's prompt carries the reference's frames), for the same length of speech."""
    frames = int(COMPARED_REFERENCE_SECONDS * FRAME_RATE)
    words = voice.transcript.split()
    shorter = Voice(codes=np.zeros((NUM_CODEBOOKS, frames), dtype=np.int64), rms=voice.rms,
                    transcript=" ".join(words[:max(1, round(len(words) * min(1.0, frames / voice.frames)))]))
    try:
        compared = engine.estimate_seconds(engine.prepare(
            text, voice=shorter, **dict(arguments, duration=plan.target_frames / FRAME_RATE)))
    except InvalidInput:
        return ""
    if compared is None:
        return ""
    return (f"  \nThis {voice.frames / FRAME_RATE:.1f} s reference: ≈ {fmt_seconds(estimate)}; "
            f"with a {COMPARED_REFERENCE_SECONDS:.0f} s one ≈ {fmt_seconds(compared)}")


def _first_line(exc: BaseException) -> str:
    return html.escape(str(exc).splitlines()[0])


def _save_outputs(studio: Studio, result: GenerationResult, stem: str, text: str,
                  owner: Optional[str], **meta) -> dict[str, pathlib.Path]:
    """The result's WAV, FLAC and codes file (``meta`` joins the codes file's seed, text and settings); with word
    timings, its word-level subtitles too: cues of a few words (SRT) and the karaoke WebVTT, as ``synth
    --subtitles`` and batch write them (``batch.subtitles.word_subtitles``)."""
    wav = save_audio(studio.output_path(stem, ".wav", owner), result.audio, result.sample_rate)
    flac = save_audio(studio.output_path(stem, ".flac", owner), result.audio, result.sample_rate, format="FLAC")
    npz = studio.output_path(stem, ".codes.npz", owner)
    save_codes(npz, result.codes, {"seed": result.seed, "text": text, "settings": result.settings, **meta})
    files = {"wav": wav, "flac": flac, "npz": npz}
    for kind in ("srt", "vtt") if result.words else ():
        files[kind] = write_atomically(studio.output_path(stem, f".words.{kind}", owner),
                                       word_subtitles(result.words, kind).encode("utf-8"), "word subtitles")
    return files


def downloads(files: dict[str, pathlib.Path]) -> list[str]:
    """The download list of a result's files (``_save_outputs``): audio, codes, then any word subtitles."""
    return [str(path) for path in files.values()]


def _history_entry(tab: str, text: str, result: GenerationResult, wav: pathlib.Path) -> dict:
    return {"when": time.strftime("%H:%M:%S"), "tab": tab, "text": text if len(text) <= 60 else text[:57] + "…",
            "seed": result.seed, "duration": round(result.duration, 2), "rtf": round(result.rtf, 3), "wav": str(wav)}


def queue_progress(event: QueueEvent) -> str:
    """The progress area of a visitor waiting for the engine: place in the queue and expected wait."""
    n = event.position
    place = f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"
    wait = (f"about {fmt_seconds(event.expected_wait)} to wait" if event.expected_wait is not None
            else "the wait is known after the first generation")
    return progress_html(0.0, f"Waiting: {place} in the queue", wait, state="queued")


def run_generation(studio: Studio, text: str, values: dict, voice: Optional[Voice], history: Optional[list],
                   tab: str, owner: Optional[str] = None, ssml: bool = False, voices=None,
                   prepare=None) -> Iterator[dict]:
    """A generation with live progress: yields updates for the progress bar, the code grid, the finished
    chunks, and at the end the audio, the files, the info, the seed used and the history.  The files are
    ``owner``'s (``Studio.output_path``).  ``ssml``: the text is SSML, its voice names resolved by ``voices``;
    ``prepare(engine, arguments)``: the plan instead of ``engine.prepare(text, ...)`` (a script's turns)."""
    loaded = studio.models.get()
    engine = loaded.engine
    voice, request = styled_request(values, studio.limits, voice)
    arguments = request.engine_arguments()  # the seed is fixed here, so both calls agree
    # every check, before any work
    plan = (prepare(engine, arguments) if prepare
            else engine.prepare(text, voice=voice, ssml=ssml, voices=voices, **arguments))
    timeline = engine.estimate(plan)  # the whole pipeline's predicted time line, for the time left
    estimate = timeline.total if timeline is not None else None
    run_id = secrets.token_hex(4)
    num_chunks = len(plan.chunks)
    first = (f"Estimated {fmt_seconds(estimate)} on this machine" if estimate is not None
             else "First run: measuring this machine's speed")
    empty_grid = np.full((NUM_CODEBOOKS, max(1, plan.target_frames if num_chunks == 1 else 1)), AUDIO_MASK_ID)
    yield {"progress": progress_html(0.0, "Starting…", f"{first} · {plan.target_frames / FRAME_RATE:.1f} s of speech"
                                     f"{f' in {num_chunks} chunks' if num_chunks > 1 else ''}"),
           "grid": pictures.code_grid(empty_grid), "chunks": "", "seed": plan.config.seed, "audio": None,
           "files": None, "info": "", "words": "", "checks": _checks_table([]), "takes": None}

    # the service runs it on its worker; closing ``stream`` (Stop, a cancelled event) cancels the job
    job = studio.service.submit(lambda: engine.run(plan), estimate=estimate, lock=loaded.lock, label=tab)
    stream = job.events()
    finished: list[ChunkEvent] = []   # each chunk's codes and audio: the result's sentences
    chunk_audio: list[tuple[int, str]] = []
    last_sent = 0.0
    result: Optional[GenerationResult] = None
    try:
        while True:
            event = next(stream, None)
            if event is None:
                break
            if isinstance(event, QueueEvent):
                yield {"progress": queue_progress(event)}
            elif isinstance(event, StepEvent):
                now = time.perf_counter()
                final_step = event.step == event.num_steps
                if now - last_sent < studio.min_update_interval and not final_step and event.step != 1:
                    continue
                last_sent = now
                done = (event.chunk + event.step / event.num_steps) / event.num_chunks
                left = (time_left(timeline, event.chunk, event.step, event.elapsed) if timeline is not None else
                        f"about {fmt_seconds(event.elapsed * (1 - done) / done)} left")
                take = f" · take {event.take}" if event.take > 1 else ""  # the sentence check generates it again
                detail = (f"chunk {event.chunk + 1} of {event.num_chunks}{take} · {fmt_seconds(event.elapsed)} elapsed"
                          f" · {left}")
                yield {"progress": progress_html(done, f"Step {event.step} of {event.num_steps}", detail),
                       "grid": pictures.code_grid([c.codes for c in finished] + [event.codes], event.decided)}
            elif isinstance(event, ChunkEvent):
                finished.append(event)
                if event.num_chunks > 1:
                    playable = event.playback if event.playback is not None else event.audio  # cross-faded, levelled
                    uri = "data:audio/wav;base64," + base64.b64encode(audio_bytes(playable)).decode("ascii")
                    chunk_audio.append((event.chunk, uri))
                    yield {"chunks": chunk_player_html(run_id, chunk_audio, event.num_chunks),
                           "grid": pictures.code_grid([c.codes for c in finished])}
            elif isinstance(event, GenerationResult):
                result = event
    finally:
        stream.close()  # stops the engine within a step when the run is cancelled
        if result is None:
            log.info("generation %s stopped before the end (%d of %d chunks done)", run_id, len(finished), num_chunks)
    if result is None:
        return
    stem = text_stem(text, fallback=f"omnivoice-{tab.lower()}")   # the download's name: the text's first words
    files = _save_outputs(studio, result, stem, text, owner)
    history = (list(history or []) + [_history_entry(tab, text, result, files["wav"])])[-studio.history_limit:]
    yield {"progress": progress_html(1.0, "Done", f"{result.duration:.2f} s of audio in "
                                                  f"{fmt_seconds(result.timings['total'])}", state="done"),
           "grid": pictures.code_grid(result.codes),
           # autoplay (the panel applies it to the player) unless the chunks were already played as they came
           "audio": str(files["wav"]), "autoplay": bool(values.get("autoplay", True)) and not chunk_audio,
           "files": downloads(files),
           "words": read_along_html(result.words, f"{tab.lower()}-audio"),   # with word timings: read-along
           "info": result_info(result, loaded.label) + style_note(request.description), "seed": result.seed,
           "history": history,
           "history_table": history_rows(history),
           "checks": _checks_table(result.checks),
           # each sentence can be made again (ui/sentences.py): the session keeps them; not the segments of
           # SSML or the turns of a script (each its own voice and place: made again as a whole)
           "takes": (SentenceResult(text, plan, finished, model_key(loaded)) if isinstance(plan, GenerationPlan)
                     else None)}


def _checks_table(checks) -> dict:
    """The sentence check's table under the player: shown with the check's rows, hidden without the check."""
    import gradio as gr

    return gr.update(value=check_rows(checks), visible=bool(checks))
