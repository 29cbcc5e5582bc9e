"""Which backbone a folder runs: as built, fp32, or an 8-bit rebuild; ``auto`` measures and remembers.

``backbone=`` choices (``BACKBONE_MODES``):

* ``int4``: the folder's graph as built (the name of the published folders' precision).
* ``fp32``: an int4 folder's 4-bit weights dequantized at load into fp32 MatMuls
  (``dequantize.py``); an fp32 folder as built.
* ``int8-block``, ``int8``, ``int8-tensor``: the 8-bit rebuilds of ``backbone_precision.py``,
  made once from the folder's weights and kept in our cache under the folder's
  content (``<cache>/backbones/<key>/``), so later starts load them at once (``builds.py``
  makes them, and fp32 in memory).
* ``auto`` (the default): on an int4 folder, every choice that passes the fidelity gate
  (``fidelity.py``: on the planted-outlier check, at least the int4 graph's hidden-state
  cosine and greedy-code agreement) is timed on whole forwards, and the fastest is kept
  unless int4 is within ``KEEP_MARGIN`` (int4 holds the least memory).  The outcome is
  remembered per machine (``backbone-choice.json``), so the probe runs once.  A folder
  built in fp32 is the exact model, and ``auto`` keeps it: an 8-bit choice there is asked
  for by name.
"""

from __future__ import annotations

import os
import pathlib
from typing import Optional, Sequence

from .precision import graph_precision
from .dequantize import resident_mb
from ..errors import InvalidInput, ModelFolderError, ModelNotAvailable
from ..storage.cache import folder_lock
from .builds import (BUILD_RECORD, build_key, build_record, cached_backbone, checkpoint_backbone,  # noqa: F401
                     content_key, dequantized_backbone, external_writer, open_cached_backbone, recorded_digests,
                     write_rebuilt)
from .fidelity import agreement_on, fidelity_of, passes_gate
from .probe import ProbeResult, step_probe
from .remembered import ChoiceCache, choice_key
from .watch import BackboneWatch

EIGHT_BIT = ("int8-block", "int8", "int8-row", "int8-tensor")
BACKBONE_MODES = ("auto", "int4", "fp32") + EIGHT_BIT

#: ``auto`` keeps the int4 graph unless another choice is faster by more than this share: int4 holds
#: the least memory, and a near tie should not flip between loads (so auto is never >5% slower)
KEEP_MARGIN = 0.05

#: a faster choice replaces int4 only with at least this confidence (one-sided sign test over the probe's
#: paired ratios: 6 of 7 rounds faster gives 0.94, 5 of 7 0.77)
CONFIDENCE = 0.9


def backbone_probe(model, sessions: dict, baseline: str, threads: int | None = None) -> ProbeResult:
    """A guided step's two forwards with each of ``sessions``, taking turns (``probe.step_probe``)."""
    return step_probe(model, sessions, baseline, threads or os.cpu_count() or 1)


def fastest(probe: ProbeResult, keep: str = "int4", margin: float = KEEP_MARGIN) -> str:
    """The candidate with the lowest median paired ratio, where that ratio is under ``1 - margin`` of
    ``keep``'s (the baseline) with at least ``CONFIDENCE`` (sign test); else ``keep``."""
    clear = [c for c in probe.ratios if c != keep and probe.ratios[c] < 1.0 - margin
             and sign_confidence_of(probe, c) >= CONFIDENCE]
    return min(clear, key=probe.ratios.get) if clear else keep


def sign_confidence_of(probe: ProbeResult, candidate: str) -> float:
    return probe.confidence.get(candidate, 0.0) if probe.ratios.get(candidate, 1.0) < 1.0 else 0.0


def most_faithful(probe_s: dict[str, float], origin: str, margin: float = KEEP_MARGIN) -> str:
    """Of the choices within ``margin`` of the fastest, the one closest to fp32 on the check (greedy-code
    agreement, then cosine): built from the original weights every 8-bit form passes int4's gate, and the
    coarsest (``int8-tensor``) must not win a near tie against ``int8-row``."""
    best = min(probe_s.values())
    near = [c for c, seconds in probe_s.items() if not best < (1.0 - margin) * seconds]

    def closeness(choice):
        figures = fidelity_of(origin, choice) or {}
        return float(figures.get("agreement", 0.0)), float(figures.get("cosine", 0.0)), -probe_s[choice]
    return max(near, key=closeness)


def weights_unused_reason(folder: pathlib.Path, mode: str) -> str | None:
    """Why the original weights would change nothing for the model ``folder`` run with ``mode`` (as
    ``choose_backbone`` decides), or None where they are used: said before they are downloaded."""
    from ..storage.manifest import BACKBONE_GRAPHS

    source = graph_precision(pathlib.Path(folder) / BACKBONE_GRAPHS["backbone"])
    if source in EIGHT_BIT:
        return (f"this folder's backbone is built in {source} already and runs as built; the original weights build "
                "the backbone of an int4 or fp32 folder")
    if mode == "int4":
        return "the backbone runs as int4 (backbone='int4'); the original weights build fp32 and 8-bit choices"
    if source == "fp32" and mode in ("fp32", "auto"):
        return ("this folder is built in fp32: its backbone is the exact model already, which the original weights "
                "would only rebuild; they make the 8-bit choices of an int4 folder (load one with precision int4)")
    return None


def choose_backbone(model, mode: str, path: pathlib.Path, providers: Sequence[str], options_factory,
                    threads: int | None = None, cache_dir: pathlib.Path | None = None, weights=None,
                    watch: "BackboneWatch | None" = None) -> dict:
    """Set ``model.backbone`` for ``mode`` and say what was chosen.

    Returns ``{"mode", "choice", "compute", "added_mb", "probe_s", "remembered", "fidelity"}``:
    ``choice`` is what runs (``as built``, ``fp32``, or an 8-bit name), ``added_mb`` the
    size of the weights it added, ``fidelity`` its figures on the planted-outlier check
    (None where never measured), and with a rebuild ``rss_added_mb`` how much the
    process's resident memory grew while it was made.

    With ``weights`` (``checkpoint.CheckpointWeights``: the original checkpoint), ``fp32`` and the
    8-bit choices are made from those weights instead of the folder's (``fp32`` is then the exact
    model), and ``auto`` chooses among them alone, gated by the table's rows "from the original
    weights"; ``weights`` in the result says where the backbone's weights came from.

    ``auto`` adds ``probe`` (the probe's figures: ``probe.ProbeResult.as_record``, with when it was
    measured and why it was contended, if it was) and ``agreement`` (the choice against the fp32 graph
    on these weights).  With a ``watch`` (``BackboneWatch``), a contended probe is made again in the
    background when the machine is quiet, and the generations' step times are checked against it.
    """
    if mode not in BACKBONE_MODES:
        raise InvalidInput(f"backbone must be one of {', '.join(BACKBONE_MODES)}, got {mode!r}.", param="backbone")
    source = graph_precision(path)
    info = {"mode": mode, "choice": "as built", "compute": "as built", "source": source, "added_mb": 0.0,
            "probe_s": {}, "remembered": False, "fidelity": fidelity_of(source, source),
            "weights": f"{source} from the {source} folder"}
    if weights is not None and (source in EIGHT_BIT or mode == "int4" or (source == "fp32" and mode in ("fp32", "auto"))):
        # the given weights would not be used: the folder runs as built (issue 43: the audio was silently the same)
        raise InvalidInput(f"backbone_weights are not used with backbone={mode!r} on this folder (its backbone is "
                           f"built in {source} and runs as built). They build the fp32 and 8-bit choices of a folder "
                           "built in int4 (or the 8-bit choices of an fp32 folder): give such a folder or backbone, "
                           "or leave backbone_weights out.", param="backbone_weights")
    if source in EIGHT_BIT:  # a folder built in 8 bits (convert's cpu_int8 profile) runs as built
        if mode not in ("auto", "int4", source):
            raise InvalidInput(f"This folder's backbone is built in {source} already; it runs as built "
                               "(backbone='auto'). For another precision, use a folder built in fp32 or int4.",
                               param="backbone")
        info["compute"] = f"as built ({source})"
        return info
    if mode == "int4" or (source == "fp32" and mode in ("fp32", "auto")):  # an fp32 folder is the exact model
        return info
    build = lambda choice: _build(model, choice, path, providers, options_factory, cache_dir, weights)  # noqa: E731
    if mode != "auto":
        return _switch(model, info, mode, build(mode), weights=weights)
    auto = AutoChoice(model, info, path, providers, options_factory, threads, cache_dir, weights, build)
    # one probe for starts at the same moment: the second waits here and takes what the first chose
    with folder_lock(auto.cache.path.parent, auto.cache.path):
        known = auto.cache.get(auto.key)
        if known is not None and known["choice"] in ("int4", *auto.candidates):  # else re-probed: outside the gate
            auto.take_remembered(known)
        else:
            auto.probe_and_choose()
    if watch is not None:
        watch.arm(auto)
    return info


class AutoChoice:
    """``backbone="auto"`` on one engine: the probe, the decision, the agreement check, what is remembered,
    and (through ``BackboneWatch``) the probes made again later.  ``info`` is the engine's
    ``backbone_choice`` dict, updated in place (the Model tab reads it)."""

    def __init__(self, model, info: dict, path: pathlib.Path, providers, options_factory, threads, cache_dir,
                 weights, build):
        self.model, self.info, self.path, self.weights, self.build = model, info, path, weights, build
        self.threads = threads or os.cpu_count() or 1
        self.base = dict(info)  # the folder's graph as built, before any choice
        self.cache = ChoiceCache(cache_dir)
        self.key = choice_key(path, providers, threads, weights)
        self.origin = info["source"] if weights is None else "checkpoint"
        self.candidates = [c for c in ("fp32",) + EIGHT_BIT if passes_gate(self.origin, c)]

    def take_remembered(self, known: dict) -> None:
        self.info.update(probe_s=known["probe_s"], probe=known.get("probe"), agreement=known.get("agreement"),
                         remembered=True)
        if known["choice"] == "int4":
            self.info.update(compute="int4 (measured before on this machine: the fastest that passes the gate)")
            return
        _switch(self.model, self.info, known["choice"], self.build(known["choice"]), measured=True,
                weights=self.weights)

    def probe_and_choose(self, reprobe: bool = False) -> Optional[str]:
        """Probe every gated choice, choose, measure the choice's agreement with fp32 on these weights, and
        remember it unless the probe was contended.  Returns why it was contended, or None."""
        # the folder's own graph, opened only now that it is timed; with the original weights it is not a
        # candidate (every gated choice made from them is closer to the model than int4)
        built = None
        if self.weights is None:
            built = self.model.open_folder_backbone() if reprobe else self.model.backbone
        built_sessions = {c: self.build(c) for c in self.candidates}
        sessions = {**({"int4": built} if built is not None else {}), **{c: b[0] for c, b in built_sessions.items()}}
        baseline = "int4" if built is not None else ("fp32" if "fp32" in sessions else next(iter(sessions)))
        probe = backbone_probe(self.model, sessions, baseline=baseline, threads=self.threads)
        probe_s = {label: round(seconds, 4) for label, seconds in probe.seconds.items()}
        choice = fastest(probe) if self.weights is None else most_faithful(probe_s, self.origin)
        decisive = choice if choice != baseline else min(
            (c for c in probe.ratios if c != baseline), key=probe.ratios.get, default=None)
        record = probe.as_record(decisive)
        agreement = self._agreement(choice, sessions, built_sessions)
        if reprobe:  # what the earlier choice set is undone before the new one is applied (why it was made kept)
            why = {k: self.info[k] for k in ("recheck", "reprobe") if k in self.info}
            self.info.clear()
            self.info.update(self.base, **why)
        self.info.update(probe_s=probe_s, probe=record, agreement=agreement, remembered=False)
        if record["contention"] is None:
            self.cache.put(self.key, choice, probe_s, record, agreement)
        if choice == "int4":
            self.model.backbone = built
            self.info["compute"] = "int4 (measured: the fastest that passes the gate)"
        else:
            _switch(self.model, self.info, choice, built_sessions[choice], measured=True, weights=self.weights)
        return record["contention"]

    def _agreement(self, choice: str, sessions: dict, built_sessions: dict) -> Optional[dict]:
        """The chosen backbone against the fp32 graph of the same weights, on these (the user's) weights
        (``fidelity.agreement_on``): hidden-state cosine and greedy-code agreement.  None where no fp32
        graph can be made."""
        against = (f"fp32 from {self.weights.label}, the model itself" if self.weights is not None else
                   f"fp32 of the same {self.info['source']} weights (what the arithmetic alone changes)")
        if choice == "fp32":
            return {"cosine": 1.0, "agreement": 1.0, "against": against, "positions": 0}
        reference = sessions.get("fp32")
        if reference is None:
            try:
                reference = self.build("fp32")[0]
            except (ModelFolderError, ModelNotAvailable, MemoryError):
                return None
        figures = agreement_on(self.model, reference, sessions["int4" if choice == "int4" else choice])
        return {**figures, "against": against}


def _build(model, precision: str, path: pathlib.Path, providers, options_factory, cache_dir, weights=None):
    """``(session, added_bytes, rss_grown_mb, cache_folder)`` of ``precision`` for the backbone at ``path``
    (``cache_folder`` None where nothing is kept in the cache), from ``weights`` where given."""
    before = resident_mb()
    graph = None
    if precision == "fp32" and weights is not None:
        session, added = checkpoint_backbone(path, weights, providers, options_factory())
    elif precision == "fp32":
        session, added = dequantized_backbone(path, providers, options_factory())
    else:
        graph, session = open_cached_backbone(path, precision, model, providers, options_factory, cache_dir, weights)
        added = sum(f.stat().st_size for f in graph.parent.glob(graph.name + "*"))
    return session, added, max(resident_mb() - before, 0.0), graph and graph.parent


def _switch(model, info: dict, choice: str, built, measured: bool = False, weights=None) -> dict:
    session, added, grown, cache_folder = built
    if cache_folder is not None:
        info["cache"] = str(cache_folder)
    model.backbone = session
    how = " (measured the fastest that passes the gate)" if measured else ""
    what = {"fp32": "fp32: the original weights" if weights is not None else "fp32: int4 weights dequantized at load",
            "int8-block": "int8-block: 8-bit MatMulNBits (block 32, int8 activations per row and block)",
            "int8": "int8: dense int8, one activation scale per tensor, outlier channels in fp32",
            "int8-row": "int8-row: dense int8, one activation scale per row, outlier channels in fp32",
            "int8-tensor": "int8-tensor: dense int8, one activation scale per tensor"}[choice]
    if weights is not None:
        origin, came_from = "checkpoint", f"{choice} from {weights.label}"
    else:
        origin, came_from = info["source"], f"{choice} from the {info['source']} folder"
        if info["source"] == "int4":
            came_from += ", never better than int4"
    info.update(choice=choice, compute=f"{what}, {came_from}{how}", added_mb=round(added / 2**20, 1),
                rss_added_mb=round(grown, 1), fidelity=fidelity_of(origin, choice), weights=came_from)
    return info


def add_backbone_argument(parser) -> None:
    """``--backbone`` and ``--backbone-weights`` for the CLI, the app and every subcommand
    (``backbone_settings`` reads them back)."""
    parser.add_argument("--backbone", choices=list(BACKBONE_MODES), default="auto",
                        help="the backbone's compute: auto (default: on an int4 folder, the fastest choice that "
                             "passes the fidelity gate on this machine, measured once and remembered; an fp32 folder "
                             "runs as built), int4 (as built), fp32 (int4 weights dequantized at load, ~1.7 GB more "
                             "at full size), int8-block, int8, int8-row or int8-tensor (8-bit, built once into the cache)")
    parser.add_argument("--backbone-weights", default=None, metavar="DIR|REPO",
                        help="build the backbone's fp32 and 8-bit choices from the original checkpoint's weights "
                             "(a folder with model.safetensors, the file, or a Hub repo: k2-fsa/OmniVoice, 2.4 GB) "
                             "instead of the model folder's: an int4 folder's int8-row is then far closer to the "
                             "model than int4; auto chooses among those built from the weights")


def backbone_settings(args, resolved=None) -> dict:
    """``backbone=`` and ``backbone_weights=`` of the engine from ``add_backbone_argument``'s flags; without
    ``--backbone-weights``, those the resolver brought (``--precision int8``: ``resolved.backbone_weights``)."""
    return {"backbone": getattr(args, "backbone", "auto"),
            "backbone_weights": getattr(args, "backbone_weights", None) or getattr(resolved, "backbone_weights", None)}
