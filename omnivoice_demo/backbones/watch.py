"""What follows an ``auto`` choice on one engine: the generations' steps checked against the probe's figures, and
probes made again in the background when the machine is quiet (``BackboneWatch``); the gate that keeps a
re-probe and the generations' forwards apart (``StepGate``)."""

from __future__ import annotations

import contextlib
import statistics
import threading
from typing import Any, Callable, Optional

from .probe import machine_quiet, step_cost

#: after this many guided whole steps of real generations, their median time is checked against the probe
RECHECK_STEPS = 16
#: a clear contradiction: the steps ran this much slower, or faster (1 / (1 + it)), than the probe predicted
RECHECK_TOLERANCE = 0.5
#: a background re-probe first waits this long, then twice as long after each busy look, up to the ceiling
REPROBE_WAIT_S, REPROBE_WAIT_MAX_S = 60.0, 900.0


class StepGate:
    """Generations' steps share it (any number at once); a probe made again holds it alone, waiting for the
    steps in flight and holding back new ones (a readers-writer lock: ``threading`` has none)."""

    def __init__(self):
        self._cond = threading.Condition()
        self._steps = 0
        self._probing = False

    @contextlib.contextmanager
    def step(self):
        with self._cond:
            self._cond.wait_for(lambda: not self._probing)
            self._steps += 1
        try:
            yield
        finally:
            with self._cond:
                self._steps -= 1
                self._cond.notify_all()

    @contextlib.contextmanager
    def alone(self):
        with self._cond:
            self._cond.wait_for(lambda: not self._probing)
            self._probing = True
            self._cond.wait_for(lambda: self._steps == 0)
        try:
            yield
        finally:
            with self._cond:
                self._probing = False
                self._cond.notify_all()


class BackboneWatch:
    """What follows an ``auto`` choice on one engine (``choose_backbone(..., watch=)``).

    * The engine runs each step's forwards inside ``gate.step()``; a probe made again runs inside
      ``gate.alone()``, so it never times its candidates while a generation's forwards share the cores,
      and a generation never runs on a backbone being swapped.
    * ``observe_step`` compares each guided whole step's measured time with what the probe predicted
      for the choice (its figure scaled to the step's positions, ``probe.step_cost``); after
      ``RECHECK_STEPS`` steps a median off by more than ``RECHECK_TOLERANCE`` either way is a clear
      contradiction: the probe did not measure what runs here, and it is made again (once per probe).
    * A contended probe, or a contradiction, starts a background thread that looks every
      ``REPROBE_WAIT_S`` (doubling up to ``REPROBE_WAIT_MAX_S``) whether the machine is quiet
      (``probe.machine_quiet``), and then probes again under ``lock``, until a probe is not contended.
    """

    def __init__(self, kappa: float = 0.0, quiet: Optional[Callable[[int], bool]] = None,
                 wait_s: float = REPROBE_WAIT_S, wait_max_s: float = REPROBE_WAIT_MAX_S):
        self.gate = StepGate()
        self.kappa = float(kappa or 0.0)
        self.quiet = quiet or machine_quiet
        self.wait_s, self.wait_max_s = wait_s, wait_max_s
        self.auto: Optional[Any] = None   # choice.AutoChoice (not imported: choice imports this module)
        self.ratios: list[float] = []
        self.checked = False
        self.thread: Optional[threading.Thread] = None
        self.reason: Optional[str] = None
        self._stop = threading.Event()

    def arm(self, auto) -> None:
        self.auto = auto
        contention = (auto.info.get("probe") or {}).get("contention")
        if contention is not None and not auto.info.get("remembered"):
            self.reprobe(f"the probe at load was contended ({contention})")

    def observe_step(self, cond: int, uncond: int, seconds: float, paired: bool, whole: bool) -> None:
        """One step of a generation: ``cond`` and ``uncond`` positions, its forwards' ``seconds``."""
        auto = self.auto
        probe = auto.info.get("probe") if auto is not None else None
        if not (paired and whole) or self.checked or not probe or self.reprobing:
            return
        chosen = "int4" if auto.info["choice"] == "as built" else auto.info["choice"]
        figure = (probe.get("seconds") or {}).get(chosen)
        if not figure:
            return
        probed_cond, probed_uncond = probe["positions"]
        predicted = figure * step_cost(cond, uncond, self.kappa) / step_cost(probed_cond, probed_uncond, self.kappa)
        self.ratios.append(seconds / predicted)
        if len(self.ratios) < RECHECK_STEPS:
            return
        self.checked = True
        ratio = statistics.median(self.ratios)
        if ratio > 1.0 + RECHECK_TOLERANCE or ratio < 1.0 / (1.0 + RECHECK_TOLERANCE):
            auto.info["recheck"] = f"steps ran at {ratio:.2f}x the probe's figure for {chosen}"
            self.reprobe(f"the generations' steps ran at {ratio:.2f}x the probe's figure for {chosen}")
        else:
            auto.info["recheck"] = f"steps ran at {ratio:.2f}x the probe's figure for {chosen}: consistent"

    @property
    def reprobing(self) -> bool:
        return self.thread is not None and self.thread.is_alive()

    def reprobe(self, reason: str) -> None:
        """Probe again in the background once the machine is quiet (one thread at a time)."""
        if self.auto is None or self.reprobing:
            return
        self.reason = reason
        self.auto.info["reprobe"] = f"pending, when the machine is quiet: {reason}"
        self.thread = threading.Thread(target=self._reprobe_when_quiet, name="omnivoice-backbone-reprobe",
                                       daemon=True)
        self.thread.start()

    def close(self) -> None:
        self._stop.set()

    def _reprobe_when_quiet(self) -> None:
        auto, wait = self.auto, self.wait_s
        while not self._stop.wait(wait):
            if not self.quiet(auto.threads):
                wait = min(wait * 2, self.wait_max_s)
                continue
            try:
                with self.gate.alone():
                    contention = auto.probe_and_choose(reprobe=True)
            except Exception as exc:  # noqa: BLE001 - the background must never take the engine down
                auto.info["reprobe"] = f"failed ({type(exc).__name__}: {str(exc)[:200]}); the choice stays"
                return
            if contention is None:
                auto.info["reprobe"] = f"done ({self.reason})"
                # the steps are checked against the new figures, unless a contradiction caused this one:
                # one re-probe per contradiction, never a loop of them
                self.ratios, self.checked = [], "steps ran" in self.reason
                return
            auto.info["reprobe"] = f"pending, when the machine is quiet: contended again ({contention})"
            wait = min(wait * 2, self.wait_max_s)
