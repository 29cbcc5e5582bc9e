"""Timing the backbone choices as a generation runs them, and telling a measurement spoilt by load.

What ``backbone="auto"`` times (``step_probe``) is a step, not a single forward: the conditional row
(``PROBE_COND`` positions: a 5 s voice design's prompt and target) and the unconditional row
(``PROBE_UNCOND``: the target frames alone) through ``OmniVoiceOnnx.hidden_states_pair``, side by
side as the loop runs them: a single forward can rank the choices otherwise than a generation's steps do
(issue 42).

The candidates take turns, round after round, each round starting from another one (a slow moment
of the machine hits them all), and the decision rests on the **median of paired ratios**: each
round's time of a candidate over the baseline's in the same round.  Its confidence is the one-sided
sign test's: ``1 - P(at least that many rounds on the median's side | no difference)``.

A probe is **contended** when this process got well under its threads' worth of CPU while other
processes took it (``/proc/stat``: the machine's busy time minus ours; ``steal`` counts as taken),
or when the paired ratios spread too wide to decide on.  ``choice.py`` does not remember such a
probe, and probes again later when the machine is quiet (``machine_quiet``).
"""

from __future__ import annotations

import dataclasses
import math
import os
import pathlib
import time
from typing import Callable, Optional

import numpy as np

#: a voice design's guided step of 5 s of speech, as the engine plans it for the speed targets' text: its 43
#: prompt positions and 125 target frames, and the target alone (``benchmarks/step_floor.py`` prints the plan; a
#: clone's row is longer: 281 with a 4 s reference, 450 with 10 s).  Issue 42's 275 was no request's length.
PROBE_COND, PROBE_UNCOND = 168, 125
#: measured rounds of a probe (one more, first, pays the one-off costs and is not counted)
PROBE_ROUNDS = 7
#: contended: this process used under this share of ``wall x threads`` CPU seconds ...
UTILISATION_FLOOR = 0.75
#: ... while other processes took more than the idle cores plus this many cores
OTHERS_SLACK_CORES = 0.25
#: too wide to remember: the interquartile range of the decisive paired ratios over their median
SPREAD_CEILING = 0.30


@dataclasses.dataclass
class ProbeResult:
    """One probe's figures: median step seconds and paired ratios against ``baseline`` per candidate."""

    seconds: dict[str, float]
    ratios: dict[str, float]
    confidence: dict[str, float]
    spread: dict[str, float]
    baseline: str
    rounds: int
    utilisation: Optional[float] = None   # process CPU s over wall s x threads
    others_cores: Optional[float] = None  # cores other processes used meanwhile (None: not measurable)
    idle_cores: float = 0.0               # cores this process's threads leave free
    positions: tuple = (PROBE_COND, PROBE_UNCOND)
    measured: str = dataclasses.field(default_factory=lambda: time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))

    @classmethod
    def given(cls, seconds: dict, baseline: str, rounds: int = PROBE_ROUNDS) -> "ProbeResult":
        """A quiet probe whose every round took ``seconds`` (figures given, not measured: for tests)."""
        ratios = {label: value / seconds[baseline] for label, value in seconds.items()}
        return cls(seconds=dict(seconds), ratios=ratios, spread=dict.fromkeys(seconds, 0.0), baseline=baseline,
                   confidence={label: sign_confidence([r] * rounds) for label, r in ratios.items()}, rounds=rounds)

    def contention(self, decisive: Optional[str] = None) -> Optional[str]:
        """Why this probe cannot be trusted (machine load, or too wide a spread for ``decisive``), or None."""
        if self.utilisation is not None and self.utilisation < UTILISATION_FLOOR and (
                self.others_cores is None or self.others_cores > self.idle_cores + OTHERS_SLACK_CORES):
            taken = "" if self.others_cores is None else f", other processes used {self.others_cores:.1f} cores"
            return f"machine busy: this process got {self.utilisation:.0%} of its threads' CPU time{taken}"
        if decisive is not None and self.spread.get(decisive, 0.0) > SPREAD_CEILING:
            return f"spread too wide: {decisive}'s paired ratios vary by {self.spread[decisive]:.0%}"
        return None

    def as_record(self, decisive: Optional[str] = None) -> dict:
        """The figures as kept with a choice and shown by the Model tab (JSON)."""
        return {"kind": "step", "positions": list(self.positions), "rounds": self.rounds, "baseline": self.baseline,
                "seconds": {k: round(v, 4) for k, v in self.seconds.items()},
                "ratios": {k: round(v, 4) for k, v in self.ratios.items()},
                "confidence": {k: round(v, 4) for k, v in self.confidence.items()},
                "spread": {k: round(v, 4) for k, v in self.spread.items()},
                "utilisation": None if self.utilisation is None else round(self.utilisation, 3),
                "others_cores": None if self.others_cores is None else round(self.others_cores, 2),
                "measured": self.measured, "contention": self.contention(decisive)}


def sign_confidence(ratios, threshold: float = 1.0) -> float:
    """One-sided sign test: ``1 - P(X >= k)`` for ``X ~ Binomial(n, 1/2)``, ``k`` the rounds on the side of
    ``threshold`` where the median lies (ties count against).  7 rounds all one side: 0.992."""
    ratios = np.asarray(list(ratios), dtype=float)
    n = len(ratios)
    if n == 0:
        return 0.0
    below = np.median(ratios) < threshold
    k = int((ratios < threshold).sum() if below else (ratios > threshold).sum())
    tail = sum(math.comb(n, i) for i in range(k, n + 1)) / 2 ** n
    return float(1.0 - tail)


def relative_iqr(values) -> float:
    values = np.asarray(list(values), dtype=float)
    median = float(np.median(values))
    if len(values) < 2 or median <= 0:
        return 0.0
    q1, q3 = np.percentile(values, [25, 75])
    return float((q3 - q1) / median)


# --- the machine's CPU -------------------------------------------------------------------------

def busy_cpu_seconds(stat: pathlib.Path = pathlib.Path("/proc/stat")) -> Optional[float]:
    """Seconds every CPU of the machine spent busy since boot (``steal`` included: a hypervisor took it), or None."""
    try:
        fields = stat.read_text().splitlines()[0].split()
    except (OSError, IndexError):
        return None
    if not fields or fields[0] != "cpu":
        return None
    values = [int(v) for v in fields[1:9]] + [0] * max(0, 9 - len(fields))
    user, nice, system, _idle, _iowait, irq, softirq, steal = values[:8]
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


class CpuWindow:
    """Our CPU time, the machine's busy time and the wall time over a ``with`` block."""

    def __init__(self, threads: int):
        self.threads = max(int(threads), 1)
        self.utilisation: Optional[float] = None
        self.others_cores: Optional[float] = None

    def __enter__(self):
        self._wall, self._ours, self._busy = time.perf_counter(), time.process_time(), busy_cpu_seconds()
        return self

    def __exit__(self, *exc):
        wall = max(time.perf_counter() - self._wall, 1e-9)
        ours = time.process_time() - self._ours
        self.utilisation = ours / (wall * self.threads)
        busy = busy_cpu_seconds()
        if busy is not None and self._busy is not None:
            # the clock ticks of /proc/stat are coarse (10 ms): a short window reads a little noise
            self.others_cores = max(busy - self._busy - ours, 0.0) / wall
        return False


def idle_cores(threads: int) -> float:
    return float(max((os.cpu_count() or 1) - max(int(threads), 1), 0))


def machine_quiet(threads: int, seconds: float = 2.0, sleep: Callable[[float], None] = time.sleep) -> bool:
    """Whether other processes leave this process's cores free now: over ``seconds``, they use no more than
    the cores our threads leave idle plus ``OTHERS_SLACK_CORES`` (from ``/proc/stat``; elsewhere the
    1-minute load average against the same bound)."""
    before, ours = busy_cpu_seconds(), time.process_time()
    if before is None:
        try:
            return os.getloadavg()[0] <= idle_cores(threads) + OTHERS_SLACK_CORES
        except (OSError, AttributeError):
            return True
    started = time.perf_counter()
    sleep(seconds)
    after = busy_cpu_seconds()
    wall = max(time.perf_counter() - started, 1e-9)
    others = max((after or before) - before - (time.process_time() - ours), 0.0) / wall
    return others <= idle_cores(threads) + OTHERS_SLACK_CORES


# --- the probe ---------------------------------------------------------------------------------

def step_probe(model, sessions: dict, baseline: str, threads: int, positions: tuple = (PROBE_COND, PROBE_UNCOND),
               rounds: int = PROBE_ROUNDS) -> ProbeResult:
    """Time a guided step's two forwards (``positions``: conditional and unconditional rows) with each of
    ``sessions`` set as ``model.backbone``, ``rounds`` rounds taking turns; ratios against ``baseline``.

    The embeddings are fixed random rows of the model's width (the cost of a forward does not depend on
    the values).  ``model.backbone`` is left at the last candidate: the caller sets the one chosen."""
    if baseline not in sessions:
        raise ValueError(f"the baseline {baseline!r} is not among the probed sessions")
    cond, uncond = positions
    rng = np.random.default_rng(0)
    cond_embeds = (0.02 * rng.standard_normal((1, cond, model.hidden_size))).astype(np.float32)
    uncond_embeds = (0.02 * rng.standard_normal((1, uncond, model.hidden_size))).astype(np.float32)
    labels = list(sessions)
    times = {label: [] for label in labels}

    def step(label):
        model.backbone = sessions[label]
        started = time.perf_counter()
        model.hidden_states_pair((cond_embeds, [cond]), (uncond_embeds, [uncond]))
        return time.perf_counter() - started

    for label in labels:  # the one-off costs (allocations, prepacking), not counted
        step(label)
    with CpuWindow(threads) as window:
        for round_ in range(rounds):
            for offset in range(len(labels)):  # each round starts from another candidate
                label = labels[(round_ + offset) % len(labels)]
                times[label].append(step(label))
    base = np.asarray(times[baseline])
    ratios = {label: np.asarray(times[label]) / base for label in labels}
    return ProbeResult(
        seconds={label: float(np.median(times[label])) for label in labels},
        ratios={label: float(np.median(r)) for label, r in ratios.items()},
        confidence={label: sign_confidence(r) if label != baseline else 1.0 for label, r in ratios.items()},
        spread={label: relative_iqr(r) for label, r in ratios.items()},
        baseline=baseline, rounds=rounds, utilisation=window.utilisation, others_cores=window.others_cores,
        idle_cores=idle_cores(threads), positions=(cond, uncond))


def step_cost(cond: int, uncond: int, kappa: float = 0.0) -> float:
    """A pair step's relative cost: each row's weight work (its positions) plus attention (``kappa * L**2``)."""
    return cond + kappa * cond ** 2 + uncond + kappa * uncond ** 2
