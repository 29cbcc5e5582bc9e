"""Which backbone a folder runs: as built, fp32, or an 8-bit rebuild; ``auto`` measures and remembers.

``backbone=`` choices (``BACKBONE_MODES``):

* ``int4``: the folder's graph as built (the name of the published folders' precision).
* ``fp32``: an int4 folder's 4-bit weights dequantized at load into fp32 MatMuls
  (``dequantize.py``); an fp32 folder as built.
* ``int8-block``, ``int8``, ``int8-tensor``: the 8-bit rebuilds of ``backbone_precision.py``,
  made once from the folder's weights and kept in our cache under the folder's
  content (``<cache>/backbones/<key>/``), so later starts load them at once.
* ``auto`` (the default): on an int4 folder, every choice that passes the fidelity gate
  (``fidelity.py``: on the planted-outlier check, at least the int4 graph's hidden-state
  cosine and greedy-code agreement) is timed on whole forwards, and the fastest is kept
  unless int4 is within ``KEEP_MARGIN`` (int4 holds the least memory).  The outcome is
  remembered per machine (``backbone-choice.json``), so the probe runs once.  A folder
  built in fp32 is the exact model, and ``auto`` keeps it: an 8-bit choice there is asked
  for by name.
"""

from __future__ import annotations

import json
import os
import pathlib
import time
from typing import Optional, Sequence

from .calibration import outlier_channels
from .precision import BUILD_VERSION, graph_precision, rebuild
from .dequantize import resident_mb
from ..errors import InvalidInput, ModelFolderError, ModelNotAvailable
from ..storage.cache import CACHE_ENV, folder_lock
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


#: a cached build's record: what was built, and the sha256 of each of its files (checked on every load)
BUILD_RECORD = "build.json"


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


# --- fp32 from int4, in memory -----------------------------------------------------------------

def dequantized_backbone(path: pathlib.Path, providers: Sequence[str], options):
    """An ``InferenceSession`` of the backbone at ``path`` with its 4-bit MatMuls dequantized to fp32.

    Returns ``(session, added_bytes)``: the fp32 weights' bytes (what this costs in memory).
    """
    import onnx

    try:
        model = onnx.load(str(path))
    except Exception as exc:  # onnx raises its own types
        raise ModelFolderError(f"{path.name} in {path.parent} cannot be read ({str(exc)[:200]}).") from exc
    weights = rebuild(model, "fp32")
    from ..runtime.sessions import in_memory_session

    return in_memory_session(model, weights, providers, options), sum(v.nbytes for v in weights.values())


def checkpoint_backbone(path: pathlib.Path, weights, providers: Sequence[str], options):
    """``(session, added_bytes)``: the backbone at ``path`` in fp32 on the original ``weights`` (the exact model)."""
    from ..runtime.sessions import in_memory_session
    from .checkpoint import fp32_graph

    model, source = fp32_graph(path, weights)
    constants = {name: load() for name, load in source.items()}
    return in_memory_session(model, constants, providers, options), sum(v.nbytes for v in constants.values())


# --- 8-bit graphs in our cache -----------------------------------------------------------------

def build_key(path: pathlib.Path, weights=None) -> str:
    """Where our cache keeps the builds of the backbone at ``path``: its content, and with the original
    ``weights`` their file's sha256 too."""
    import hashlib

    key = content_key(path)
    return key if weights is None else hashlib.sha256(f"{key} weights {weights.digest}".encode()).hexdigest()[:32]


def content_key(path: pathlib.Path) -> str:
    """The backbone's content: the manifest's sha256 of the graph and its weights (hashed here
    where the manifest has none), and the precision builder's version."""
    import hashlib

    from ..storage.digests import file_sha256
    from ..storage.manifest import MANIFEST_NAME

    try:
        listed = json.loads((path.parent / MANIFEST_NAME).read_text(encoding="utf-8")).get("files", {})
    except (OSError, ValueError, UnicodeDecodeError, AttributeError):
        listed = {}
    digest = hashlib.sha256(f"omnivoice-backbone v{BUILD_VERSION}".encode())
    for file in sorted(path.parent.glob(path.name + "*")):
        entry = listed.get(file.name) if isinstance(listed, dict) else None
        known = entry.get("sha256") if isinstance(entry, dict) and entry.get("size") == file.stat().st_size else None
        digest.update(f"{file.name}:{known or file_sha256(file)}".encode())
    return digest.hexdigest()[:32]


def cached_backbone(path: pathlib.Path, precision: str, model, providers, options_factory,
                    cache_dir: pathlib.Path | None = None, stale: str | None = None, weights=None) -> pathlib.Path:
    """The graph file of the backbone at ``path`` rebuilt in ``precision``, built once into our cache.

    Built in a staging folder and renamed into place (a killed build leaves
    nothing half-written), under an inter-process lock so two starts build once.
    ``stale``: the build record (``build.json``'s text) of a build that failed its check; while the
    record is still that one, the build is moved away and made again (another start may have
    replaced it already).
    """
    from ..storage.atomic import storage_problem
    from ..storage.cache import default_cache_dir, staging_dir

    cache = pathlib.Path(cache_dir or default_cache_dir())
    target = cache / "backbones" / f"{build_key(path, weights)}-{precision}"
    graph = target / path.name
    if graph.is_file() and stale is None:
        return graph
    target.parent.mkdir(parents=True, exist_ok=True)
    with folder_lock(cache, target):
        if target.exists() and (not graph.is_file() or build_record(target) == stale):
            with staging_dir(cache) as aside:  # moved away whole, then removed: never half a build in place
                os.replace(target, aside)
        if graph.is_file():
            return graph
        try:
            with staging_dir(cache) as stage:
                stage.mkdir(parents=True)
                write_rebuilt(path, precision, model, providers, options_factory, stage, weights)
                os.replace(stage, target)
        except OSError as exc:  # the stage is gone with what was written of it: nothing half-built is kept
            problem = storage_problem(exc)
            if problem is None:
                raise
            raise ModelNotAvailable(f"The {precision} backbone could not be built: our cache ({cache}) {problem}. "
                                    "Free some space (the 8-bit backbone takes about a quarter of the fp32 "
                                    f"weights' size: 450 MB at full size), or set {CACHE_ENV} to a folder with room, "
                                    "then start again.") from None
    return graph


def build_record(folder: pathlib.Path) -> str:
    """The text of a cached build's ``build.json`` ("" when it cannot be read)."""
    try:
        return (folder / BUILD_RECORD).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return ""


def recorded_digests(record: str) -> dict:
    """File name -> sha256 of a build's files, as ``write_rebuilt`` recorded them ({} when unreadable)."""
    try:
        files = json.loads(record).get("files")
    except (ValueError, AttributeError):
        return {}
    return {k: v for k, v in files.items() if isinstance(v, str)} if isinstance(files, dict) else {}


def open_cached_backbone(path: pathlib.Path, precision: str, model, providers, options_factory,
                         cache_dir: pathlib.Path | None = None, weights=None):
    """``(graph, session)`` of ``cached_backbone``, its files checked against the sha256 recorded when it was
    built (hashed as they are read into memory, ``runtime.sessions.with_weights_in_memory``).

    A build that fails the check or does not load (changed, truncated, replaced, or kept by an older
    version without a record) is built again; one that fails again is refused with a message naming the
    cache, never the model folder (whose files were checked on their own)."""
    from ..runtime.sessions import open_session

    stale = None
    for _ in range(2):
        graph = cached_backbone(path, precision, model, providers, options_factory, cache_dir, stale, weights)
        stale = build_record(graph.parent)
        try:
            return graph, open_session(graph, providers, options_factory(), digests=recorded_digests(stale))
        except ModelFolderError as exc:
            problem = str(exc).split(";")[0]
    import shutil

    shutil.rmtree(graph.parent, ignore_errors=True)   # never kept for the next run to fail on again
    raise ModelFolderError(f"The {precision} backbone built in our cache ({graph.parent}) fails its check even after "
                           f"being built again ({problem}); it was removed. If this repeats, set {CACHE_ENV} to "
                           "another cache folder (this one may be on a failing disk).")


def write_rebuilt(path: pathlib.Path, precision: str, model, providers, options_factory,
                  destination: pathlib.Path, weights=None) -> pathlib.Path:
    """Write the backbone at ``path`` rebuilt in ``precision`` into the folder ``destination`` (graph,
    ``.data`` beside it, and ``build.json``: what was built, from which weights, the outlier channels
    kept apart, how long, and each file's sha256).  With the original ``weights`` the graph is first
    made the fp32 graph of those weights (``checkpoint.fp32_graph``), calibrated one layer at a time and
    rebuilt from it, each product's weights read, quantized and written out in turn: the fp32 weights
    are never all in memory, nor the 8-bit ones.  The files are those ``onnx.save_model`` writes
    (external data in one file, tensors of 1 KB and more), byte for byte."""
    import onnx

    from ..storage.digests import file_sha256

    started = time.perf_counter()
    onnx_model, source, embeds = None, None, None
    if weights is not None:
        from .checkpoint import checkpoint_embedder, fp32_graph
        from .calibration import calibration_embeds

        onnx_model, source = fp32_graph(path, weights)
        if precision in ("int8", "int8-row"):  # the embedding tables are gone before the layers come
            embeds = calibration_embeds(checkpoint_embedder(path.parent, weights, providers, options_factory()))
    outliers = (outlier_channels(path, model, providers, options_factory, onnx_model, source, embeds)
                if precision in ("int8", "int8-row") else {})
    onnx_model = onnx_model if onnx_model is not None else onnx.load(str(path))
    rebuild(onnx_model, precision, outliers, source, store=external_writer(destination, path.name + ".data"))
    onnx.save_model(onnx_model, str(destination / path.name))
    files = {f.name: file_sha256(f) for f in sorted(destination.glob(path.name + "*"))}
    (destination / BUILD_RECORD).write_text(json.dumps({
        "precision": precision, "source": path.parent.name, "build_version": BUILD_VERSION,
        "weights": weights.label if weights is not None else path.parent.name,
        "outlier_channels": {name: len(c) for name, c in outliers.items()},
        "seconds": round(time.perf_counter() - started, 1), "files": files}, indent=1), encoding="utf-8")
    return destination / path.name


def external_writer(folder: pathlib.Path, location: str, size_threshold: int = 1024):
    """``rebuild``'s ``store``: each initializer of ``size_threshold`` bytes or more appended to ``folder /
    location`` and its data dropped from memory, as ``onnx.save_model(..., save_as_external_data=True,
    all_tensors_to_one_file=True, location=location, size_threshold=size_threshold)`` does it (its own
    functions, in the same order), one tensor at a time."""
    import sys

    from onnx import external_data_helper

    def store(tensor) -> None:
        if tensor.HasField("raw_data") and sys.getsizeof(tensor.raw_data) >= size_threshold:
            external_data_helper.set_external_data(tensor, location)
            external_data_helper.save_external_data(tensor, str(folder))
            tensor.ClearField("raw_data")
    return store


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
