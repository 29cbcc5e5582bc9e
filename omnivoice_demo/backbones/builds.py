"""The backbone in a precision its folder was not built in: fp32 made in memory (from the folder's int4 weights
or the original checkpoint's), and the 8-bit rebuilds (``precision.py``) built once into our cache under the
folder's content (``<cache>/backbones/<key>-<precision>/``), each file's sha256 recorded when it was built and
checked on every load.  ``choice.py`` decides which of them runs.
"""

from __future__ import annotations

import json
import os
import pathlib
import time
from typing import Sequence

from ..errors import ModelFolderError, ModelNotAvailable
from ..storage.cache import CACHE_ENV, folder_lock
from .calibration import outlier_channels
from .precision import BUILD_VERSION, rebuild

#: a cached build's record: what was built, and the sha256 of each of its files (checked on every load)
BUILD_RECORD = "build.json"


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
