"""A model folder opened for the engine: its files checked, and a backbone that fails its check refused.

``open_folder`` checks the folder and its manifest (``verify="sha256"`` re-hashes every file, ``"size"`` only
checks sizes, ``"none"`` neither) and that it was built for the provider asked for; ``refuse_backbone`` is the
error of a backbone whose two-forward probe (``OmniVoiceOnnx.attention_verdict``) did not find the model's
bidirectional attention, naming the real cause, so no folder can silently run the wrong (causal) model.
"""

from __future__ import annotations

import pathlib
from typing import NoReturn, Union

from ..errors import InvalidInput, ModelFolderError
from ..storage.manifest import load_manifest, verify_files


def open_folder(model_dir: Union[str, pathlib.Path], verify: str, provider: str) -> tuple[pathlib.Path, dict]:
    """The folder and its manifest, its files checked as ``verify`` says; a CUDA folder refused on another
    provider."""
    folder = pathlib.Path(model_dir)
    if not folder.is_dir():
        raise ModelFolderError(f"{folder} is not a folder; give the path of an OmniVoice ONNX model folder.")
    manifest = load_manifest(folder)
    if verify not in ("sha256", "size", "none"):
        raise InvalidInput("verify must be 'sha256', 'size' or 'none'")
    if verify != "none":
        verify_files(folder, manifest, checksums=verify == "sha256")
    if manifest.get("execution_provider") == "cuda" and provider != "cuda":
        raise ModelFolderError(
            f"{folder} was built for the CUDA provider (profile {manifest.get('profile', 'unknown')}): its backbone "
            "uses attention features onnxruntime implements only on CUDA. Use provider='cuda' on a machine "
            "with a GPU, or a CPU folder (precision int4, fp16 or fp32)."
        )
    return folder, manifest


def refuse_backbone(folder: pathlib.Path, choice: dict, verdict: str) -> NoReturn:
    """The backbone failed its check at load (``attention_verdict``): a ``ModelFolderError`` naming the real
    cause.  A backbone rebuilt in our cache is removed (never kept for the next run to fail on again)."""
    cache = choice.get("cache")
    if cache:
        import shutil

        shutil.rmtree(cache, ignore_errors=True)
    where = f"The backbone rebuilt in our cache ({cache}, now removed)" if cache else f"The backbone in {folder}"
    if verdict == "not finite":
        raise ModelFolderError(
            f"{where} gives NaN or infinite outputs: its weights hold NaN or infinities (its graphs attend in "
            "both directions; the weights are at fault). Give weights that are finite: the original checkpoint "
            "(python -m convert refuses a poisoned one, naming the tensor), or download the folder again.")
    if cache:
        raise ModelFolderError(
            f"{where} does not attend in both directions, though its files passed their check; the next load "
            "builds it again.")
    raise ModelFolderError(
        f"The backbone in {folder} attends causally, so it computes a different model than "
        "OmniVoice (the published ONNX export has this bug). Repair it into a new folder with "
        "omnivoice_demo.backbones.repair.make_bidirectional(folder, new_folder), or let resolve_model() do it.")
