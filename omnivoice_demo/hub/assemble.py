"""The repair step: check the files of a model folder, and write a ready folder of ours from them,
with the backbone made bidirectional when it was exported causal (the published export)."""

from __future__ import annotations

import json
import os
import pathlib
import shutil

from ..errors import ModelFolderError
from ..storage.manifest import (BACKBONE_GRAPHS, CODEC_GRAPHS, FORMAT_NAME, MANIFEST_NAME, complete_file_list, content_digest,
                                load_manifest, verify_files, write_manifest)
from ..storage.atomic import atomic_write_json
from .cache import read_json
from .choose import BACKBONE
from .progress import Reporter

REPAIR_WHY = (
    "its llm_decoder.onnx attends causally (onnxruntime-genai's GroupQueryAttention default), "
    "but OmniVoice's backbone attends in both directions, so as published it computes a different "
    "model (about 18% of tokens agree with the reference)"
)


def _load_header(path: pathlib.Path, rel: str):
    import onnx

    try:
        return onnx.load(str(path), load_external_data=False)
    except Exception as exc:  # noqa: BLE001 - DecodeError and friends: the file is not a graph
        raise ModelFolderError(f"{rel} is not a readable ONNX graph ({type(exc).__name__}: {exc}); "
                               "the file is corrupt.") from exc


def check_graph_files(folder: pathlib.Path) -> None:
    """For folders without a manifest of ours: every graph exists, parses, and its external
    weights exist and are long enough."""
    import onnx

    for rel in [*BACKBONE_GRAPHS.values(), *CODEC_GRAPHS.values()]:
        path = folder / rel
        if not path.is_file():
            raise ModelFolderError(f"{rel} is missing from {folder}.")
        model = _load_header(path, rel)
        for tensor in model.graph.initializer:
            if tensor.data_location != onnx.TensorProto.EXTERNAL:
                continue
            info = {entry.key: entry.value for entry in tensor.external_data}
            data = path.parent / info.get("location", "")
            need = int(info.get("offset", 0) or 0) + int(info.get("length", 0) or 0)
            data_rel = (pathlib.PurePosixPath(rel).parent / info.get("location", "")).as_posix()
            if not data.is_file():
                raise ModelFolderError(f"{data_rel} (weights of {rel}) is missing from {folder}.")
            if data.stat().st_size < need:
                raise ModelFolderError(f"{data_rel} (weights of {rel}) is truncated: "
                                       f"{data.stat().st_size} bytes, needs at least {need}.")


def backbone_is_causal(folder: pathlib.Path) -> bool:
    from ..backbones.repair import is_causal_graph

    return is_causal_graph(_load_header(folder / BACKBONE, BACKBONE))


def is_ready_as_is(folder: pathlib.Path) -> bool:
    """A folder of ours with a bidirectional backbone and the codec inside: usable where it is
    (after ``verify_files`` and ``backbone_is_causal`` agree)."""
    raw = read_json(folder / MANIFEST_NAME) or {}
    return (raw.get("format") == FORMAT_NAME and raw.get("backbone_attention") == "bidirectional"
            and all((folder / rel).is_file() for rel in CODEC_GRAPHS.values()))


def ready_manifest(folder: pathlib.Path, checksums: bool) -> dict:
    """Load and verify a ready folder; raise ModelFolderError when it is not one."""
    manifest = load_manifest(folder)
    if manifest.get("backbone_attention") != "bidirectional":
        raise ModelFolderError(f"{folder} has backbone_attention {manifest.get('backbone_attention')!r}")
    verify_files(folder, manifest, checksums=checksums)
    return manifest


def was_repaired(manifest: dict) -> bool:
    """Whether we repaired it on assembly (a publisher's own repair does not count)."""
    return bool((manifest.get("origin") or {}).get("repaired"))


def repair_notice(label: str, final: pathlib.Path, fresh: bool) -> str:
    if fresh:
        return (f"Repaired the backbone of {label}: {REPAIR_WHY}. A copy with causal=0 on every attention "
                f"node was written to {final} and will be reused; the source was not changed.")
    return (f"Using the repaired copy of {label} in {final}: the published backbone is causal and "
            "OmniVoice attends in both directions (repaired once, reused).")


def stage_links(files: dict[pathlib.Path, str], staging: pathlib.Path) -> None:
    """Lay out ``files`` (source path -> relative path) as symlinks (copies where links fail)."""
    for source, rel in files.items():
        dest = staging / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        real = source.resolve()
        try:
            os.symlink(real, dest)
        except OSError:
            shutil.copy2(real, dest)


def assemble(staging: pathlib.Path, final: pathlib.Path, origin: dict, reporter: Reporter, label: str) -> bool:
    """Check the staged files and write ``final``; return True when the backbone was repaired.

    Every file of ``final`` is hashed here (checked against our manifest, or written into a
    new one), so the folder needs no second checksum pass when it is opened.
    """
    from ..backbones.repair import make_bidirectional

    raw = read_json(staging / MANIFEST_NAME)
    ours = bool(raw) and raw.get("format") == FORMAT_NAME
    reporter.emit("verify", f"checking the files of {label}")
    if ours:  # files beyond its manifest (a shared codec folder) were checked against the Hub's listing
        verify_files(staging, load_manifest(staging), checksums=True, complete=False)
    else:
        check_graph_files(staging)
    causal = backbone_is_causal(staging)
    if final.exists():
        shutil.rmtree(final)
    final.parent.mkdir(parents=True, exist_ok=True)
    if causal:
        reporter.emit("repair", f"making the backbone of {label} bidirectional")
        make_bidirectional(staging, final)
    else:
        reporter.emit("assemble", f"copying {label} into {final}")
        tmp = final.with_name(final.name + ".partial")
        if tmp.exists():
            shutil.rmtree(tmp)
        shutil.copytree(staging, tmp, symlinks=False)
        if not ours:
            if (tmp / MANIFEST_NAME).is_file():
                (tmp / MANIFEST_NAME).rename(tmp / "source_manifest.json")
            write_manifest(tmp, {"backbone_attention": "bidirectional"})
        tmp.rename(final)
    manifest = json.loads((final / MANIFEST_NAME).read_text(encoding="utf-8"))
    manifest["files"] = complete_file_list(final, manifest["files"])
    manifest["content_sha256"] = content_digest(manifest)   # the model's content, kept for the render key
    manifest["origin"] = {**origin, "repaired": causal}
    atomic_write_json(final / MANIFEST_NAME, manifest)
    return causal
