"""A finished generation whose sentences can each be made again ("Again") and put back ("Restore").

``SentenceResult`` keeps each sentence's (chunk's) current take, its codes and decoded audio, and the take
before it, so its memory is at most twice the result's chunks.  The whole output is always the engine's
own join of the current takes (``loop.join_chunks``, what every generation ends with), so the downloads
made from ``result()`` are the current version.  The join keeps the first generation's finish (the voice's
loudness, post-processing, delivery loudness): the other sentences were made for it.

A result belongs to one visitor's session (the page keeps it in the session's state), never to a module:
nothing one visitor does changes what another hears.  Again runs through the studio's queue like any
generation (``EngineService``: the same bounds, the same cancel), planned by ``prepare_sentence`` with every
check of a request.
"""

from __future__ import annotations

import dataclasses
from typing import Optional

import numpy as np

from ..settings.generation import MAX_SEED, GenerationConfig
from ..engine.events import ChunkEvent, GenerationPlan, GenerationResult
from ..engine.guard import ChunkCheck
from ..engine.loop import join_chunks
from ..engine.word_times import place_words
from ..storage.voice_file import Voice
from ..errors import InvalidInput
from ..constants import SAMPLE_RATE
from .service import EngineService, Job


@dataclasses.dataclass(frozen=True)
class SentenceTake:
    """One take of a sentence: its codes, its decoded audio (before the join) and how it was drawn."""

    codes: np.ndarray                 # int64 [8, T]
    audio: np.ndarray                 # float32 [960 * T]
    seed: Optional[int]               # None: drawn in the first generation (its seed's stream)
    check: Optional[ChunkCheck] = None
    words: Optional[list] = None      # word timings on: its words, times from the start of ``audio``


class SentenceResult:
    """The sentences of one finished generation, each replaceable by a new take (see the module doc)."""

    def __init__(self, text: str, plan: GenerationPlan, chunks: list[ChunkEvent], model: tuple[str, str]):
        if [event.chunk for event in chunks] != list(range(len(plan.chunks))):
            raise ValueError("a result needs every chunk's event, in order")
        self.text, self.model = text, model   # model: ``model_key`` of the model that made it
        self.sentences = list(plan.chunks)
        self.seed, self.config, self.settings = plan.config.seed, plan.config, plan.settings
        self.ref_rms = plan.voice.rms if plan.voice is not None else None
        self.current = [SentenceTake(e.codes, e.audio, None, e.check, e.words) for e in chunks]
        self.previous: list[Optional[SentenceTake]] = [None] * len(chunks)
        self.last_seed = [self.seed] * len(chunks)   # the last seed each sentence drew; Again takes the next
        self.changed: Optional[int] = None            # the sentence changed last (None: as first generated)

    def __len__(self) -> int:
        return len(self.sentences)

    def _sentence(self, index) -> int:
        if isinstance(index, bool) or not isinstance(index, (int, np.integer)) or not 0 <= index < len(self):
            raise InvalidInput(f"There is no sentence {index!r} in this result ({len(self)} sentences).",
                               param="sentence")
        return int(index)

    # --- Again ------------------------------------------------------------------------------

    def plan_again(self, loaded, index: int, voice: Optional[Voice], language: Optional[str],
                   instruct: Optional[str], config: GenerationConfig) -> GenerationPlan:
        """The plan of sentence ``index``'s next take on ``loaded`` (a ``models.LoadedModel``, the one that made
        the result): the next seed (taken now, so two takes asked for at once draw two), the voice and settings
        given now."""
        index = self._sentence(index)
        if self.model != model_key(loaded):
            raise InvalidInput("The model changed since this result was made, so its sentences cannot be mixed "
                               "with a new take: generate the whole text again.")
        seed = (self.last_seed[index] + 1) % (MAX_SEED + 1)
        plan = loaded.engine.prepare_sentence(self.text, self.sentences, index, voice=voice, language=language,
                                              instruct=instruct, config=config.replace(seed=seed))
        self.last_seed[index] = seed
        return plan

    def submit_again(self, service: EngineService, loaded, plan: GenerationPlan, index: int, label: str = "") -> Job:
        """Queue the take of ``plan`` (``plan_again``) on ``loaded``; the job's events are the sentence's steps and
        then its ``ChunkEvent`` (give it to ``keep``)."""
        index = self._sentence(index)
        engine, codes = loaded.engine, [take.codes for take in self.current]
        return service.submit(lambda: engine.run_sentence(plan, index, codes),
                              estimate=engine.estimate_seconds(plan, index), lock=loaded.lock, label=label)

    def keep(self, plan: GenerationPlan, event: ChunkEvent) -> None:
        """The new take of sentence ``event.chunk`` (made from ``plan``) replaces it; the one before can be
        restored."""
        index = self._sentence(event.chunk)
        kept = event.check.best.seed if event.check is not None else None   # None: the plan's own seed
        take = SentenceTake(event.codes, event.audio, plan.config.seed if kept is None else kept, event.check,
                            event.words)
        self.previous[index], self.current[index] = self.current[index], take
        drawn = [t.seed for t in event.check.takes if t.seed is not None] if event.check else []
        self.last_seed[index] = max([self.last_seed[index]] + drawn)   # the check's takes drew the seeds after it
        self.changed = index

    def restore(self, index: int) -> None:
        """Put sentence ``index``'s take before the current one back (the current one becomes the one before)."""
        index = self._sentence(index)
        if self.previous[index] is None:
            raise InvalidInput(f"Sentence {index + 1} has no earlier take to restore.", param="sentence")
        self.previous[index], self.current[index] = self.current[index], self.previous[index]
        self.changed = index

    # --- the whole -------------------------------------------------------------------------

    def audio(self) -> np.ndarray:
        """The whole output: the engine's join of the current takes."""
        return join_chunks([take.audio for take in self.current], self.ref_rms, self.config)

    def result(self, timings: dict[str, float]) -> GenerationResult:
        """The current version as a ``GenerationResult`` (``timings``: of the run that made it so); with word
        timings, each take's own words placed on the joined audio as the engine places a generation's."""
        audio = self.audio()
        chunk_words = [list(take.words or []) for take in self.current]
        words = (place_words(chunk_words, [take.audio for take in self.current], self.config, len(audio))
                 if self.config.word_timestamps else [])
        return GenerationResult(audio=audio, sample_rate=SAMPLE_RATE,
                                codes=[take.codes for take in self.current], seed=self.seed,
                                chunks=list(self.sentences), timings=timings, settings=self.settings,
                                config=self.config, checks=[t.check for t in self.current if t.check is not None],
                                words=words, chunk_words=chunk_words if self.config.word_timestamps else [])

    def seeds(self) -> list[Optional[int]]:
        """Each sentence's current take's seed (None: as first generated)."""
        return [take.seed for take in self.current]


def model_key(loaded) -> tuple[str, str]:
    """Which model made a result: its label and folder (a new take must come from the same one)."""
    return loaded.label, str(loaded.folder)
