"""The speech recogniser's folder: which files it holds, and its manifest.

The layout is that of the Hub's ONNX Whisper exports (``onnx-community/whisper-*``):
the ``transformers`` configuration and tokenizer files at the root and the graphs
under ``onnx/``, one set per precision told apart by a file-name suffix.  A folder
built by ``convert.whisper`` adds ``omnivoice_recognizer.json`` (every file with its
size and sha256); a folder from the Hub is checked against the Hub's own
checksums when it is downloaded (``asr.source``).
"""

from __future__ import annotations

import json
import pathlib
from typing import Any

from ..errors import ModelFolderError
from ..storage.manifest import describe_files, describe_files_names, verify_files

RECOGNIZER_MANIFEST = "omnivoice_recognizer.json"
RECOGNIZER_FORMAT = "omnivoice-recognizer"
RECOGNIZER_FORMAT_VERSION = 1

#: precision -> file-name suffix of its graphs, as in the onnx-community exports
PRECISION_SUFFIX = {"fp32": "", "int8": "_int8", "q8": "_quantized", "fp16": "_fp16"}
GRAPH_STEMS = {"encoder": "encoder_model", "decoder": "decoder_model", "decoder_with_past": "decoder_with_past_model",
               "decoder_merged": "decoder_model_merged"}
CONFIG_FILES = ("config.json", "generation_config.json", "preprocessor_config.json", "tokenizer.json",
                "tokenizer_config.json", "special_tokens_map.json", "added_tokens.json")
REQUIRED_CONFIG = ("config.json", "generation_config.json", "preprocessor_config.json", "tokenizer.json")


def graph_paths(precision: str, merged: bool = False) -> dict[str, str]:
    """Role -> relative path of the graphs of ``precision`` (split decoders, or the merged one)."""
    if precision not in PRECISION_SUFFIX:
        raise ModelFolderError(f"unknown recogniser precision {precision!r}; one of {', '.join(PRECISION_SUFFIX)}")
    suffix = PRECISION_SUFFIX[precision]
    roles = ("encoder", "decoder_merged") if merged else ("encoder", "decoder", "decoder_with_past")
    return {role: f"onnx/{GRAPH_STEMS[role]}{suffix}.onnx" for role in roles}


def needed_files(paths, precision: str) -> list[str] | None:
    """The files of one precision among ``paths`` (a repo's or folder's relative paths), the
    graphs' external data included; None when that precision's graphs are not all there."""
    paths = set(paths)
    for merged in (False, True):
        graphs = list(graph_paths(precision, merged).values())
        if all(g in paths for g in graphs):
            data = [f"{g}_data" for g in graphs if f"{g}_data" in paths]
            data += [f"{g}.data" for g in graphs if f"{g}.data" in paths]
            configs = [c for c in CONFIG_FILES if c in paths]
            return sorted({*graphs, *data, *configs})
    return None


def available_precisions(paths) -> list[str]:
    return [p for p in PRECISION_SUFFIX if needed_files(paths, p) is not None]


def write_recognizer_manifest(folder: str | pathlib.Path, **fields: Any) -> pathlib.Path:
    folder = pathlib.Path(folder)
    data = {"format": RECOGNIZER_FORMAT, "format_version": RECOGNIZER_FORMAT_VERSION, **fields,
            "files": describe_files(folder, exclude=(RECOGNIZER_MANIFEST,))}
    path = folder / RECOGNIZER_MANIFEST
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return path


def check_folder(folder: pathlib.Path, precision: str, checksums: bool = True) -> dict[str, str]:
    """Raise ``ModelFolderError`` unless ``folder`` holds a usable recogniser of ``precision``;
    returns its graphs by role.  Our manifest, when present, is checked file by file."""
    if not folder.is_dir():
        raise ModelFolderError(f"{folder} is not a folder; give the speech recogniser's folder "
                               "(build one with `python -m convert.whisper`).")
    manifest_path = folder / RECOGNIZER_MANIFEST
    if manifest_path.is_file():
        try:
            manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise ModelFolderError(f"{manifest_path} is not valid JSON ({exc}); build the folder again.") from exc
        if manifest.get("format") != RECOGNIZER_FORMAT:
            raise ModelFolderError(f"{manifest_path} is not a speech recogniser manifest.")
        # the TTS folders' list of required files does not apply: check the listed ones, then what is extra
        verify_files(folder, manifest, checksums=checksums, complete=False)
        unlisted = sorted(set(describe_files_names(folder)) - set(manifest["files"]) - {RECOGNIZER_MANIFEST})
        if unlisted:
            raise ModelFolderError(f"{unlisted[0]} in {folder} is not listed in {RECOGNIZER_MANIFEST}: the folder "
                                   "was changed after it was built; build it again.")
    for name in REQUIRED_CONFIG:
        if not (folder / name).is_file():
            raise ModelFolderError(f"{name} is missing from the speech recogniser folder {folder}; "
                                   "download or build it again.")
    paths = [p.relative_to(folder).as_posix() for p in folder.rglob("*.onnx")]
    for merged in (False, True):
        graphs = graph_paths(precision, merged)
        if all(rel in paths for rel in graphs.values()):
            return graphs
    have = available_precisions(paths)
    raise ModelFolderError(f"The speech recogniser folder {folder} has no {precision} graphs "
                           f"(it has: {', '.join(have) or 'none'}); choose one of those or build it again.")
