"""The work of a generation's plan, counted exactly as the engine will do it: what ``estimate`` prices.

For each chunk, its conditional row (text ids, reference frames, target frames) and its unconditional row
(the target frames) on every step that runs them (``guidance_schedule``), the conditional row whole or its
target alone on the kept prompt (``prompt_refresh``), the heads and the scoring of every step, the chunk's
codec decode (times its takes with the sentence check), and the post-processing of the joined audio.
"""

from __future__ import annotations

import dataclasses
from typing import Optional

from .duration import chunk_reference, chunk_target_frames
from ..settings.presets import prompt_refresh_for
from .sampling import guidance_schedule, unmask_schedule
from ..text.prompt import build_condition_ids

#: stages with a rate per unit of work (the backbone has its own fitted curve)
RATE_STAGES = ("prompt", "embeddings", "heads", "sampling", "codec_decode", "postprocess")

#: the sentence check's transcriptions: a rate per frame of each take, learnt from checked runs only (no warm-up:
#: the recogniser is loaded on first use), counted as 0 until one has run
CHECK_STAGE = "check"


@dataclasses.dataclass
class ChunkWork:
    prefix: int                 # positions before the target frames in the conditional row
    frames: int                 # target frames
    schedule: list[int]         # cells decided per step (0 = no forward that step)
    uncond: list[bool]          # steps that run the unconditional forward
    whole: Optional[list[bool]] = None  # steps that run the conditional row whole (the others: its target on
                                        # the kept prompt); None: every step
    takes: Optional[int] = None  # generations of the chunk a finished run made (sentence check); None: not
                                 # known yet (an estimate counts the expected takes)

    def __post_init__(self):
        if self.whole is None:
            self.whole = [True] * len(self.schedule)

    def conditional(self, whole: bool) -> int:
        """Positions the conditional row's forward runs on a step."""
        return self.length if whole else self.frames

    @property
    def length(self) -> int:
        return self.prefix + self.frames


@dataclasses.dataclass
class PlanWork:
    chunks: list[ChunkWork]
    guided: bool
    guard_tries: int = 0    # the sentence check's most takes per chunk; 0: no check
    joined: bool = True     # the chunks are joined and post-processed (not when one sentence is made again)

    @property
    def frames(self) -> int:
        return sum(c.frames for c in self.chunks)

    def units(self) -> dict[str, float]:
        """Work per rate stage, in that stage's unit (a chunk's takes as run; one when not known)."""
        units = dict.fromkeys(RATE_STAGES + ((CHECK_STAGE,) if self.guard_tries else ()), 0.0)
        for chunk in self.chunks:
            takes = chunk.takes or 1
            units["prompt"] += 1
            units["codec_decode"] += chunk.frames * takes
            if self.guard_tries:
                units[CHECK_STAGE] += chunk.frames * takes
            for k, uncond, whole in zip(chunk.schedule, chunk.uncond, chunk.whole):
                if k <= 0:
                    continue
                units["embeddings"] += (chunk.conditional(whole) + (chunk.frames if uncond else 0)) * takes
                units["heads"] += chunk.frames * (2 if uncond else 1) * takes
                units["sampling"] += chunk.frames * (2 if self.guided else 1) * takes
        units["postprocess"] = self.frames if self.joined else 0
        return units


def plan_work(plan, tokenizer, num_codebooks: int, keeps_prompt: bool = True, sentence: Optional[int] = None,
              takes: Optional[list[int]] = None) -> PlanWork:
    """The forwards, heads, scoring and decodes the engine will run for ``plan`` (a ``GenerationPlan``);
    ``keeps_prompt``: whether the backbone takes a past (else every step runs the conditional row whole);
    ``sentence``: chunk ``sentence`` alone, made again (``OmniVoiceEngine.run_sentence``); ``takes``: the takes
    each of those chunks ran (a finished run with the sentence check)."""
    config = plan.config
    voice = plan.voice
    frames = chunk_target_frames(plan.chunks, plan.target_frames, plan.speed,
                                 voice.transcript if voice else None, voice.frames if voice else None)
    guided = config.guidance_scale != 0
    chunks = []
    for index, (text, count) in enumerate(zip(plan.chunks, frames)):
        ref_text, ref_frames = chunk_reference(index, (voice.transcript, voice.frames) if voice else None,
                                               (plan.chunks[0], frames[0]))
        ref_frames = ref_frames or 0
        ids = build_condition_ids(text, tokenizer, ref_text=ref_text, language=plan.language,
                                  instruct=plan.instruct, denoise=config.denoise, has_reference=ref_frames > 0)
        schedule = unmask_schedule(count, num_codebooks, config.num_step, config.t_shift)
        uncond = guidance_schedule(schedule, config.guidance_every) if guided else [False] * len(schedule)
        refresh = prompt_refresh_for(config, voice.frames if voice else None) if keeps_prompt else 1
        whole = guidance_schedule(schedule, refresh)
        chunks.append(ChunkWork(prefix=len(ids) + ref_frames, frames=count, schedule=schedule, uncond=uncond,
                                whole=whole))
    if sentence is not None:
        chunks = [chunks[sentence]]
    for chunk, count in zip(chunks, takes or ()):
        chunk.takes = count
    return PlanWork(chunks=chunks, guided=guided, guard_tries=config.guard_tries if config.guard else 0,
                    joined=sentence is None)
