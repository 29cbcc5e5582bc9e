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

from ..errors import ModelFolderError
from .digests import file_sha256

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


def describe_files(folder: pathlib.Path, exclude: tuple[str, ...] = (MANIFEST_NAME,)) -> dict[str, dict]:
    """Size and sha256 of every file under ``folder``, keyed by relative POSIX path."""
    files = {}
    for rel in describe_files_names(folder):
        if rel not in exclude:
            files[rel] = {"size": (folder / rel).stat().st_size, "sha256": file_sha256(folder / rel)}
    return files


def write_manifest(folder: str | pathlib.Path, manifest: dict[str, Any]) -> pathlib.Path:
    """Write ``manifest`` with a fresh file list (sizes and checksums) into ``folder``."""
    folder = pathlib.Path(folder)
    data = {"format": FORMAT_NAME, "format_version": FORMAT_VERSION, **manifest}
    data["files"] = describe_files(folder)
    data["content_sha256"] = content_digest(data)
    path = folder / MANIFEST_NAME
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


#: the files of a folder that decide what its model computes, besides its graphs (and their external data)
CONTENT_FILES = ("tokenizer.json", "genai_config.json")


def content_digest(manifest: dict[str, Any]) -> str:
    """The model's content: a sha256 over the sha256 the manifest lists for each graph the engine loads (with
    its external data), the tokenizer and genai's config, and the model's constants.  Names and paths of the
    folder play no part, so a copy elsewhere has the same content and other weights at the same path do not.

    ``write_manifest`` keeps it in the manifest (``content_sha256``) when a folder is built, repaired or
    assembled from a download; for a folder written before, ``model_content`` derives it from the listed
    checksums, so no file is read again."""
    files = manifest.get("files") or {}
    graphs = tuple(BACKBONE_GRAPHS.values()) + tuple(CODEC_GRAPHS.values())
    chosen = sorted(rel for rel in files if rel in CONTENT_FILES or rel.startswith(graphs))
    payload = {"model": manifest.get("model", {}), "files": {rel: files[rel]["sha256"] for rel in chosen}}
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


def model_content(manifest: dict[str, Any]) -> str:
    """``content_sha256`` of a loaded manifest, or derived from its file list where an older folder has none."""
    kept = manifest.get("content_sha256")
    return kept if isinstance(kept, str) and len(kept) == 64 else content_digest(manifest)


def load_manifest(folder: str | pathlib.Path) -> dict[str, Any]:
    folder = pathlib.Path(folder)
    path = folder / MANIFEST_NAME
    if not path.is_file():
        raise ModelFolderError(
            f"{folder} has no {MANIFEST_NAME}: it is not an OmniVoice ONNX model folder. "
            "Build one with `python -m convert --model CKPT --output DIR`, or let "
            "resolve_model() download one."
        )
    data = read_manifest_json(path)
    if data.get("format") != FORMAT_NAME:
        raise ModelFolderError(
            f"{path} is not an OmniVoice ONNX Studio manifest (format {data.get('format')!r}). "
            "A folder of the published export must be repaired first: "
            "omnivoice_demo.backbones.repair.make_bidirectional(folder, new_folder)."
        )
    if data.get("format_version", 0) > FORMAT_VERSION:
        raise ModelFolderError(
            f"{path} has format version {data['format_version']}, newer than this program "
            f"understands ({FORMAT_VERSION}); update OmniVoice ONNX Studio."
        )
    check_file_list(path, data.get("files"))
    return data


def read_manifest_json(path: pathlib.Path) -> dict[str, Any] | None:
    """The JSON object in a manifest file, ``None`` when there is no file; one that does not parse is an error.

    A manifest that cannot be read is never taken for the absence of one (which
    would make the folder look foreign and its checksums be rewritten).
    """
    path = pathlib.Path(path)
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ModelFolderError(f"{path} is not valid JSON ({exc}); download or build the folder again.") from None
    if not isinstance(data, dict):
        raise ModelFolderError(f"{path} holds a JSON {type(data).__name__}, not an object; "
                               "download or build the folder again.")
    return data


def check_file_list(path: pathlib.Path, files: Any) -> None:
    """Every entry of a manifest's ``files``: a relative path inside the folder, an int size and a sha256."""
    if not isinstance(files, dict) or not files:
        raise ModelFolderError(f"{path} lists no files; download or build the model folder again.")
    for rel, entry in files.items():
        pure = pathlib.PurePosixPath(rel) if isinstance(rel, str) else None
        if (pure is None or not rel or pure.is_absolute() or ".." in pure.parts or "\\" in rel or ":" in rel
                or rel != pure.as_posix() or rel == MANIFEST_NAME):
            raise ModelFolderError(f"{path} lists {rel!r}, which is not a path inside the model folder.")
        if (not isinstance(entry, dict) or isinstance(entry.get("size"), bool) or not isinstance(entry.get("size"), int)
                or not isinstance(entry.get("sha256"), str) or len(entry["sha256"]) != 64):
            raise ModelFolderError(f"{path} has a malformed entry for {rel!r} (it needs a size and a sha256).")


def loaded_files(folder: pathlib.Path) -> set[str]:
    """The files of ``folder`` the engine and ONNX Runtime read: the graphs, their weights, the configs.

    Everything but the manifest and hidden files (``describe_files``' choice),
    so a file added after the manifest was written is noticed too.
    """
    required = set(BACKBONE_GRAPHS.values()) | {"genai_config.json", "tokenizer.json"}
    if (folder / CODEC_DIR).is_dir():
        required |= set(CODEC_GRAPHS.values())
    return required | set(describe_files_names(folder))


def describe_files_names(folder: pathlib.Path) -> list[str]:
    return [path.relative_to(folder).as_posix() for path in sorted(folder.rglob("*"))
            if path.is_file() and _listed(path.relative_to(folder).as_posix())]


def _listed(rel: str) -> bool:
    return rel != MANIFEST_NAME and "/." not in f"/{rel}"


def complete_file_list(folder: pathlib.Path, files: dict[str, dict]) -> dict[str, dict]:
    """``files`` with an entry (size, sha256) added for every loaded file it lacks.

    For assembling a folder whose extra files were checked another way (a
    shared codec folder of a Hub repo, verified against the Hub's checksums).
    """
    folder = pathlib.Path(folder)
    missing = sorted(loaded_files(folder) - set(files))
    added = {rel: {"size": (folder / rel).stat().st_size, "sha256": file_sha256(folder / rel)}
             for rel in missing if (folder / rel).is_file()}
    return {**files, **added}


def verify_files(folder: str | pathlib.Path, manifest: dict[str, Any], checksums: bool = True,
                 complete: bool = True) -> None:
    """Raise ``ModelFolderError`` naming the first file that is unlisted, missing, truncated or changed.

    The manifest must list every file the engine loads (``loaded_files``), with
    paths inside the folder only; a folder with an unlisted file fails as one
    with a changed file does.  ``complete=False`` checks the listed files only
    (while assembling a folder whose other files were verified another way).
    """
    folder = pathlib.Path(folder)
    files = manifest.get("files")
    check_file_list(folder / MANIFEST_NAME, files)
    unlisted = sorted(loaded_files(folder) - set(files)) if complete else []
    if unlisted:
        raise ModelFolderError(f"{unlisted[0]} in {folder} is not listed in {MANIFEST_NAME}: the folder was changed "
                               "after it was built; download or build the model folder again.")
    for rel, expected in files.items():
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
        if checksums and file_sha256(path) != expected["sha256"]:
            raise ModelFolderError(
                f"{rel} in {folder} fails its sha256 checksum: the file is corrupt or changed; "
                "download or build the model folder again."
            )
