"""Which folder of a repo (or of a local tree) is the model for a precision, and which files it needs.

Works on a listing: the repo-relative paths of its files ("/"-separated), from the
Hub's tree or from a folder on disk.  The published layout has the fp16 backbone at
the root, ``int4/`` and ``cuda/`` beside it and one shared ``audio_tokenizer/``.
"""

from __future__ import annotations

import pathlib
import re
from typing import Callable, Iterable

from ..errors import InvalidInput, ModelFolderError, ModelNotAvailable
from ..storage.manifest import BACKBONE_GRAPHS, CODEC_DIR, CODEC_GRAPHS, FORMAT_NAME, MANIFEST_NAME

PRECISIONS = ("int4", "int8", "fp16", "fp32", "cuda")
DEFAULT_PRECISION = "int4"
#: precisions that are another one's folder plus the original weights for the backbone (``hub.weights``):
#: int8 is the int4 folder with its backbone's 8-bit choices built from k2-fsa/OmniVoice's weights
WITH_ORIGINAL_WEIGHTS = {"int8": "int4"}
#: precision asked for -> convert profile (``convert.pipeline.PROFILES``) and our manifest's "profile"
PRECISION_PROFILES = {"int4": "cpu", "int8": "cpu", "fp16": "cpu_fp16", "fp32": "cpu_fp32", "cuda": "gpu"}
#: folder names that mean a precision (the published layout: int4/, cuda/, fp16 at the root)
FOLDER_ALIASES = {
    "int4": ("int4", "cpu", "cpu_int4", "q4", "int4_cpu"),
    "fp16": ("fp16", "cpu_fp16", "fp16_cpu"),
    "fp32": ("fp32", "cpu_fp32", "fp32_cpu"),
    "cuda": ("cuda", "gpu", "cuda_fp16", "fp16_cuda"),
}
BACKBONE = BACKBONE_GRAPHS["backbone"]
SKIP_SUFFIXES = (".png", ".jpg", ".jpeg", ".gif", ".webp")  # not copied into a model folder


def join(folder: str, name: str) -> str:
    return f"{folder}/{name}" if folder else name


def parent(path: str) -> str:
    return path.rsplit("/", 1)[0] if "/" in path else ""


def check_precision(precision: str) -> None:
    if precision not in PRECISIONS:
        raise InvalidInput(f"unknown precision {precision!r}; choose one of {', '.join(PRECISIONS)}",
                           param="precision")


def is_checkpoint(folder: pathlib.Path) -> bool:
    """A PyTorch checkpoint folder (config.json and weights), not an ONNX model folder."""
    return (folder / "config.json").is_file() and (any(folder.glob("*.safetensors")) or any(folder.glob("*.bin")))


def backbone_folders(paths: Iterable[str]) -> list[str]:
    """Folders ("" = root) that hold a manifest and a backbone graph."""
    paths = set(paths)
    return sorted({parent(p) for p in paths
                   if p.rsplit("/", 1)[-1] == MANIFEST_NAME and join(parent(p), BACKBONE) in paths})


def precision_of_name(folder: str) -> str | None:
    name = folder.rsplit("/", 1)[-1].lower()
    for precision, aliases in FOLDER_ALIASES.items():
        if name in aliases:
            return precision
    return None


def precision_of_manifest(manifest: dict | None) -> str | None:
    """The precision a manifest declares: ours by its profile; another format by common keys."""
    if not isinstance(manifest, dict):
        return None
    if manifest.get("format") == FORMAT_NAME:
        for precision, profile in PRECISION_PROFILES.items():
            if manifest.get("profile") == profile:
                return precision
    words: list[str] = []
    keys = ("precision", "dtype", "quantization", "variant", "profile", "device", "execution_provider",
            "provider", "ep", "type")

    def collect(value, depth=0):
        if isinstance(value, str):
            words.append(value.lower())
        elif isinstance(value, dict) and depth < 2:
            for key, item in value.items():
                if str(key).lower() in keys:
                    collect(item, depth + 1)
        elif isinstance(value, list) and depth < 2:
            for item in value:
                collect(item, depth + 1)

    for key, value in manifest.items():
        if str(key).lower() in keys:
            collect(value)
    text = " ".join(words)
    if re.search(r"cuda|gpu", text):
        return "cuda"
    if re.search(r"int4|q4|4[-_ ]?bit|nbits", text):
        return "int4"
    if re.search(r"fp16|float16|half", text):
        return "fp16"
    if re.search(r"fp32|float32|float\b", text):
        return "fp32"
    return None


def choose_backbone_folder(paths: Iterable[str], precision: str, read_manifest: Callable[[str], dict | None],
                           source: str, missing: type[Exception] = ModelNotAvailable) -> str:
    """Pick the folder for ``precision``: by folder name, else by what its manifest says,
    else the root for fp16 (the published layout), else the only folder there is.

    No folder for the precision raises ``missing``: ``ModelNotAvailable`` for a repo (the
    Hub has no such model), ``ModelFolderError`` for a folder the user pointed at.
    """
    check_precision(precision)
    candidates = backbone_folders(paths)
    if not candidates:
        raise ModelFolderError(
            f"{source} holds no OmniVoice ONNX model: no folder with both {MANIFEST_NAME} and {BACKBONE}."
        )
    known = {c: precision_of_name(c) for c in candidates}
    named = [c for c in candidates if known[c] == precision]
    if named:
        return min(named, key=lambda c: (c.count("/"), c))
    for c in candidates:
        if known[c] is None:
            known[c] = precision_of_manifest(read_manifest(c))
    by_manifest = [c for c in candidates if known[c] == precision]
    if by_manifest:
        return min(by_manifest, key=lambda c: (c.count("/"), c))
    unknown = [c for c in candidates if known[c] is None]
    if precision == "fp16" and "" in unknown:
        return ""
    if len(candidates) == 1 and unknown:
        return candidates[0]
    available = ", ".join(f"{known[c] or '?'} ({c + '/' if c else 'root'})" for c in candidates)
    raise missing(
        f"{source} has no model folder for precision {precision}; it has: {available}. "
        f"Choose one of those with --precision."
    )


def codec_base(paths: Iterable[str], folder: str) -> str:
    """The folder whose ``audio_tokenizer/`` serves ``folder``: itself, else the nearest parent."""
    paths = set(paths)
    base = folder
    while True:
        if all(join(base, rel) in paths for rel in CODEC_GRAPHS.values()):
            return base
        if not base:
            break
        base = parent(base)
    raise ModelFolderError(
        f"no {CODEC_DIR}/ with the four codec graphs ({', '.join(CODEC_GRAPHS.values())}) "
        f"in {folder or 'the root'} or above it."
    )


def needed_files(paths: Iterable[str], folder: str) -> dict[str, str]:
    """Repo path -> path in the ready folder: the files of ``folder`` itself (not its
    subfolders) and its codec folder."""
    paths = sorted(set(paths))
    base = codec_base(paths, folder)
    codec_prefix = join(base, CODEC_DIR) + "/"
    out = {}
    for path in paths:
        name = path.rsplit("/", 1)[-1]
        if parent(path) == folder and not name.startswith(".") and not name.lower().endswith(SKIP_SUFFIXES):
            out[path] = name
        elif path.startswith(codec_prefix):
            out[path] = CODEC_DIR + "/" + path[len(codec_prefix):]
    return out
