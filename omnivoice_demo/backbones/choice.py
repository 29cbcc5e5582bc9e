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
from typing import Sequence

import numpy as np

from .precision import PRECISIONS, graph_precision, outlier_channels, rebuild
from .dequantize import alternated_best, resident_mb
from ..errors import InvalidInput, ModelFolderError
from .fidelity import fidelity_of, passes_gate, published_table

EIGHT_BIT = ("int8-block", "int8", "int8-row", "int8-tensor")
BACKBONE_MODES = ("auto", "int4", "fp32") + EIGHT_BIT

#: ``auto`` keeps the int4 graph unless another choice is faster by more than this share: int4 holds
#: the least memory, and a near tie should not flip between loads (so auto is never >5% slower)
KEEP_MARGIN = 0.05

#: rows of the probe forward: between a 5 s auto-voice step's conditional row (~275) and a
#: paragraph's (~700)
PROBE_POSITIONS = 384

#: bump when the 8-bit graphs change, so cached builds of an older form are not reused
BUILD_VERSION = 4


def backbone_probe(model, sessions: dict, positions: int = PROBE_POSITIONS, repeats: int = 5) -> dict[str, float]:
    """Seconds of one backbone forward over ``positions`` rows with each of ``sessions`` (best of ``repeats``).

    The whole graph, not its MatMuls alone: timed one by one, the int4 and
    fp32 products came out even on an AVX-512 VNNI Xeon, while the whole
    forward ran 4-36% faster in fp32 (``benchmarks/profile_backbone.py``).
    """
    embeds = (0.02 * np.random.default_rng(0).standard_normal((1, positions, model.hidden_size))).astype(np.float32)

    def forward(session):
        model.backbone = session
        model.hidden_states(embeds, [positions])

    return alternated_best({label: (lambda s=session: forward(s)) for label, session in sessions.items()}, repeats)


def fastest(probe_s: dict[str, float], keep: str = "int4", margin: float = KEEP_MARGIN) -> str:
    """The fastest of ``probe_s``, unless ``keep`` is within ``margin`` of it."""
    best = min(probe_s, key=probe_s.get)
    if keep in probe_s and not probe_s[best] < (1.0 - margin) * probe_s[keep]:
        return keep
    return best


def choose_backbone(model, mode: str, path: pathlib.Path, providers: Sequence[str], options_factory,
                    threads: int | None = None, cache_dir: pathlib.Path | None = None) -> dict:
    """Set ``model.backbone`` for ``mode`` and say what was chosen.

    Returns ``{"mode", "choice", "compute", "added_mb", "probe_s", "remembered", "fidelity"}``:
    ``choice`` is what runs (``as built``, ``fp32``, or an 8-bit name), ``added_mb`` the
    size of the weights it added, ``fidelity`` its figures on the planted-outlier check
    (None where never measured), and with a rebuild ``rss_added_mb`` how much the
    process's resident memory grew while it was made.
    """
    if mode not in BACKBONE_MODES:
        raise InvalidInput(f"backbone must be one of {', '.join(BACKBONE_MODES)}, got {mode!r}.", param="backbone")
    source = graph_precision(path)
    info = {"mode": mode, "choice": "as built", "compute": "as built", "source": source, "added_mb": 0.0,
            "probe_s": {}, "remembered": False, "fidelity": fidelity_of(source, source)}
    if source in EIGHT_BIT:  # a folder built in 8 bits (convert's cpu_int8 profile) runs as built
        if mode not in ("auto", "int4", source):
            raise InvalidInput(f"This folder's backbone is built in {source} already; it runs as built "
                               "(backbone='auto'). For another precision, use a folder built in fp32 or int4.",
                               param="backbone")
        info["compute"] = f"as built ({source})"
        return info
    if mode == "int4" or (source == "fp32" and mode in ("fp32", "auto")):
        return info
    if mode != "auto":
        return _switch(model, info, mode, _build(model, mode, path, providers, options_factory, cache_dir))
    choices = ChoiceCache(cache_dir)
    key = choice_key(path, providers, threads)
    known = choices.get(key)
    if known is not None:
        info.update(probe_s=known["probe_s"], remembered=True)
        if known["choice"] == "int4":
            info.update(compute="int4 (measured before on this machine: the fastest that passes the gate)")
            return info
        return _switch(model, info, known["choice"],
                       _build(model, known["choice"], path, providers, options_factory, cache_dir), measured=True)
    built = model.backbone  # the folder's own graph, opened only now that it is timed
    candidates = [c for c in ("fp32",) + EIGHT_BIT if passes_gate(source, c)]
    built_sessions = {c: _build(model, c, path, providers, options_factory, cache_dir) for c in candidates}
    probe = backbone_probe(model, {"int4": built, **{c: s for c, (s, _, _) in built_sessions.items()}})
    info["probe_s"] = {label: round(seconds, 4) for label, seconds in probe.items()}
    choice = fastest(probe)
    choices.put(key, choice, info["probe_s"])
    if choice == "int4":
        model.backbone = built
        info["compute"] = "int4 (measured: the fastest that passes the gate)"
        return info
    return _switch(model, info, choice, built_sessions[choice], measured=True)


def _build(model, precision: str, path: pathlib.Path, providers, options_factory, cache_dir):
    """``(session, added_bytes, rss_grown_mb)`` of ``precision`` for the backbone at ``path``."""
    before = resident_mb()
    if precision == "fp32":
        session, added = dequantized_backbone(path, providers, options_factory())
    else:
        from ..runtime.sessions import open_session

        graph = cached_backbone(path, precision, model, providers, options_factory, cache_dir)
        session = open_session(graph, providers, options_factory())
        added = sum(f.stat().st_size for f in graph.parent.glob(graph.name + "*"))
    return session, added, max(resident_mb() - before, 0.0)


def _switch(model, info: dict, choice: str, built, measured: bool = False) -> dict:
    session, added, grown = built
    model.backbone = session
    how = " (measured the fastest that passes the gate)" if measured else ""
    what = {"fp32": "fp32: int4 weights dequantized at load",
            "int8-block": "int8-block: 8-bit MatMulNBits (block 32, int8 activations per row and block)",
            "int8": "int8: dense int8, one activation scale per tensor, outlier channels in fp32",
            "int8-row": "int8-row: dense int8, one activation scale per row, outlier channels in fp32",
            "int8-tensor": "int8-tensor: dense int8, one activation scale per tensor"}[choice]
    from_int4 = " from the int4 weights (never better than int4's weights)" if (
        info["source"] == "int4" and choice != "fp32") else ""
    info.update(choice=choice, compute=what + from_int4 + how, added_mb=round(added / 2**20, 1),
                rss_added_mb=round(grown, 1), fidelity=fidelity_of(info["source"], choice))
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
    return in_memory_session(model, weights, providers, options), sum(v.nbytes for v in weights.values())


def in_memory_session(model, constants: dict, providers: Sequence[str], options):
    """A session of ``model`` whose ``constants`` (name -> array) reach ONNX Runtime as ``OrtValue``s
    (``SessionOptions.add_external_initializers``: no 2 GB protobuf limit, no copy on disk)."""
    import onnx
    import onnxruntime as ort

    names, values = [], []
    for name, value in constants.items():
        placeholder = onnx.TensorProto(name=name, data_type=onnx.helper.np_dtype_to_tensor_dtype(value.dtype),
                                       dims=list(value.shape))
        placeholder.data_location = onnx.TensorProto.EXTERNAL
        placeholder.external_data.add(key="location", value="in-memory")
        model.graph.initializer.append(placeholder)
        names.append(name)
        values.append(ort.OrtValue.ortvalue_from_numpy(np.ascontiguousarray(value)))
    options.add_external_initializers(names, values)
    return ort.InferenceSession(model.SerializeToString(), sess_options=options, providers=list(providers))


# --- 8-bit graphs in our cache -----------------------------------------------------------------

def content_key(path: pathlib.Path) -> str:
    """The backbone's content: the manifest's sha256 of the graph and its weights (hashed here
    where the manifest has none), and the precision builder's version."""
    import hashlib

    from ..storage.manifest import MANIFEST_NAME, sha256_of

    try:
        listed = json.loads((path.parent / MANIFEST_NAME).read_text(encoding="utf-8")).get("files", {})
    except (OSError, ValueError, UnicodeDecodeError, AttributeError):
        listed = {}
    digest = hashlib.sha256(f"omnivoice-backbone v{BUILD_VERSION}".encode())
    for file in sorted(path.parent.glob(path.name + "*")):
        entry = listed.get(file.name) if isinstance(listed, dict) else None
        known = entry.get("sha256") if isinstance(entry, dict) and entry.get("size") == file.stat().st_size else None
        digest.update(f"{file.name}:{known or sha256_of(file)}".encode())
    return digest.hexdigest()[:32]


def cached_backbone(path: pathlib.Path, precision: str, model, providers, options_factory,
                    cache_dir: pathlib.Path | None = None) -> pathlib.Path:
    """The graph file of the backbone at ``path`` rebuilt in ``precision``, built once into our cache.

    Built in a staging folder and renamed into place (a killed build leaves
    nothing half-written), under an inter-process lock so two starts build once.
    """
    from ..storage.cache import default_cache_dir, folder_lock, staging_dir

    cache = pathlib.Path(cache_dir or default_cache_dir())
    target = cache / "backbones" / f"{content_key(path)}-{precision}"
    graph = target / path.name
    if graph.is_file():
        return graph
    target.parent.mkdir(parents=True, exist_ok=True)
    with folder_lock(cache, target):
        if graph.is_file():
            return graph
        with staging_dir(cache) as stage:
            stage.mkdir(parents=True)
            write_rebuilt(path, precision, model, providers, options_factory, stage)
            os.replace(stage, target)
    return graph


def write_rebuilt(path: pathlib.Path, precision: str, model, providers, options_factory,
                  destination: pathlib.Path) -> pathlib.Path:
    """Write the backbone at ``path`` rebuilt in ``precision`` into the folder ``destination`` (graph,
    ``.data`` beside it, and ``build.json``: what was built, the outlier channels kept apart, how long)."""
    import onnx
    from onnx import numpy_helper

    started = time.perf_counter()
    outliers = outlier_channels(path, model, providers, options_factory()) if precision in ("int8", "int8-row") else {}
    onnx_model = onnx.load(str(path))
    constants = rebuild(onnx_model, precision, outliers)
    onnx_model.graph.initializer.extend(numpy_helper.from_array(value, name) for name, value in constants.items())
    del constants
    onnx.save_model(onnx_model, str(destination / path.name), save_as_external_data=True,
                    all_tensors_to_one_file=True, location=path.name + ".data", size_threshold=1024)
    (destination / "build.json").write_text(json.dumps({
        "precision": precision, "source": path.parent.name, "build_version": BUILD_VERSION,
        "outlier_channels": {name: len(c) for name, c in outliers.items()},
        "seconds": round(time.perf_counter() - started, 1)}, indent=1), encoding="utf-8")
    return destination / path.name


# --- the remembered choice -----------------------------------------------------------------------

def choice_key(path: pathlib.Path, providers: Sequence[str], threads: int | None) -> str:
    """What ``auto``'s outcome depends on: the CPU, onnxruntime, the provider, threads, the session settings
    (spinning or not changes the timings), the graph, the builder's version and the fidelity table (a new
    table can admit other choices)."""
    import hashlib

    import onnxruntime as ort

    from ..runtime.sessions import SESSION_CONFIG
    from ..runtime.machine import cpu_name

    cpu, flags = cpu_name(), ""
    try:
        for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                flags = hashlib.sha256(line.encode()).hexdigest()[:12]
                break
    except OSError:
        pass
    sizes = "+".join(str(p.stat().st_size) for p in sorted(path.parent.glob(path.name + "*")))
    gate = hashlib.sha256(json.dumps(published_table(), sort_keys=True).encode()).hexdigest()[:8]
    session = ",".join(f"{key}={value}" for key, value in sorted(SESSION_CONFIG.items()))
    return (f"{cpu} flags {flags} | onnxruntime {ort.__version__} | {providers[0]} | "
            f"threads {threads or os.cpu_count()} | {session} | {path.name} {sizes} | choices v{BUILD_VERSION} "
            f"gate {gate}")


class ChoiceCache:
    """``backbone-choice.json`` in our cache folder: probe outcomes by ``choice_key``.

    A file that cannot be read or written only costs a new probe.
    """

    def __init__(self, folder: pathlib.Path | None = None):
        from ..storage.cache import default_cache_dir

        self.path = pathlib.Path(folder or default_cache_dir()) / "backbone-choice.json"

    def _read(self) -> dict:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError, UnicodeDecodeError):
            return {}
        return data if isinstance(data, dict) else {}

    def get(self, key: str) -> dict | None:
        entry = self._read().get(key)
        valid = isinstance(entry, dict) and entry.get("choice") in ("int4",) + PRECISIONS and isinstance(
            entry.get("probe_s"), dict)
        return entry if valid else None

    def put(self, key: str, choice: str, probe_s: dict) -> None:
        from ..storage.atomic import atomic_write_json

        data = self._read()
        data[key] = {"choice": choice, "probe_s": probe_s, "measured": time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                                                                     time.gmtime())}
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_json(self.path, data)
        except OSError:
            pass


def add_backbone_argument(parser) -> None:
    """``--backbone`` for the CLI and the app."""
    parser.add_argument("--backbone", choices=list(BACKBONE_MODES), default="auto",
                        help="the backbone's compute: auto (default: on an int4 folder, the fastest choice that "
                             "passes the fidelity gate on this machine, measured once and remembered; an fp32 folder "
                             "runs as built), int4 (as built), fp32 (int4 weights dequantized at load, ~1.7 GB more "
                             "at full size), int8-block, int8, int8-row or int8-tensor (8-bit, built once into the cache)")
