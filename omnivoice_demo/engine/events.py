"""What a generation reports: step and chunk events, the final result, and the validated plan.

``OmniVoiceEngine.stream`` yields ``StepEvent``s and ``ChunkEvent``s and ends with a
``GenerationResult``; ``OmniVoiceEngine.prepare`` returns a ``GenerationPlan``.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Optional

import numpy as np

from ..asr.alignment import WordTiming
from ..settings.generation import GenerationConfig
from ..text.normalize_choice import NormalizeChoice, normalization_settings
from .guard import ChunkCheck
from ..storage.voice_file import Voice


@dataclasses.dataclass
class StepEvent:
    """One unmasking step finished."""

    chunk: int            # 0-based chunk index
    num_chunks: int
    step: int             # 1-based step number
    num_steps: int
    codes: np.ndarray     # int64 [8, T] after this step (1024 = still masked)
    decided: np.ndarray   # bool [8, T]: the cells this step decided
    elapsed: float        # seconds since generation started
    take: int = 1         # the chunk's take (above 1 only when the sentence check generates it again)
    kind: str = "step"


@dataclasses.dataclass
class ChunkEvent:
    """One chunk's codes are final and decoded (playback can start)."""

    chunk: int
    num_chunks: int
    codes: np.ndarray     # int64 [8, T]
    audio: np.ndarray     # float32 [960 * T], the chunk's raw decoded audio (before post-processing)
    elapsed: float
    playback: Optional[np.ndarray] = None  # float32: ready to play after the previous chunks' (streaming.playback_piece)
    check: Optional[ChunkCheck] = None     # the sentence check of this chunk (guard on), its takes and the kept one
    #: word_timestamps on: the chunk's words, times from the start of ``audio`` (its raw decoded audio); where
    #: its piece lands, ``word_times.stream_offsets`` (playback pieces) or ``place_words`` (a post-processed piece)
    words: Optional[list[WordTiming]] = None
    kind: str = "chunk"


@dataclasses.dataclass
class GenerationResult:
    """The final audio and how it was made."""

    audio: np.ndarray            # float32 [N] at 24 kHz, post-processed
    sample_rate: int
    codes: list[np.ndarray]      # int64 [8, T] per chunk
    seed: int
    chunks: list[str]
    timings: dict[str, float]    # seconds per stage, and "total"
    settings: dict               # the config (seed resolved) with language, instruct and voice, for display
    config: Optional[GenerationConfig] = None
    checks: list[ChunkCheck] = dataclasses.field(default_factory=list)  # per chunk, with the sentence check on
    #: SSML: each spoken segment's text, voice, language and place (start/end in seconds and in samples)
    segments: list[dict] = dataclasses.field(default_factory=list)
    turns: list[dict] = dataclasses.field(default_factory=list)  # several voices (turns.py): who speaks when
    #: word_timestamps on: every word of the text on the time line of ``audio`` (``asr.alignment.WordTiming``)
    words: list[WordTiming] = dataclasses.field(default_factory=list)
    #: word_timestamps on: each chunk's words, times from that chunk's own decoded audio (to place them again)
    chunk_words: list[list[WordTiming]] = dataclasses.field(default_factory=list)
    #: what decided this audio (``engine.render_key``: the plan as read, the model's content, the compute that
    #: ran, ...), delivered as the array; set by ``OmniVoiceEngine.run``
    render_key: Optional[str] = None
    kind: str = "result"

    @property
    def frames(self) -> int:
        return int(sum(c.shape[-1] for c in self.codes))

    @property
    def duration(self) -> float:
        return len(self.audio) / self.sample_rate

    @property
    def rtf(self) -> float:
        """Real-time factor: seconds of compute per second of audio (below 1 is faster than real time)."""
        return self.timings["total"] / self.duration if self.duration else float("inf")


@dataclasses.dataclass
class GenerationPlan:
    """A validated request: everything ``_run`` needs, decided before any compute."""

    text: str
    chunks: list[str]
    target_frames: int           # of the whole text (before chunking)
    speed: float
    language: Optional[str]
    instruct: Optional[str]
    voice: Optional[Voice]
    config: GenerationConfig     # validated, seed resolved
    #: whether and in which language numbers were read as words (normalize_choice.py); None: not decided here
    normalization: Optional[NormalizeChoice] = None

    @property
    def num_steps(self) -> int:
        return self.config.num_step

    @property
    def settings(self) -> dict:
        """The settings as plain values, with language, instruct and voice (for display and sidecars), and
        ``normalized``: the language the numbers were read in, or ``off``."""
        return dict(self.config.to_dict(), language=self.language, instruct=self.instruct,
                    voice=self.voice.name if self.voice else None, **normalization_settings(self))


class Timer:
    """Accumulates seconds per stage."""

    def __init__(self):
        self.seconds: dict[str, float] = {}

    def add(self, stage: str, started: float) -> float:
        now = time.perf_counter()
        self.seconds[stage] = self.seconds.get(stage, 0.0) + now - started
        return now


def run_part(engine, plan: GenerationPlan, first: int, total: int, started: float, kinds=("step", "chunk"),
             speaker: Optional[str] = None):
    """The events of ``plan``, one part of a whole run in several plans (SSML segments, a script's turns): its
    events of ``kinds`` with their chunks numbered in the whole (``first`` of ``total``) and the time since
    ``started``, a chunk's words (word timings on) with ``speaker`` (a script's turn) as the result's have it;
    returns its ``GenerationResult``.  Closing the whole run closes this part's at once."""
    import contextlib

    result = None
    with contextlib.closing(engine.run(plan)) as events:
        for event in events:
            if event.kind == "result":
                result = event
            elif event.kind in kinds:
                event = dataclasses.replace(event, chunk=first + event.chunk, num_chunks=total,
                                            elapsed=time.perf_counter() - started)
                if speaker is not None and getattr(event, "words", None):
                    event = dataclasses.replace(event, words=[word.shifted(0.0, speaker) for word in event.words])
                yield event
    return result


def summed_timings(results: list[GenerationResult], started: float) -> dict[str, float]:
    """The stages' seconds of the parts of a whole run, summed, with the whole's ``total`` since ``started``."""
    timings: dict[str, float] = {}
    for result in results:
        for stage, seconds in result.timings.items():
            if stage != "total":
                timings[stage] = timings.get(stage, 0.0) + seconds
    timings["total"] = time.perf_counter() - started
    return timings
