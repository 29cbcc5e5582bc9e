"""How long a generation will take on this machine: a model of the whole pipeline.

The work of a plan is counted exactly as the engine will do it (``work.plan_work``); this module
prices it.

Costs (``PipelineEstimator``):

* one backbone forward of a row of ``L`` positions costs ``a + b*(L + kappa*L**2)``
  seconds: ``kappa`` is the model's attention work per position squared over
  its weight work per position (``onnx_model.attention_ratio``, 2.6e-4 at full
  size), and ``a``, ``b`` are fitted by least squares to measured forwards (a
  warm-up of a few forwards when the model loads, then every forward of every
  run), so a curve measured on short rows extrapolates with the right shape
  (without ``kappa``, a free quadratic within 1.5x the longest measured row);
* a step that runs both rows runs their forwards side by side where the model can
  (``OmniVoiceOnnx.hidden_states_pair``): the pair costs ``pair_share`` of the two
  forwards' sum, measured by the warm-up and refined by every such step (1 where the
  forwards run one after the other);
* a step between prompt refreshes (``GenerationConfig.prompt_refresh``) runs the conditional
  row's ``T`` target frames on the kept keys and values of its ``P`` prompt positions: the
  curve's weight work on ``T`` positions and its attention work over ``T x (P + T)``, times
  ``split_share``, measured by the warm-up and refined by every such step as the pair's share is;
* every other stage costs a rate per unit of its work (frames x rows for the
  heads and the scoring, positions for the embeddings, frames for the codec
  decode and the post-processing), measured by the warm-up and refined after
  each run from that run's stage timings.

With the sentence check on (``GenerationConfig.guard``) a chunk may be generated more than once, and
every take is transcribed.  A finished run's work counts the takes it ran (``plan_work``'s ``takes``, from
its checks), so its stage rates stay per take, and the recogniser's seconds per frame of audio are learnt
as the ``check`` stage.  Before a run, the takes are not known: each chunk counts ``expected_takes`` (see
there: learnt from the checks of earlier runs, ``guard_tries`` until there are any).

Whatever the model leaves out (a machine that got busier since the warm-up: other processes, another
front end's run) shows as the last runs' *pace*: each finished run's measured total over what the
model, refined by that run, predicts for it.  Every estimate is scaled by it (``PACE_WEIGHT``), so
after a run that took 4x the estimate under load, the next estimate is about 2.5x higher, and it
comes back as the machine frees up.

``Estimate.seconds_left`` gives the time left at any point of a run, scaled
by how the run has kept to the estimate so far.
"""

from __future__ import annotations

import collections
import dataclasses
import time
from typing import Optional

import numpy as np

from .onnx_model import PromptPast
from .sampling import decode_step
from .work import CHECK_STAGE, RATE_STAGES, PlanWork

#: the warm-up: forward lengths (positions) and the frames of the other stages.  256 anchors the curve
#: where most runs are (a 5 s sentence's rows are ~150 and ~125 positions, a paragraph's ~700): with 16 and
#: 64 only, a first run's estimate extrapolated 2-10x and missed by 20-30% (BENCHMARKS.md, issue 10)
WARMUP_LENGTHS = (16, 64, 256)
WARMUP_FRAMES = 25
WARMUP_PAIR = (160, 128)

#: how much one run's measured rate moves the stored one
RUN_WEIGHT = 0.5

#: how much one run's pace (measured total / predicted) moves the pace every estimate is scaled by
PACE_WEIGHT = 0.5
#: the pace is kept within these bounds (one stalled or lucky run must not swing every estimate wildly)
PACE_BOUNDS = (0.5, 20.0)

#: how much one step's pair of forwards moves ``pair_share`` (a run has tens of such steps), and one step
#: between prompt refreshes ``split_share``
PAIR_WEIGHT = 0.05


@dataclasses.dataclass
class Estimate:
    """Predicted seconds: the total, per stage, and the time line of the run (for the time left)."""

    total: float
    stages: dict[str, float]
    marks: dict[tuple[int, int], float]   # (chunk, steps done) -> predicted seconds elapsed; steps+1 = decoded

    def seconds_left(self, chunk: int, steps_done: int, elapsed: Optional[float] = None) -> float:
        """Seconds left after ``steps_done`` steps of ``chunk``; with ``elapsed``, scaled by the run's pace."""
        done = self.marks.get((chunk, steps_done))
        if done is None:
            return 0.0
        left = max(self.total - done, 0.0)
        if elapsed is not None and done > 0 and elapsed > 0:
            left *= min(max(elapsed / done, 0.5), 2.0)
        return left


class PipelineEstimator:
    """The cost model of this engine on this machine (see the module doc)."""

    def __init__(self, max_samples: int = 400, attention_ratio: Optional[float] = None):
        self.forwards: collections.deque = collections.deque(maxlen=max_samples)   # (positions, seconds)
        self.attention_ratio = attention_ratio
        self.rates: dict[str, float] = {}
        self.pair_share = 1.0   # a step's two forwards side by side, over their sum one after the other
        self.pace = 1.0         # the last runs' measured totals over the model's predictions (module doc)
        self.split_share = 1.0  # a forward on a kept prompt, over its work on the forward curve (split_seconds)
        self.failing_share: Optional[float] = None  # of the sentence check's takes, those over the threshold
        self._curve: Optional[tuple[float, float, float]] = None

    @property
    def ready(self) -> bool:
        return bool(self.forwards) and all(stage in self.rates for stage in RATE_STAGES)

    # --- measuring ------------------------------------------------------------------------

    def calibrate(self, engine) -> float:
        """The warm-up: a few forwards, heads, one scoring step, one decode; returns its seconds."""
        started = time.perf_counter()
        model, codebooks, mask = engine.model, engine.num_codebooks, engine.mask_id
        frames = WARMUP_FRAMES
        hidden = None
        for repeat, length in enumerate((WARMUP_LENGTHS[0],) + WARMUP_LENGTHS * 2):
            ids = np.full((1, codebooks, length), mask, dtype=np.int64)
            tick = time.perf_counter()
            embeds = model.embed(ids, np.ones((1, length), dtype=bool))
            embedded = time.perf_counter()
            hidden = model.hidden_states(embeds, [length])
            if repeat:  # the first forward pays one-off costs: not a sample
                self.observe_forward(length, time.perf_counter() - embedded)
                self._rate("embeddings", embedded - tick, length, weight=1.0)
        # a step's two rows side by side, sized as a 5 s sentence's (its conditional row and its target frames)
        first, second = WARMUP_PAIR
        prompt = PromptPast(first - second) if model.keeps_prompt else None
        tick = time.perf_counter()
        model.hidden_states_pair((embeds[:, :first], [first], None, prompt), (embeds[:, :second], [second]))
        self._pair(first, second, time.perf_counter() - tick, weight=1.0)
        if prompt is not None:  # the conditional row's target on its kept prompt (prompt_refresh)
            tick = time.perf_counter()
            model.hidden_states(embeds[:, first - second:first], [second], past=prompt)
            self._split(first - second, second, time.perf_counter() - tick, weight=1.0)
        rows = np.concatenate([hidden[:, :frames]] * 2)
        tick = time.perf_counter()
        logits = model.audio_logits(rows)
        self._rate("heads", time.perf_counter() - tick, 2 * frames, weight=1.0)
        tokens = np.full((codebooks, frames), mask, dtype=np.int64)
        tick = time.perf_counter()
        decode_step(tokens, logits[0], logits[1], codebooks * frames // 4, rng=np.random.default_rng(0),
                    mask_id=mask, overwrite=True)
        self._rate("sampling", time.perf_counter() - tick, 2 * frames, weight=1.0)
        self.rates["prompt"] = 1e-3
        codes = np.random.default_rng(0).integers(0, mask, (codebooks, frames), dtype=np.int64)
        audio = np.zeros(frames, dtype=np.float32)
        if engine.codec is not None:
            tick = time.perf_counter()
            audio = engine.codec.decode(codes)
            self._rate("codec_decode", time.perf_counter() - tick, frames, weight=1.0)
        else:
            self.rates["codec_decode"] = 0.0
        from ..audio.processing import postprocess_audio

        tick = time.perf_counter()
        postprocess_audio(np.asarray(audio, dtype=np.float32)[np.newaxis], None)
        self._rate("postprocess", time.perf_counter() - tick, frames, weight=1.0)
        return time.perf_counter() - started

    def observe_forward(self, positions: int, seconds: float) -> None:
        self.forwards.append((int(positions), float(seconds)))
        self._curve = None

    def observe_pair(self, first: int, second: int, seconds: float) -> None:
        """One step's two forwards (``first`` and ``second`` positions) took ``seconds`` together."""
        if not self.forwards:  # nothing measured alone yet (no warm-up): the pair, shared by positions, starts the curve
            apart = seconds / self.pair_share
            for positions in (first, second):
                self.observe_forward(positions, apart * positions / max(first + second, 1))
            return
        self._pair(first, second, seconds, weight=PAIR_WEIGHT)

    def observe_step(self, length: int, frames: int, seconds: float, paired: bool, whole: bool) -> None:
        """One step's backbone: the conditional row of ``length`` positions (``whole``, else its ``frames``
        target frames on its kept prompt) and, ``paired``, the unconditional row of ``frames`` beside it."""
        if whole:
            if paired:
                self.observe_pair(length, frames, seconds)
            else:
                self.observe_forward(length, seconds)
        elif self.forwards:  # the split forward's share, its pair's taken out as measured
            alone = seconds / self.pair_share - self.forward_seconds(frames) if paired else seconds
            self._split(length - frames, frames, alone, weight=PAIR_WEIGHT)

    def split_seconds(self, prefix: int, frames: int) -> float:
        """Predicted seconds of a forward of ``frames`` positions on the kept keys and values of ``prefix``:
        the curve's weight work on ``frames`` positions and attention work over ``frames x (prefix + frames)``."""
        return self.split_share * self._split_work(prefix, frames)

    def _split_work(self, prefix: int, frames: int) -> float:
        self.forward_seconds(frames)  # fits the curve
        (a, b, c), (a1, b1, _), trusted = self._curve
        if prefix + frames > trusted:
            return a1 + b1 * frames
        return a + b * frames + c * frames * (prefix + frames)

    def _split(self, prefix: int, frames: int, seconds: float, weight: float) -> None:
        work = self._split_work(prefix, frames)
        if work > 0:
            share = min(max(seconds / work, 0.3), 3.0)  # one stalled step must not swing every estimate
            self.split_share = (1 - weight) * self.split_share + weight * share

    def _pair(self, first: int, second: int, seconds: float, weight: float) -> None:
        """Move ``pair_share`` toward this pair's share (needs the forward curve: forwards measured alone)."""
        apart = self.forward_seconds(first) + self.forward_seconds(second)
        if apart > 0:
            share = min(max(seconds / apart, 0.3), 1.5)  # one stalled step must not swing every estimate
            self.pair_share = (1 - weight) * self.pair_share + weight * share

    def observe_run(self, work: PlanWork, seconds: dict[str, float]) -> None:
        """Refine the stage rates with one finished run's stage timings (``GenerationResult.timings``)."""
        for stage, units in work.units().items():
            if stage in seconds and units > 0:
                self._rate(stage, seconds[stage], units, weight=RUN_WEIGHT)
        predicted = self._predict(work)
        if seconds.get("total") and predicted is not None and predicted.total > 0:
            low, high = PACE_BOUNDS
            pace = min(max(seconds["total"] / predicted.total, low), high)
            self.pace = (1 - PACE_WEIGHT) * self.pace + PACE_WEIGHT * pace

    def observe_checks(self, checks) -> None:
        """Learn from one checked run's ``ChunkCheck``s what share of takes fails the threshold."""
        takes = sum(len(check.takes) for check in checks)
        if takes:
            failed = takes - sum(1 for check in checks if check.passed)  # a passed chunk's last take passed
            share = failed / takes
            old = self.failing_share
            self.failing_share = share if old is None else (1 - RUN_WEIGHT) * old + RUN_WEIGHT * share

    def expected_takes(self, tries: int) -> float:
        """The takes a chunk is expected to need with the sentence check's ``guard_tries`` = ``tries``.

        Learnt, with ``guard_tries`` as the upper bound: a take fails with the share ``p`` of failing takes
        in the last checked runs (``observe_checks``), so a chunk needs ``1 + p + ... + p**(tries-1)`` takes
        on average, between 1 (everything passes) and ``tries`` (nothing does).  The share is learnt per take,
        not per chunk, so it holds when ``guard_tries`` changes.  Before any checked run nothing is known and
        the upper bound is used: a queue that promises a wait too short is worse than one too long, and the
        first checked run corrects it.
        """
        if tries <= 1:
            return 1.0
        share = 1.0 if self.failing_share is None else self.failing_share
        return float(sum(share ** k for k in range(tries)))

    def _rate(self, stage: str, seconds: float, units: float, weight: float) -> None:
        sample = seconds / max(units, 1e-9)
        old = self.rates.get(stage)
        self.rates[stage] = sample if old is None else (1 - weight) * old + weight * sample

    # --- predicting -----------------------------------------------------------------------

    def forward_seconds(self, positions: int) -> float:
        """Predicted seconds of one backbone forward of ``positions`` positions.

        With the model's ``attention_ratio`` the curve has the model's own shape and holds at any length.
        Without it, beyond 1.5x the longest measured row a free quadratic term is not trusted (fitted on short
        rows of a noisy machine it can explode): the line through the measurements extrapolates instead."""
        if self._curve is None and self.attention_ratio:
            a, b, c = fit_forward_curve(self.forwards, kappa=self.attention_ratio)
            self._curve = ((a, b, c), (a, b, c), float("inf"))
        if self._curve is None:
            longest = max((n for n, _ in self.forwards), default=0)
            self._curve = (fit_forward_curve(self.forwards), fit_forward_curve(self.forwards, quadratic=False),
                           1.5 * longest)
        (a, b, c), (a1, b1, _), trusted = self._curve
        if positions > trusted:
            return a1 + b1 * positions
        return a + b * positions + c * positions * positions

    def estimate(self, work: PlanWork) -> Optional[Estimate]:
        """The predicted seconds of ``work`` at the last runs' pace; None before any measurement."""
        predicted = self._predict(work)
        if predicted is None or self.pace == 1.0:
            return predicted
        return Estimate(total=predicted.total * self.pace,
                        stages={stage: seconds * self.pace for stage, seconds in predicted.stages.items()},
                        marks={mark: seconds * self.pace for mark, seconds in predicted.marks.items()})

    def _predict(self, work: PlanWork) -> Optional[Estimate]:
        """The cost model's seconds of ``work`` (no pace); None before any measurement."""
        if not self.ready:
            return None
        stages = dict.fromkeys(("backbone",) + RATE_STAGES + ((CHECK_STAGE,) if work.guard_tries else ()), 0.0)
        marks: dict[tuple[int, int], float] = {}
        elapsed = 0.0
        rate = self.rates
        for index, chunk in enumerate(work.chunks):
            cost = rate["prompt"]
            stages["prompt"] += cost
            elapsed += cost
            marks[(index, 0)] = elapsed
            take: dict[str, float] = collections.Counter()  # one take's seconds per stage
            conds = {True: self.forward_seconds(chunk.length), False: self.split_seconds(chunk.prefix, chunk.frames)}
            uncond = self.forward_seconds(chunk.frames)
            for step, (k, runs_uncond, whole) in enumerate(zip(chunk.schedule, chunk.uncond, chunk.whole), start=1):
                if k > 0:
                    cond = conds[whole]
                    parts = {"backbone": (cond + uncond) * self.pair_share if runs_uncond else cond,
                             "embeddings": rate["embeddings"] * (chunk.conditional(whole)
                                                                 + (chunk.frames if runs_uncond else 0)),
                             "heads": rate["heads"] * chunk.frames * (2 if runs_uncond else 1),
                             "sampling": rate["sampling"] * chunk.frames * (2 if work.guided else 1)}
                    take.update(parts)
                    elapsed += sum(parts.values())
                marks[(index, step)] = elapsed
            take["codec_decode"] += rate["codec_decode"] * chunk.frames
            if work.guard_tries:
                take[CHECK_STAGE] += rate.get(CHECK_STAGE, 0.0) * chunk.frames
            # the further takes of the sentence check come before the chunk is done
            takes = chunk.takes or self.expected_takes(work.guard_tries)
            for stage, seconds in take.items():
                stages[stage] += seconds * takes
            elapsed = marks[(index, 0)] + sum(take.values()) * takes
            marks[(index, len(chunk.schedule) + 1)] = elapsed
        stages["postprocess"] = rate["postprocess"] * work.frames if work.joined else 0.0
        elapsed += stages["postprocess"]
        return Estimate(total=elapsed, stages=stages, marks=marks)


def fit_forward_curve(samples, quadratic: bool = True, kappa: Optional[float] = None) -> tuple[float, float, float]:
    """``(a, b, c)`` of ``seconds = a + b*L + c*L**2`` by least squares over ``(L, seconds)`` samples.

    With ``kappa`` the shape is fixed, ``c = b*kappa``: ``a`` and ``b`` are
    fitted to ``a + b*(L + kappa*L**2)`` (non-negative, else proportional).

    The quadratic term (attention) is fitted only when the lengths span at
    least a factor of 3 over three or more distinct lengths, and kept only
    when every coefficient comes out non-negative; otherwise a line, and
    with a single length a proportional rate.
    """
    if not samples:
        return 0.0, 0.0, 0.0
    lengths = np.array([s[0] for s in samples], dtype=np.float64)
    seconds = np.array([s[1] for s in samples], dtype=np.float64)
    distinct = np.unique(lengths)
    if kappa is not None:
        work = lengths + kappa * lengths ** 2
        if len(distinct) >= 2:
            coef = np.linalg.lstsq(np.stack([np.ones_like(work), work], 1), seconds, rcond=None)[0]
            if (coef >= 0).all():
                return float(coef[0]), float(coef[1]), float(coef[1] * kappa)
        rate = float(seconds.sum() / max(work.sum(), 1e-12))
        return 0.0, rate, rate * kappa
    if quadratic and len(distinct) >= 3 and distinct[-1] >= 3 * distinct[0]:
        coef = np.linalg.lstsq(np.stack([np.ones_like(lengths), lengths, lengths ** 2], 1), seconds, rcond=None)[0]
        if (coef >= 0).all():
            return float(coef[0]), float(coef[1]), float(coef[2])
    if len(distinct) >= 2:
        coef = np.linalg.lstsq(np.stack([np.ones_like(lengths), lengths], 1), seconds, rcond=None)[0]
        if (coef >= 0).all():
            return float(coef[0]), float(coef[1]), 0.0
    return 0.0, float(seconds.sum() / max(lengths.sum(), 1.0)), 0.0
