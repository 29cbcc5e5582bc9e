"""Sentence streaming with numbers read as words: the first sentence is generated while the others are read.

With sentence streaming, numbers are read as words one sentence at a time (``normalize.normalize_sentences``),
so a text's first chunk can be known, and its generation started, before its later sentences are read
(issue 42, item 4: 0.08 s a sentence on the 2-core VM, each one the first audio would wait for).
``OmniVoiceEngine.prepare(..., read_ahead=True)`` returns a ``StreamedPlan`` (``read_ahead_plan``):

* before it returns, as every plan: every check of the text as written (its characters, its numbers' digits
  and count, the length planned from it without its numbers: ``_check_before_normalising``), and the first
  chunk's own: its planned speech and its prompt (the whole text's are at least as long, so these refuse
  nothing the whole plan would pass);
* the sentences are read in order until the first chunk is decided (``streaming.first_chunk_end``); the
  others are read on a worker thread (``READERS``, through the same ``text_work.GATE``), which then builds the
  whole plan exactly as ``prepare`` does from the same text (``plan_of``) and makes all of its checks;
* ``OmniVoiceEngine.run`` generates the first chunk from the plan's head meanwhile, and takes the whole plan
  before the first chunk's audio is given out: a limit that only the read text passes (a text whose numbers
  read long) stops the run with prepare's own error, within a step of the reading, no audio given out;
  the first chunk is kept when the whole plan's first chunk is the same text, length and instruct (always,
  unless the later text changed where the first chunk ends), else it is generated again from the whole plan.

So a run of a ``StreamedPlan`` gives the output of running the plan ``prepare`` returns without
``read_ahead``, step for step (tests/test_read_ahead.py).  Closing the run stops the generation within a step;
a reading under way finishes on its worker (it is bounded by the text's checks) and is dropped.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
from typing import Optional

from ..settings.generation import GenerationConfig
from ..storage.voice_file import Voice
from ..text.normalize import read_as_words
from ..text.sentences import split_sentences
from .events import GenerationPlan
from .streaming import first_chunk_end, first_chunk_frames, splitting_language, worth_streaming

#: the workers that read the later sentences (each reading passes text_work.GATE, one at a time)
READERS = concurrent.futures.ThreadPoolExecutor(max_workers=2, thread_name_prefix="omnivoice-read-ahead")


class StreamedPlan:
    """A plan whose first chunk is known and whose later sentences are being read (see the module).

    ``head``: the plan to generate the first chunk from (its ``chunks[0]``, ``instruct`` and ``config``; the rest of
    it is provisional, the later sentences as written), ``head_frames``: that chunk's length.  What needs the whole
    text (``text``, ``chunks``, ``target_frames``, ``instruct``, ``settings``) waits for it: ``complete()``."""

    def __init__(self, head: GenerationPlan, head_frames: int, whole: "concurrent.futures.Future[GenerationPlan]"):
        self.head, self.head_frames, self._whole = head, head_frames, whole

    def complete(self) -> GenerationPlan:
        """The whole plan, once the later sentences are read and it passed its checks (else their error)."""
        return self._whole.result()

    @property
    def ready(self) -> bool:
        return self._whole.done()

    def now(self) -> GenerationPlan:
        """The whole plan when it is ready, else the head (for progress and time estimates)."""
        return self.complete() if self.ready else self.head

    def head_agrees(self, whole: GenerationPlan, whole_first_frames: int) -> bool:
        """Whether the whole plan's first chunk is the one generated from the head (text, length, instruct)."""
        return ((whole.chunks[0], whole_first_frames, whole.instruct)
                == (self.head.chunks[0], self.head_frames, self.head.instruct))

    # known before the later sentences are read
    @property
    def config(self) -> GenerationConfig:
        return self.head.config

    @property
    def voice(self) -> Optional[Voice]:
        return self.head.voice

    @property
    def language(self) -> Optional[str]:
        return self.head.language

    @property
    def speed(self) -> float:
        return self.head.speed

    @property
    def normalization(self):
        return self.head.normalization

    @property
    def num_steps(self) -> int:
        return self.head.config.num_step

    # the whole plan's: they wait for the later sentences
    @property
    def text(self) -> str:
        return self.complete().text

    @property
    def chunks(self) -> list[str]:
        return self.complete().chunks

    @property
    def target_frames(self) -> int:
        return self.complete().target_frames

    @property
    def instruct(self) -> Optional[str]:
        return self.complete().instruct

    @property
    def settings(self) -> dict:
        return self.complete().settings


def read_ahead_plan(engine, text: str, code: Optional[str], instruct: Optional[str], voice: Optional[Voice],
                    config: GenerationConfig, normalization) -> Optional[StreamedPlan]:
    """The ``StreamedPlan`` of ``text`` (as written, checked before reading; numbers read in
    ``normalization.language``), or None when nothing is gained: the first chunk takes every sentence, what
    follows it is too short to be a chunk of its own, or ``duration`` sets the whole text's pace."""
    if config.duration is not None:   # the speed of every chunk follows from the whole text's length
        return None
    language = splitting_language(code, normalization)   # as plan_of cuts the whole text's first chunk
    pieces = split_sentences(text, language)
    read: list[str] = []
    failed = 0
    for piece in pieces[:-1]:   # the last sentence: nothing would be left to read while the first is made
        words, missed = read_as_words(piece, normalization.language)
        read.append(words)
        failed += missed
        prefix = "".join(read).strip()
        end, decided = first_chunk_end(prefix, language=language, quick_start=config.quick_start)
        if decided:
            break
    else:
        return None
    first = prefix[:end].strip()
    unread = "".join(pieces[len(read):])
    if not worth_streaming(f"{prefix[end:]} {unread}".strip()):   # a guess (the later sentences as written)
        return None
    voice_text, voice_frames = (voice.transcript, voice.frames) if voice else (None, None)
    # the first of several chunks is planned alone, against the voice (or the reference's fallback)
    head_frames = first_chunk_frames(first, voice_text, voice_frames, config.speed, quick=config.quick_start > 0)
    head = engine.plan_of("".join(read) + unread, code, instruct, voice, config, normalization.with_failures(failed))
    head = dataclasses.replace(head, chunks=[first] + head.chunks[1:])
    # the first chunk's own checks: the whole text's length and prompt are at least these
    engine.check_planned_frames(head_frames, config)
    engine.limits.check("The prompt (instruct, reference transcript and text)",
                        engine.prompt_tokens(dataclasses.replace(head, chunks=[first])), "max_prompt_tokens",
                        " tokens")

    def read_the_rest() -> GenerationPlan:
        readings = [read_as_words(piece, normalization.language) for piece in pieces[len(read):]]
        rest = "".join(words for words, _ in readings)
        missed = failed + sum(count for _, count in readings)
        return engine.checked_plan(engine.plan_of("".join(read) + rest, code, instruct, voice, config,
                                                  normalization.with_failures(missed)))

    return StreamedPlan(head, head_frames, READERS.submit(read_the_rest))
