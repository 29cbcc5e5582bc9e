"""``resolve_model``: what the user asked for -> a ready model folder.

* a local folder: used as it is when it is already a ready folder of ours; otherwise
  (the published layout, a causal backbone, the codec elsewhere) a ready copy is
  assembled in our cache;
* a Hub repo of ONNX folders (default ``onnx-community/OmniVoice-Onnx``): the folder for
  the precision is found from the repo's file list, only that folder and the codec are
  downloaded, checked against the Hub's sizes and checksums (and our manifest, when it is
  ours), and assembled in our cache, repaired there when the backbone is causal; the
  Hugging Face cache is never written to by us;
* with ``build=True`` a PyTorch checkpoint (see ``build.py``).
"""

from __future__ import annotations

import dataclasses
import os
import pathlib
import re
from typing import Any

from ..errors import ModelFolderError, ModelNotAvailable
from ..storage.manifest import CODEC_DIR, CODEC_GRAPHS, MANIFEST_NAME, load_manifest, verify_files
from ..storage.specs import check_hub_spec, check_revision
from .assemble import (assemble, backbone_is_causal, is_ready_as_is, ready_manifest, repair_notice, stage_links,
                       was_repaired)
from .cache import RepoCache, RepoFile, local_copy_dir, read_json
from ..storage.atomic import atomic_write_json
from ..storage.cache import default_cache_dir, folder_lock, staging_dir
from .choose import (DEFAULT_PRECISION, WITH_ORIGINAL_WEIGHTS, backbone_folders, check_precision,
                     choose_backbone_folder, codec_base,
                     is_checkpoint, join, needed_files, precision_of_manifest)
from .download import HubRepo, HubSettings, check_against_listing, offline_help
from .progress import ProgressCallback, Reporter
from .resolved import ResolvedModel, finish

DEFAULT_REPO = "onnx-community/OmniVoice-Onnx"
DEFAULT_CHECKPOINT_REPO = "k2-fsa/OmniVoice"
_REPO_RE = re.compile(r"[A-Za-z0-9][\w.\-]*/[\w.\-]+")


def parse_spec(spec: str | os.PathLike | None, build: bool = False) -> tuple[str, Any, str | None]:
    """("local", Path, None) or ("hub", repo_id, revision).  ``owner/name@revision`` is accepted."""
    if spec is None or str(spec) == "":
        return "hub", DEFAULT_CHECKPOINT_REPO if build else DEFAULT_REPO, None
    text = os.fspath(spec)
    path = pathlib.Path(text).expanduser()
    if path.exists():
        if not path.is_dir():
            raise ModelFolderError(f"{path} is a file; --model takes a model folder or a Hub repo id.")
        return "local", path, None
    repo, _, revision = text.partition("@")
    if _REPO_RE.fullmatch(repo) and not text.startswith((".", "/", "~")):
        return ("hub", *check_hub_spec(repo, revision or None))
    raise ModelNotAvailable(f"{text!r} is neither an existing folder nor a Hub repo id (owner/name[@revision]).")


def resolve_model(spec: str | os.PathLike | None = None, precision: str | None = None,
                  cache_dir: str | os.PathLike | None = None, offline: bool | None = None, build: bool = False,
                  progress: ProgressCallback | None = None, *, revision: str | None = None,
                  checksums: bool = True, force_download: bool = False) -> ResolvedModel:
    """Return a ready model folder for ``spec`` at ``precision``.

    ``spec``: a local folder, a Hub repo id of ONNX folders (default
    ``onnx-community/OmniVoice-Onnx``; ``owner/name@revision`` pins a revision), or
    with ``build=True`` a PyTorch checkpoint (Hub repo id, default ``k2-fsa/OmniVoice``,
    or a local folder).  ``precision``: int4 | int8 | fp16 | fp32 | cuda; int8 is the int4 folder
    plus the original weights (``k2-fsa/OmniVoice``'s ``model.safetensors``, 2.4 GB, kept in the
    Hugging Face cache) for the backbone: ``backbone_weights`` of the result, for the engine's
    ``backbone_weights=``.  ``offline``: None
    reads HF_HUB_OFFLINE now.  ``progress`` receives ``ProgressEvent``s.  ``checksums``:
    verify sha256 of a cached ready folder each time (sizes only when False).

    Raises ``ModelNotAvailable`` (offline and not cached, Hub unreachable, no such repo or
    precision; ``ModelDownloadError``: a download failed, run again to continue;
    ``BuildExtrasMissingError``: the build route's extra is not installed) and
    ``ModelFolderError`` (a file is corrupt or missing; the message names it).
    """
    kind, value, spec_revision = parse_spec(spec, build)
    if precision is None:
        # a model folder given as it is keeps its own precision; otherwise the default
        precision = (precision_of_manifest(read_json(value / MANIFEST_NAME)) if kind == "local" and not build
                     else None) or DEFAULT_PRECISION
    check_precision(precision)
    if precision in WITH_ORIGINAL_WEIGHTS:
        from .weights import DEFAULT_WEIGHTS_REPO, backbone_weights

        folder = resolve_model(spec, WITH_ORIGINAL_WEIGHTS[precision], cache_dir, offline, build, progress,
                               revision=revision, checksums=checksums, force_download=force_download)
        weights = backbone_weights(value if build else DEFAULT_WEIGHTS_REPO, offline=offline,  # a build's own
                                   progress=progress, cache_dir=cache_dir)
        return dataclasses.replace(folder, precision=precision, backbone_weights=weights)
    cache = pathlib.Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    reporter = Reporter(progress)
    revision = check_revision(revision or spec_revision)
    if build:
        from .build import resolve_build

        return resolve_build(kind, value, revision, precision, cache, offline, reporter, checksums, force_download)
    if kind == "local":
        return _resolve_local(value, precision, cache, reporter, checksums)
    settings = HubSettings.from_environment(offline)
    repo = HubRepo(value, revision, precision, settings, RepoCache(cache, "hub", value, settings.hf_cache), reporter)
    return _resolve_hub(repo, cache, checksums, force_download)


# --- a Hub repo of ONNX folders --------------------------------------------------------


def _resolve_hub(repo: HubRepo, cache: pathlib.Path, checksums: bool, force: bool) -> ResolvedModel:
    reporter, precision = repo.reporter, repo.precision
    commit, listing = repo.locate(f"{repo.repo_id}@{repo.rev_name} (precision {precision})")
    final = repo.store.folder(commit, precision)
    attrs = dict(source=f"{repo.repo_id}@{repo.rev_name}", repo_id=repo.repo_id, revision=repo.rev_name,
                 commit=commit, precision=precision)
    with folder_lock(cache, final):
        if not force and final.is_dir():
            try:
                manifest = ready_manifest(final, checksums)
            except ModelFolderError as exc:
                reporter.notice("verify", f"The cached model folder {final} is damaged ({exc}); assembling it again.")
            else:
                folder = (manifest.get("origin") or {}).get("folder")
                repaired = was_repaired(manifest)
                if repaired:
                    reporter.notice("repair", repair_notice(repo.label(commit, folder), final, False))
                return finish(reporter, final, checksums=checksums, subfolder=folder, repaired=repaired, **attrs)
        if listing is None:
            raise ModelNotAvailable(offline_help(repo.repo_id, precision,
                                                 f"Offline, and the file list of {repo.label(commit)} is not cached."))
        return _download_and_assemble(repo, cache, commit, listing, final, attrs, force)


def _download_and_assemble(repo: HubRepo, cache: pathlib.Path, commit: str, listing: dict[str, RepoFile],
                           final: pathlib.Path, attrs: dict, force: bool) -> ResolvedModel:
    reporter = repo.reporter

    def read_manifest(folder: str) -> dict | None:
        rel = join(folder, MANIFEST_NAME)
        return read_json(repo.download(commit, [rel], repo.label(commit, folder), listing) / rel)

    folder = choose_backbone_folder(listing, repo.precision, read_manifest, repo.label(commit))
    label = repo.label(commit, folder)
    files = needed_files(listing, folder)
    snapshot = repo.download(commit, sorted(files), label, listing, force=force)

    # the Hub's sizes and checksums, then (in assemble) our manifest or the graph headers
    reporter.emit("verify", f"checking {len(files)} downloaded files of {label} against the Hub's checksums")
    for rel in sorted(files):
        problem = check_against_listing(snapshot / rel, listing[rel], "the Hugging Face cache")
        if problem and not repo.offline:
            reporter.notice("download", f"{problem}; downloading it again.")
            snapshot = repo.download(commit, [rel], label, listing, force=True)
            problem = check_against_listing(snapshot / rel, listing[rel], "the Hugging Face cache")
        if problem:
            raise ModelFolderError(
                f"{problem}. The download of {label} is damaged: run again with --force-download "
                f"(force_download=True), or delete {snapshot / rel} and run again.")

    with staging_dir(cache) as staging:
        stage_links({snapshot / rel: target for rel, target in files.items()}, staging)
        origin = {"repo": repo.repo_id, "revision": repo.rev_name, "commit": commit, "folder": folder,
                  "precision": repo.precision, "endpoint": repo.settings.endpoint}
        try:
            repaired = assemble(staging, final, origin, reporter, label)
        except ModelFolderError as exc:
            raise ModelFolderError(f"{label}: {exc}") from exc
    repo.store.prune(commit, repo.precision)
    if repaired:
        reporter.notice("repair", repair_notice(label, final, True))
    return finish(reporter, final, subfolder=folder, repaired=repaired, **attrs)


# --- a local folder --------------------------------------------------------------------


def local_paths(folder: pathlib.Path) -> list[str]:
    """The files under ``folder`` as a listing (hidden folders left out)."""
    out = []
    for path in folder.rglob("*"):
        rel = path.relative_to(folder).as_posix()
        if path.is_file() and not any(part.startswith(".") for part in rel.split("/")[:-1]):
            out.append(rel)
    return sorted(out)


def _resolve_local(folder: pathlib.Path, precision: str, cache: pathlib.Path, reporter: Reporter,
                   checksums: bool) -> ResolvedModel:
    folder = folder.resolve()
    paths = local_paths(folder)
    if not backbone_folders(paths) and is_checkpoint(folder):
        raise ModelFolderError(
            f"{folder} is a PyTorch checkpoint, not an ONNX model folder: convert it with "
            f"`python -m convert --model {folder} --output DIR`, or pass build=True (--build).")
    reporter.emit("resolve", f"looking for the {precision} model in {folder}")
    sub = choose_backbone_folder(paths, precision, lambda d: read_json(folder / d / MANIFEST_NAME), str(folder),
                                 missing=ModelFolderError)
    model_dir = folder / sub if sub else folder
    files = needed_files(paths, sub)
    attrs = dict(source=str(folder), precision=precision, subfolder=sub)

    # a ready folder of ours is used where it is
    if is_ready_as_is(model_dir):
        reporter.emit("verify", f"checking {model_dir}")
        verify_files(model_dir, load_manifest(model_dir), checksums=checksums)
        if not backbone_is_causal(model_dir):
            return finish(reporter, model_dir, checksums=checksums, repaired=False, **attrs)

    # otherwise a ready copy in our cache, rebuilt when the source files change
    final = local_copy_dir(cache, model_dir, precision)
    fingerprint = {rel: [(folder / rel).stat().st_size, (folder / rel).stat().st_mtime_ns] for rel in files}
    stamp = final.with_name(final.name + ".source.json")
    codec_inside = all((model_dir / rel).is_file() for rel in CODEC_GRAPHS.values())
    label = str(model_dir) + ("" if codec_inside else f" with {join(codec_base(paths, sub), CODEC_DIR)}/")
    with folder_lock(cache, final):
        if final.is_dir() and read_json(stamp) == {"source": str(folder), "files": fingerprint}:
            try:
                manifest = ready_manifest(final, checksums)
            except ModelFolderError as exc:
                reporter.notice("verify", f"The cached copy {final} is damaged ({exc}); assembling it again.")
            else:
                repaired = was_repaired(manifest)
                if repaired:
                    reporter.notice("repair", repair_notice(label, final, False))
                return finish(reporter, final, checksums=checksums, repaired=repaired, **attrs)
        with staging_dir(cache) as staging:
            stage_links({folder / rel: target for rel, target in files.items()}, staging)
            origin = {"local": str(folder), "folder": sub, "precision": precision}
            repaired = assemble(staging, final, origin, reporter, label)
        atomic_write_json(stamp, {"source": str(folder), "files": fingerprint})
    if repaired:
        reporter.notice("repair", repair_notice(label, final, True))
    return finish(reporter, final, repaired=repaired, **attrs)
