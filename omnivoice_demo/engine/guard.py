"""The sentence check (``guard``): each chunk transcribed, scored, and generated again when it fails.

A sampler can drop words, garble a short text or mumble on a bad seed.  With
``GenerationConfig.guard`` on, every chunk the engine generates (a sentence of
sentence streaming, or a chunk of a long text) is decoded, transcribed by the
engine's speech recogniser and scored against its own text:

* the character error rate of the transcript, with the one normalisation that
  ``omnivoice eval`` uses (``asr.scoring``);
* plus ``PROBLEM_PENALTY`` for each thing a recogniser cannot see
  (``audio_problems``): speech that fills much less than the planned time,
  a long silence inside the speech, clipping; with word timestamps on, "weak words": words that the
  recogniser, reading the known text, gives a very low probability (``WEAK_WORD_PROBABILITY``: a dropped
  or garbled word), named in the take.  OmniVoice generates exactly the
  planned number of frames, so speech can only come out shorter than planned,
  never longer; a mumble that fills the time is the transcript's to catch.

A take whose score is over ``guard_cer`` is generated again with the next seed
(take 1 draws from the request's own random stream, exactly as without the
check; take ``n`` from ``seed + n - 1``), up to ``guard_tries`` takes; the take
with the lowest score is kept (the first of equal ones).  The kept take is
what the chunk's event carries and what later chunks use as their reference,
so streaming sends a chunk once it passed or ran out of takes.  With the check
off nothing is transcribed and the output is the reference's, token for token.

Every take's steps are ordinary step events (with their ``take`` number), so a
cancel stops the retries within a step as it stops any generation.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Callable, Iterator, Optional

import numpy as np

from ..asr.scoring import error_rates, require_jiwer
from ..audio.processing import frame_power
from ..constants import FRAME_RATE, SAMPLE_RATE
from ..errors import ModelNotAvailable

#: added to a take's score per problem the audio shows (so any problem fails a threshold below 1)
PROBLEM_PENALTY = 1.0
#: the audio is judged in frames of this length
FRAME_SECONDS = 0.02
#: a frame is speech when its RMS is within this many dB of the loudest frame's
SPEECH_DB = 40.0
#: speech (first to last speech frame) filling less than this share of the planned time is "short"
SHORT_SHARE = 0.4
#: a pause inside the speech longer than this is a "silence"
LONGEST_PAUSE_SECONDS = 1.0
#: with word timestamps on, a word the recogniser gives less than this probability when its text is forced is
#: "weak" (a dropped or garbled word); a take with any weak word has the problem "weak words"
WEAK_WORD_PROBABILITY = 0.02
#: samples at or above this magnitude are clipped; more than CLIPPED_SHARE of them is "clipped"
CLIP_LEVEL = 0.999
CLIPPED_SHARE = 0.001


@dataclasses.dataclass(frozen=True)
class Take:
    """One generation of a chunk and its score (``cer`` + the penalty of its ``problems``)."""

    number: int                  # 1-based
    seed: Optional[int]          # None: the request's own random stream (take 1)
    cer: float
    transcript: str
    problems: tuple[str, ...]    # "short", "silence", "clipped", "weak words"
    weak_words: tuple[str, ...] = ()   # word timestamps on: the words aligned with a very low probability
    words: tuple = ()                  # word timestamps on: the take's aligned words (asr.alignment.WordTiming)

    @property
    def score(self) -> float:
        return self.cer + PROBLEM_PENALTY * len(self.problems)

    def to_dict(self) -> dict:
        out = dict(number=self.number, seed=self.seed, cer=round(self.cer, 4), score=round(self.score, 4),
                   transcript=self.transcript, problems=list(self.problems))
        if self.weak_words:
            out["weak_words"] = list(self.weak_words)
        return out


@dataclasses.dataclass(frozen=True)
class ChunkCheck:
    """The check of one chunk: its takes, which one was kept, and whether it passed the threshold."""

    chunk: int                   # 0-based chunk index
    text: str
    takes: tuple[Take, ...]
    kept: int                    # 1-based number of the kept take
    passed: bool

    @property
    def best(self) -> Take:
        return self.takes[self.kept - 1]

    @property
    def cer(self) -> float:
        return self.best.cer

    @property
    def retried(self) -> bool:
        return len(self.takes) > 1

    def line(self) -> str:
        """One line for people: 'chunk 2: CER 0.040, take 2 of 3 kept'."""
        problems = "".join(f" + {p}" for p in self.best.problems)
        if self.best.weak_words:
            problems += f" ({', '.join(self.best.weak_words[:8])})"
        return (f"chunk {self.chunk + 1}: CER {self.cer:.3f}{problems}, take {self.kept} of {len(self.takes)} kept"
                + ("" if self.passed else " (none passed the threshold)"))

    def to_dict(self) -> dict:
        return dict(chunk=self.chunk, text=self.text, cer=round(self.cer, 4), score=round(self.best.score, 4),
                    kept=self.kept, passed=self.passed, takes=[t.to_dict() for t in self.takes])


def audio_problems(audio: np.ndarray, planned_frames: int, sample_rate: int = SAMPLE_RATE) -> tuple[str, ...]:
    """What a recogniser cannot see in a chunk's decoded audio: "short", "silence", "clipped" (see the module)."""
    wav = np.asarray(audio, dtype=np.float64).reshape(-1)
    problems = []
    hop = max(1, int(FRAME_SECONDS * sample_rate))
    rms = np.sqrt(frame_power(wav, hop))
    loudest = float(rms.max()) if rms.size else 0.0
    speech = rms > loudest * 10 ** (-SPEECH_DB / 20) if loudest > 1e-5 else np.zeros(rms.shape, dtype=bool)
    planned_seconds = planned_frames / FRAME_RATE
    where = np.flatnonzero(speech)
    span = (where[-1] - where[0] + 1) * FRAME_SECONDS if where.size else 0.0
    if span < SHORT_SHARE * planned_seconds:
        problems.append("short")
    if where.size:
        inside = speech[where[0]: where[-1] + 1]
        if _longest_run(~inside) * FRAME_SECONDS > LONGEST_PAUSE_SECONDS:
            problems.append("silence")
    if wav.size and np.mean(np.abs(wav) >= CLIP_LEVEL) > CLIPPED_SHARE:
        problems.append("clipped")
    return tuple(problems)


def _longest_run(flags: np.ndarray) -> int:
    """Length of the longest run of True in a 1-D bool array."""
    if not flags.any():
        return 0
    edges = np.diff(np.concatenate([[0], flags.astype(np.int8), [0]]))
    return int((np.flatnonzero(edges == -1) - np.flatnonzero(edges == 1)).max())


def require_recognizer(recognizer) -> None:
    """Refuse the check before any work when it cannot run: no ``jiwer``, or no recogniser to be had.

    A recogniser made on first use (``asr.LazyRecognizer``) is loaded now (downloaded when online),
    so an offline machine with nothing cached is told what to download instead of running unchecked.
    """
    require_jiwer()
    load = getattr(recognizer, "get", None)
    if load is None:
        return
    try:
        load()
    except ModelNotAvailable as exc:
        raise ModelNotAvailable(f"The sentence check (guard) needs a speech recogniser and none can be loaded. {exc} "
                                "Or turn the check off (guard off, the default).") from None


def require_aligner(recognizer) -> None:
    """Refuse word timing before any work when it cannot run: no recogniser to be had, or one whose folder
    lists no alignment heads (``SpeechRecognizer.align``'s error says what to do)."""
    load = getattr(recognizer, "get", None)
    try:
        loaded = load() if load is not None else recognizer
    except ModelNotAvailable as exc:
        raise ModelNotAvailable(f"Word timings need a speech recogniser and none can be loaded. {exc} "
                                "Or turn word_timestamps off.") from None
    check = getattr(loaded, "_require_alignment_heads", None)
    if check is not None:
        check()


class Guard:
    """Runs a chunk's takes until one passes; keeps ``checks``, one ``ChunkCheck`` per chunk in order."""

    def __init__(self, recognizer, threshold: float, tries: int, seed: int, timer=None, words: bool = False,
                 language: Optional[str] = None):
        self.recognizer, self.threshold, self.tries, self.seed = recognizer, float(threshold), int(tries), int(seed)
        self.timer = timer  # an ``events.Timer``: the transcriptions' seconds go to its "check" stage
        self.words, self.language = words, language   # word timestamps on: each take aligned and its weak words
        self.checks: list[ChunkCheck] = []

    def score(self, number: int, seed: Optional[int], audio: np.ndarray, text: str, planned_frames: int) -> Take:
        tick = time.perf_counter()
        wav = np.asarray(audio, dtype=np.float32)
        transcript = self.recognizer.transcribe(wav, SAMPLE_RATE).text
        problems, words, weak = audio_problems(audio, planned_frames), (), ()
        if self.words:   # the take's words, kept with it: the engine uses the kept take's
            from .word_times import chunk_words

            words = tuple(chunk_words(self.recognizer, wav, text, self.language))
            weak = tuple(w.word for w in words if w.probability < WEAK_WORD_PROBABILITY)
            if weak:
                problems += ("weak words",)
        if self.timer is not None:
            self.timer.add("check", tick)
        return Take(number=number, seed=seed, cer=error_rates(text, transcript).cer, transcript=transcript,
                    problems=problems, weak_words=weak, words=words)

    def chunk(self, index: int, text: str, planned_frames: int, rng: np.random.Generator,
              take: Callable[[np.random.Generator, int], Iterator]) -> Iterator:
        """Yields the takes' events; returns the kept take's ``(tokens, audio)``.

        ``take(rng, number)`` generates the chunk once (yielding its step events) and returns
        ``(tokens, audio)``; take 1 gets ``rng``, the request's own stream, take n a fresh ``seed + n - 1``.
        """
        takes, kept = [], None
        for number in range(1, self.tries + 1):
            seed = None if number == 1 else (self.seed + number - 1) % 2**63
            output = yield from take(rng if seed is None else np.random.default_rng(seed), number)
            takes.append(self.score(number, seed, output[1], text, planned_frames))
            if kept is None or takes[-1].score < takes[kept[0] - 1].score:
                kept = (number, output)
            if takes[-1].score <= self.threshold:
                break
        self.checks.append(ChunkCheck(chunk=index, text=text, takes=tuple(takes), kept=kept[0],
                                      passed=takes[kept[0] - 1].score <= self.threshold))
        return kept[1]
