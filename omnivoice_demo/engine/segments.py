"""A request in segments (SSML): each segment its own plan (voice, language, speed), pauses between them.

``plan_segments`` checks every segment with the engine's ``prepare`` (all before any work) and the whole
against the limits; ``run_segments`` generates the segments in order and joins them:

* two segments of speech next to each other are joined as the reference joins the chunks of a long
  text (``audio.processing.cross_fade_chunks``: a 0.1 s fade-out, 0.1 s of silence, a 0.1 s fade-in);
* a pause (``<break>``) is inserted as exactly its samples of silence, between the segments' own
  post-processed audio (which ends and starts with the reference's 0.1 s of padding);
* each segment is post-processed on its own, as a text of its own (its voice's loudness; a long pause
  is not shortened by the silence removal).

It yields the step events (chunks numbered across the segments), a ``SegmentEvent`` per item whose
``audio`` is the next stretch of the final audio (all of them end to end are ``result.audio``, sample for
sample: what a stream sends), and a ``GenerationResult`` whose ``segments`` give each spoken segment's
start and end, so subtitles follow them (and, with ``word_timestamps``, whose ``words`` are each segment's
words moved to where it starts, so pauses and joins are counted).
"""

from __future__ import annotations

import dataclasses
import secrets
import time
from typing import Callable, Iterator, Optional

import numpy as np

from ..audio.processing import cross_fade_chunks
from ..constants import FRAME_RATE, SAMPLE_RATE
from ..errors import InvalidInput, excerpt, reworded
from ..settings.generation import GenerationConfig
from .events import GenerationPlan, GenerationResult, run_part, summed_timings
from ..text.normalize_choice import normalization_settings
from ..text.ssml import Document, Segment, parse
from .streaming import JOIN_SECONDS
from .word_times import shifted

#: a name -> (saved voice or None, design or None): how a front end resolves ``<voice name>``
VoiceResolver = Callable[[str], tuple]


@dataclasses.dataclass
class SegmentEvent:
    """A segment (or a pause) is final: ``audio`` is the next stretch of the final audio."""

    segment: int
    num_segments: int
    audio: np.ndarray
    elapsed: float
    words: Optional[list] = None   # word_timestamps on: the segment's words, on the final audio's time line
    kind: str = "segment"


@dataclasses.dataclass
class SegmentsPlan:
    """A validated request in segments: each item a ``GenerationPlan`` or a pause (samples of silence)."""

    items: list
    config: GenerationConfig          # the request's, its seed resolved (every segment uses it)
    notes: list[str]
    voice: None = None                # each segment has its own (the plans')

    @property
    def plans(self) -> list[GenerationPlan]:
        return [item for item in self.items if isinstance(item, GenerationPlan)]

    @property
    def text(self) -> str:
        return " ".join(plan.text for plan in self.plans)

    @property
    def chunks(self) -> list[str]:
        return [chunk for plan in self.plans for chunk in plan.chunks]

    @property
    def target_frames(self) -> int:
        pauses = sum(item for item in self.items if isinstance(item, int))
        return sum(plan.target_frames for plan in self.plans) + round(pauses * FRAME_RATE / SAMPLE_RATE)

    @property
    def language(self) -> Optional[str]:
        return self.plans[0].language

    @property
    def instruct(self) -> Optional[str]:
        return self.plans[0].instruct

    @property
    def speed(self) -> float:
        return self.config.speed

    @property
    def num_steps(self) -> int:
        return self.config.num_step

    @property
    def settings(self) -> dict:
        return dict(self.plans[0].settings, segments=len(self.plans), notes=list(self.notes),
                    **normalization_settings(self))


def plan_segments(engine, markup: str, *, language: Optional[str] = None, instruct: Optional[str] = None,
                  voice=None, config: Optional[GenerationConfig] = None, pronunciations=None,
                  voices: Optional[VoiceResolver] = None, **overrides) -> SegmentsPlan:
    """Every segment of an SSML document planned by ``engine.prepare`` (a segment without ``<voice>`` has
    ``voice``/``instruct``, the request's); ``voices`` resolves ``<voice name>`` (the studio's names)."""
    config = (config or GenerationConfig()).replace(**overrides).validate()
    if config.duration is not None:
        raise InvalidInput("duration sets the length of one text; with SSML give pauses with <break> and the pace "
                           "with <prosody rate>.", param="duration")
    if config.seed is None:
        config = config.replace(seed=secrets.randbelow(2**31))
    document: Document = parse(markup, engine.limits, language)   # say-as without xml:lang: the request's
    speed = GenerationConfig.setting("speed")
    items, resolved, clamped = [], {}, []
    for segment in document.segments:
        if segment.silence:
            items.append(segment.silence)
            continue
        segment_voice, segment_instruct = voice, instruct
        if segment.voice is not None:
            if voices is None:
                raise InvalidInput(f"SSML (line {segment.line}): <voice name> needs voice names, which this entry "
                                   "point does not resolve; give the voice to the request instead.", param="input")
            if segment.voice not in resolved:
                resolved[segment.voice] = _at(segment, f"<voice name={excerpt(segment.voice)}>", voices,
                                              segment.voice)
            segment_voice, segment_instruct = resolved[segment.voice]
        wanted = config.speed * segment.rate
        used = min(max(wanted, speed.low), speed.high)
        if used != wanted:
            clamped.append(str(segment.line))
        items.append(_at(segment, "", engine.prepare, segment.text, language=segment.language or language,
                         instruct=segment_instruct, voice=segment_voice, config=config.replace(speed=used),
                         pronunciations=pronunciations))
    notes = list(document.notes)
    if clamped:
        notes.append(f"the request's speed times <prosody rate> is outside the model's {speed.low:g}-{speed.high:g} "
                     f"at line {', '.join(dict.fromkeys(clamped[:10]))}: the nearest was used")
    plan = SegmentsPlan(items=items, config=config, notes=notes)
    if not plan.plans:
        raise InvalidInput("The SSML has no text to speak; write it inside <speak>...</speak>.", param="input")
    engine.limits.check("The planned speech with its pauses", round(plan.target_frames / FRAME_RATE, 1),
                        "max_audio_seconds", " s")
    engine.limits.check("The number of chunks of all the SSML's segments", len(plan.chunks), "max_chunks")
    return plan


def _at(segment: Segment, what: str, fn, *args, **kwargs):
    """``fn(...)``, its ``InvalidInput`` said with the segment's line (and ``what``)."""
    try:
        return fn(*args, **kwargs)
    except InvalidInput as exc:
        where = f"SSML (line {segment.line}{', ' + what if what else ''}): "
        raise reworded(exc, where + str(exc)) from None   # of its own class, whatever its constructor takes


class Joiner:
    """The final audio built item by item: speech joined to speech by the reference's ``cross_fade_chunks``,
    pauses as exact silence.  ``take()`` gives the samples no later join can change (the fade-out at a
    speech's end waits until the next item is known)."""

    def __init__(self, sample_rate: int = SAMPLE_RATE):
        self.sample_rate = sample_rate
        self.audio = np.zeros(0, dtype=np.float32)
        self.sent = 0
        self.after_speech = False

    def add_speech(self, audio: np.ndarray) -> tuple[int, int]:
        """Join ``audio``; its (start, end) in samples of the final audio."""
        audio = np.asarray(audio, dtype=np.float32).reshape(-1)
        if self.after_speech:
            self.audio = cross_fade_chunks([self.audio[np.newaxis], audio[np.newaxis]], self.sample_rate)[0]
        else:
            self.audio = np.concatenate([self.audio, audio])
        self.after_speech = True
        return self.audio.size - audio.size, self.audio.size

    def add_silence(self, samples: int) -> tuple[int, int]:
        start = self.audio.size
        self.audio = np.concatenate([self.audio, np.zeros(int(samples), dtype=np.float32)])
        self.after_speech = False
        return start, self.audio.size

    def take(self, final: bool = False) -> np.ndarray:
        held = int(JOIN_SECONDS * self.sample_rate) // 3 if self.after_speech and not final else 0
        end = max(self.sent, self.audio.size - held)
        piece = self.audio[self.sent:end].copy()
        self.sent = end
        return piece


def run_segments(engine, plan: SegmentsPlan) -> Iterator[object]:
    """The events of a ``SegmentsPlan`` (see the module's docstring)."""
    started = time.perf_counter()
    joiner = Joiner()
    total, done = len(plan.chunks), 0
    results, spans, words = [], [], []
    for index, item in enumerate(plan.items):
        if isinstance(item, GenerationPlan):
            result = yield from run_part(engine, item, done, total, started, kinds=("step",))
            done += len(item.chunks)
            start, end = joiner.add_speech(result.audio)
            segment_words = shifted(result.words, start / SAMPLE_RATE)
            words.extend(segment_words)
            results.append(result)
            spans.append({"text": item.text, "voice": item.settings["voice"], "instruct": item.instruct,
                          "language": item.language, "speed": item.speed, "start": start / SAMPLE_RATE,
                          "end": end / SAMPLE_RATE, "start_sample": start, "end_sample": end})
        else:
            joiner.add_silence(item)
            segment_words = []
        last = index == len(plan.items) - 1
        yield SegmentEvent(segment=index, num_segments=len(plan.items), audio=joiner.take(final=last),
                           elapsed=time.perf_counter() - started,
                           words=segment_words if plan.config.word_timestamps else None)
    timings = summed_timings(results, started)
    yield GenerationResult(audio=joiner.audio, sample_rate=SAMPLE_RATE,
                           codes=[codes for r in results for codes in r.codes], seed=plan.config.seed,
                           chunks=plan.chunks, timings=timings, settings=plan.settings, config=plan.config,
                           checks=[check for r in results for check in r.checks], segments=spans, words=words,
                           chunk_words=[w for r in results for w in r.chunk_words])

