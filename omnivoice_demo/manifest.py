"""`omnivoice_manifest.json`: what an ONNX model folder holds and how to check it.

A model folder (ours, or a copy of the published export after repair) carries
one manifest at its root.  It records the model constants the engine needs,
the precision profile, which attention the backbone computes, and every file
with its size and sha256, all as paths relative to the folder, so the folder can
be moved or uploaded as it is.
"""

from __future__ import annotations

import hashlib
import json
import pathlib
from typing import Any

from .errors import ModelFolderError

MANIFEST_NAME = "omnivoice_manifest.json"
FORMAT_NAME = "omnivoice-onnx"
FORMAT_VERSION = 1

#: Graph roles -> file names of the published layout.
BACKBONE_GRAPHS = {
    "audio_embeddings": "audio_embeddings_encoder.onnx",
    "backbone": "llm_decoder.onnx",
    "audio_heads": "audio_heads_decoder.onnx",
}
CODEC_DIR = "audio_tokenizer"
CODEC_GRAPHS = {
    "acoustic_encoder": f"{CODEC_DIR}/acoustic_encoder.onnx",
    "semantic_encoder": f"{CODEC_DIR}/semantic_encoder.onnx",
    "quantizer_encoder": f"{CODEC_DIR}/quantizer_encoder.onnx",
    "higgs_decoder": f"{CODEC_DIR}/higgs_decoder.onnx",
}


def sha256_of(path: pathlib.Path, block: int = 1 << 20) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(block):
            digest.update(chunk)
    return digest.hexdigest()


def describe_files(folder: pathlib.Path, exclude: tuple[str, ...] = (MANIFEST_NAME,)) -> dict[str, dict]:
    """Size and sha256 of every file under ``folder``, keyed by relative POSIX path."""
    files = {}
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        rel = path.relative_to(folder).as_posix()
        if rel in exclude or "/." in f"/{rel}":
            continue
        files[rel] = {"size": path.stat().st_size, "sha256": sha256_of(path)}
    return files


def write_manifest(folder: str | pathlib.Path, manifest: dict[str, Any]) -> pathlib.Path:
    """Write ``manifest`` with a fresh file list (sizes and checksums) into ``folder``."""
    folder = pathlib.Path(folder)
    data = {"format": FORMAT_NAME, "format_version": FORMAT_VERSION, **manifest}
    data["files"] = describe_files(folder)
    path = folder / MANIFEST_NAME
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def load_manifest(folder: str | pathlib.Path) -> dict[str, Any]:
    folder = pathlib.Path(folder)
    path = folder / MANIFEST_NAME
    if not path.is_file():
        raise ModelFolderError(
            f"{folder} has no {MANIFEST_NAME}: it is not an OmniVoice ONNX model folder. "
            "Build one with `python -m convert --model CKPT --output DIR`, or let "
            "resolve_model() download one."
        )
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ModelFolderError(f"{path} is not valid JSON ({exc}); download or build the folder again.") from exc
    if data.get("format") != FORMAT_NAME:
        raise ModelFolderError(
            f"{path} is not an OmniVoice ONNX Studio manifest (format {data.get('format')!r}). "
            "A folder of the published export must be repaired first: "
            "omnivoice_demo.repair.make_bidirectional(folder, new_folder)."
        )
    if data.get("format_version", 0) > FORMAT_VERSION:
        raise ModelFolderError(
            f"{path} has format version {data['format_version']}, newer than this program "
            f"understands ({FORMAT_VERSION}); update OmniVoice ONNX Studio."
        )
    return data


def verify_files(folder: str | pathlib.Path, manifest: dict[str, Any], checksums: bool = True) -> None:
    """Raise ``ModelFolderError`` naming the first file that is missing, truncated or changed."""
    folder = pathlib.Path(folder)
    for rel, expected in manifest.get("files", {}).items():
        path = folder / rel
        if not path.is_file():
            raise ModelFolderError(
                f"{rel} is missing from {folder}; download or build the model folder again."
            )
        size = path.stat().st_size
        if size != expected["size"]:
            raise ModelFolderError(
                f"{rel} in {folder} has {size} bytes, the manifest says {expected['size']}: "
                "the file is incomplete or changed; download or build the model folder again."
            )
        if checksums and sha256_of(path) != expected["sha256"]:
            raise ModelFolderError(
                f"{rel} in {folder} fails its sha256 checksum: the file is corrupt or changed; "
                "download or build the model folder again."
            )
