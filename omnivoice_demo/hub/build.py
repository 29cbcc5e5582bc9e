"""The build step: an ONNX model folder built from the PyTorch checkpoint with ``convert``.

The one place the runtime uses the build tool.  ``convert`` imports ``omnivoice_demo``,
never the other way at import time: ``convert.pipeline`` is imported inside
``resolve_build``, after the convert extra (torch, omnivoice, onnxruntime-genai, olive)
was found installed; when it is not, ``BuildExtrasMissingError`` says in one line what
to install.  ``convert``'s own command lines print the same line.
"""

from __future__ import annotations

import fnmatch
import pathlib
import shutil
import uuid

from ..errors import ModelFolderError, ModelNotAvailable
from ..extras import extras_message, missing_build_modules
from .assemble import ready_manifest
from .cache import RepoCache, local_build_dir
from ..storage.cache import folder_lock
from .choose import PRECISION_PROFILES, is_checkpoint
from .download import HubRepo, HubSettings
from .progress import Reporter
from .resolved import ResolvedModel, finish

CHECKPOINT_IGNORE = ["*.md", "*.png", "*.jpg", "*.jpeg", "*.gif", "*.webp", ".gitattributes"]


class BuildExtrasMissingError(ModelNotAvailable):
    """The build route needs the convert extra (torch, omnivoice, onnxruntime-genai, olive)."""


def _require_build_extras() -> None:
    missing = missing_build_modules()
    if missing:
        raise BuildExtrasMissingError(extras_message(
            missing, "Building the ONNX model from the PyTorch checkpoint",
            "use the published ONNX folders instead (leave out --build)"))


def resolve_build(kind: str, value, revision: str | None, precision: str, cache: pathlib.Path,
                  offline: bool | None, reporter: Reporter, checksums: bool, force: bool) -> ResolvedModel:
    """A folder built from the checkpoint ``value`` (a local folder or a Hub repo), reused while it is intact."""
    _require_build_extras()  # before any download: the checkpoint is gigabytes
    profile = PRECISION_PROFILES[precision]
    if kind == "local":
        local = pathlib.Path(value).resolve()
        if not is_checkpoint(local):
            raise ModelFolderError(f"{local} is not a PyTorch checkpoint folder (config.json + weights).")
        final = local_build_dir(cache, local, profile)
        attrs = dict(source=str(local), precision=precision)
        label = str(local)

        def get_checkpoint() -> pathlib.Path:
            return local
    else:
        settings = HubSettings.from_environment(offline)
        repo = HubRepo(value, revision, precision, settings, RepoCache(cache, "built", value, settings.hf_cache),
                       reporter)
        commit, listing = repo.locate(f"the checkpoint {value}@{repo.rev_name}")
        final = repo.store.folder(commit, profile)
        attrs = dict(source=f"{value}@{repo.rev_name}", repo_id=value, revision=repo.rev_name, commit=commit,
                     precision=precision)
        label = f"the checkpoint {repo.label(commit)}"

        def get_checkpoint() -> pathlib.Path:
            if listing is None:
                return repo.cached_snapshot(commit, label, CHECKPOINT_IGNORE)
            paths = sorted(p for p in listing if not any(
                fnmatch.fnmatch(p.rsplit("/", 1)[-1], pattern) for pattern in CHECKPOINT_IGNORE))
            return repo.download(commit, paths, label, listing, force)

    with folder_lock(cache, final):
        if final.is_dir() and not force:
            try:
                ready_manifest(final, checksums)
            except ModelFolderError as exc:
                reporter.notice("verify", f"The built folder {final} is damaged ({exc}); building it again.")
            else:
                return finish(reporter, final, checksums=checksums, repaired=False, **attrs)
        checkpoint = get_checkpoint()
        _build(checkpoint, final, profile, label, reporter)
    return finish(reporter, final, repaired=False, **attrs)


def _build(checkpoint: pathlib.Path, final: pathlib.Path, profile: str, label: str, reporter: Reporter) -> None:
    try:
        from convert.pipeline import convert_checkpoint
    except ImportError as exc:  # an installation without the convert package or one of its imports
        raise BuildExtrasMissingError(extras_message(
            [exc.name or "convert"], "Building the ONNX model from the PyTorch checkpoint")) from exc

    tmp = final.with_name(final.name + f".building-{uuid.uuid4().hex[:8]}")
    reporter.emit("build", f"converting {label} to ONNX (profile {profile}); this takes a while")
    try:
        convert_checkpoint(checkpoint, tmp, profile=profile, include_codec=True, bidirectional=True,
                           progress=lambda message: reporter.emit("build", str(message)))
        ready_manifest(tmp, checksums=False)  # convert hashed every file into the manifest as it wrote it
        if final.exists():
            shutil.rmtree(final)
        tmp.rename(final)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
