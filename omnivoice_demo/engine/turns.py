"""Several voices in one output: turns generated in order, joined as the reference joins chunks.

A dialogue script (``text.script``) is a list of turns, each a text with its own voice (a saved
voice or a design).  ``prepare_turns`` plans every turn with the engine's own ``prepare`` (every check
and limit) and then holds the whole to the same limits as one request: the text's characters, the
planned seconds of speech and the number of chunks, summed over the turns, before any work.

``run_turns`` runs the turns' plans one after the other with one seed; the events of each are passed
on with their chunks numbered in the whole (so a progress bar counts the whole script), and the
turns' finished audio (each post-processed as the engine does, at its own voice's loudness) is joined
with ``audio.cross_fade_chunks``, the reference's join of the chunks of a long text.  The result's
``turns`` say who speaks when: ``{"speaker", "text", "start", "end"}`` in seconds of the joined audio,
exact to the sample (the join only adds silence between turns).
"""

from __future__ import annotations

import dataclasses
import time
from typing import Iterator, Optional, Sequence

import numpy as np

from ..audio.processing import cross_fade_chunks, cross_fade_starts
from ..constants import FRAME_RATE, SAMPLE_RATE
from ..errors import CONTROL_TOKENS, InvalidInput, check_control_tokens, excerpt
from ..settings.generation import GenerationConfig
from .word_times import shifted
from .events import GenerationPlan, GenerationResult, run_part, summed_timings
from ..text.normalize_choice import normalization_settings
from ..text.script import Turn  # noqa: F401 - a script's turns are what run_turns takes



@dataclasses.dataclass
class TurnsPlan:
    """The turns' validated plans; reads as one ``GenerationPlan`` where front ends look (chunks, seed, ...)."""

    plans: list[GenerationPlan]
    speakers: list[str]

    @property
    def config(self) -> GenerationConfig:
        return self.plans[0].config

    @property
    def chunks(self) -> list[str]:
        return [chunk for plan in self.plans for chunk in plan.chunks]

    @property
    def text(self) -> str:
        return "\n".join(f"{speaker}: {plan.text}" for speaker, plan in zip(self.speakers, self.plans))

    @property
    def target_frames(self) -> int:
        return sum(plan.target_frames for plan in self.plans)

    @property
    def language(self) -> Optional[str]:
        return self.plans[0].language

    voice = None        # each turn has its own (``plans[i].voice``)
    instruct = None

    @property
    def num_steps(self) -> int:
        return self.config.num_step

    @property
    def settings(self) -> dict:
        return dict(self.config.to_dict(), language=self.language,
                    speakers={speaker: (plan.voice.name if plan.voice else plan.instruct)
                              for speaker, plan in zip(self.speakers, self.plans)}, **normalization_settings(self))


def prepare_turns(engine, turns: Sequence[Turn], *, language: Optional[str] = None,
                  config: Optional[GenerationConfig] = None, pronunciations=None, **overrides) -> TurnsPlan:
    """Every turn planned (``engine.prepare``, one seed for all), and the whole held to the engine's limits."""
    if not turns:
        raise InvalidInput("There is nothing to say: give at least one turn.", param="input")
    limits = engine.limits
    limits.check("The number of turns", len(turns), "max_chunks")
    limits.check("The text of all turns", sum(len(turn.text) for turn in turns), "max_text_chars", " characters")
    config = (config or GenerationConfig()).replace(**overrides)
    plans = []
    for number, turn in enumerate(turns, 1):
        check_control_tokens(turn.text, f"Turn {number} ({excerpt(turn.speaker)})",
                             getattr(engine, "control_tokens", CONTROL_TOKENS))
        plan = engine.prepare(turn.text, language=language, instruct=turn.instruct, voice=turn.voice, config=config,
                              pronunciations=pronunciations)
        config = plan.config   # the seed drawn for the first turn is every turn's
        plans.append(plan)
    whole = TurnsPlan(plans=plans, speakers=[turn.speaker for turn in turns])
    limits.check("The planned speech of all turns", round(whole.target_frames / FRAME_RATE, 1), "max_audio_seconds",
                 " s")
    limits.check("The number of chunks of all turns", len(whole.chunks), "max_chunks")
    return whole


def run_turns(engine, whole: TurnsPlan) -> Iterator[object]:
    """The events of every turn in order (chunks numbered in the whole), then the joined ``GenerationResult``."""
    started = time.perf_counter()
    total, first = len(whole.chunks), 0
    results: list[GenerationResult] = []
    for speaker, plan in zip(whole.speakers, whole.plans):   # closing this run (a cancel) stops the turn's at once
        results.append((yield from run_part(engine, plan, first, total, started, speaker=speaker)))
        first += len(plan.chunks)
    audio = [result.audio[np.newaxis] for result in results]
    joined = cross_fade_chunks(audio, SAMPLE_RATE)[0]
    starts = cross_fade_starts([len(result.audio) for result in results], SAMPLE_RATE)
    turns = [{"speaker": speaker, "text": plan.text, "start": start / SAMPLE_RATE,
              "end": (start + len(result.audio)) / SAMPLE_RATE}
             for speaker, plan, result, start in zip(whole.speakers, whole.plans, results, starts)]
    words = [word for speaker, result, start in zip(whole.speakers, results, starts)
             for word in shifted(result.words, start / SAMPLE_RATE, speaker)]
    timings = summed_timings(results, started)
    yield GenerationResult(audio=np.ascontiguousarray(joined, dtype=np.float32), sample_rate=SAMPLE_RATE,
                           codes=[codes for result in results for codes in result.codes], seed=whole.config.seed,
                           chunks=whole.chunks, timings=timings, settings=whole.settings, config=whole.config,
                           checks=[check for result in results for check in result.checks], turns=turns,
                           words=words, chunk_words=[w for result in results for w in result.chunk_words])
