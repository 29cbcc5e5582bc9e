"""Where the speech recogniser's folder comes from: a local folder, or the Hub via the cache.

``resolve_recognizer(spec, precision)``:

* a local folder (built with ``python -m convert.whisper``, or any folder in the
  ``onnx-community/whisper-*`` layout) is checked and used as it is;
* a Hub repo id (default ``DEFAULT_RECOGNIZER_REPO``): the repo's file list is read,
  only the files of ``precision`` (configuration, tokenizer, the three graphs or the
  merged decoder) are downloaded into the Hugging Face cache with progress events,
  each checked against the Hub's size and sha256; the checked snapshot folder is
  used as it is.  Offline (or with the Hub unreachable) the last checked snapshot is
  used; with nothing cached the error says in one line what to download.

It shares the TTS folders' Hub plumbing (``omnivoice_demo.hub``: settings, our cache's
refs and listings under ``<cache>/asr/``, downloads with progress events, checksums).
"""

from __future__ import annotations

import json
import os
import pathlib
from typing import Optional

from ..errors import ModelFolderError, ModelNotAvailable
from ..hub.cache import RepoCache, hf_cached_revision
from ..storage.cache import default_cache_dir
from ..hub.download import HubRepo, HubSettings, check_against_listing
from ..hub.progress import ProgressCallback, Reporter
from ..hub.resolved import ResolvedModel
from .folder import PRECISION_SUFFIX, available_precisions, check_folder, needed_files

DEFAULT_RECOGNIZER_REPO = "onnx-community/whisper-base"
DEFAULT_RECOGNIZER_PRECISION = "int8"
RECOGNIZER_ENV = "OMNIVOICE_ASR_MODEL"


#: what to do instead of a recogniser where it transcribes a reference (cloning: the default wording)
REFERENCE_INSTEAD = "type the transcript of the reference"
#: how a recogniser folder is given to every front end (the default wording)
FOLDER_FLAGS = f"${RECOGNIZER_ENV}=DIR for the app and serve, --asr-model DIR for synth and eval"


def _how_to_get(repo_id: str, precision: str, instead: Optional[str] = REFERENCE_INSTEAD,
                folder: str = FOLDER_FLAGS) -> str:
    return ((f"{instead}, or " if instead else "")
            + f"run once online to download the speech recogniser {repo_id} ({precision}) into the cache, "
            + f"or give a recogniser folder built with 'python -m convert.whisper' ({folder}).")


class RecognizerMissing(ModelNotAvailable):
    """No speech recogniser can be had (offline with nothing cached, an incomplete cache).  Its message says what
    to do where a reference is transcribed (``REFERENCE_INSTEAD``); ``worded`` says it for another use, in that
    use's words: what needs the recogniser, what to do instead, how a folder is given there (issue 58: eval and
    books were told to type "the transcript of the reference", which they do not have)."""

    def __init__(self, problem: str, repo_id: str, precision: str, how_to: Optional[str] = None,
                 needs: Optional[str] = None, instead: Optional[str] = REFERENCE_INSTEAD, folder: str = FOLDER_FLAGS):
        self.problem, self.repo_id, self.precision = problem, repo_id, precision
        how = how_to or _how_to_get(repo_id, precision, instead, folder)
        super().__init__(f"{needs + '. ' if needs else ''}{problem}: {how}")

    def worded(self, needs: Optional[str] = None, instead: Optional[str] = None,
               folder: str = FOLDER_FLAGS) -> "RecognizerMissing":
        """The same error for a use: ``needs`` ("WER/CER need a speech recogniser"), ``instead`` (what to do
        without one there: "give --asr-model none to skip them"; None: nothing), ``folder`` (how a recogniser
        folder is given there).  Raise it ``from`` this one."""
        return RecognizerMissing(self.problem, self.repo_id, self.precision, needs=needs, instead=instead,
                                 folder=folder)


def _from_hub(repo_id: str, revision: Optional[str], precision: str, settings: HubSettings, cache: pathlib.Path,
              reporter: Reporter, how_to: Optional[str] = None) -> ResolvedModel:
    store = RepoCache(cache, "asr", repo_id, settings.hf_cache)
    hub = HubRepo(repo_id, revision, precision, settings, store, reporter)
    rev = revision or "main"

    def never(why: str) -> RecognizerMissing:
        return RecognizerMissing(f"No speech recogniser is cached and {why}", repo_id, precision, how_to)

    if settings.offline and store.cached_commit(rev) is None:
        raise never("this program is offline")
    try:
        commit, listing = hub.locate(f"the speech recogniser {repo_id}")
    except ModelNotAvailable as exc:
        if hub.offline and store.cached_commit(rev) is None:
            raise never(f"the Hub at {settings.endpoint} cannot be reached") from exc
        raise
    marker = store.folder(commit, f"checked-{precision}.json")
    if hub.offline:  # what was checked when it was downloaded, by size now
        if not marker.is_file():
            raise never("the Hub cannot be used now")
        cached = hf_cached_revision(settings.hf_cache, repo_id, commit)
        snapshot = pathlib.Path(cached.snapshot_path) if cached is not None else None
        for rel, size in json.loads(marker.read_text(encoding="utf-8")).items():
            path = snapshot / rel if snapshot is not None else None
            if path is None or not path.is_file() or path.stat().st_size != size:
                raise RecognizerMissing(f"The cached speech recogniser {repo_id} is incomplete ({rel})", repo_id,
                                        precision, how_to)
        if snapshot is None:
            raise never("the Hub cannot be used now")
        check_folder(snapshot, precision, checksums=False)
        verified = "size"
    else:
        files = needed_files(listing, precision)
        if files is None:
            raise ModelNotAvailable(f"{repo_id} has no {precision} speech recogniser graphs (it has: "
                                    f"{', '.join(available_precisions(listing)) or 'none'}).")
        label = f"speech recogniser {repo_id}@{commit[:8]} ({precision})"
        snapshot = hub.download(commit, files, label, listing)
        reporter.emit("verify", f"checking {len(files)} files of the {label} against the Hub's checksums")
        for rel in files:
            problem = check_against_listing(snapshot / rel, listing[rel], "the Hugging Face cache")
            if problem:
                raise ModelFolderError(f"{problem}; delete {snapshot / rel} and run again to download it again.")
        check_folder(snapshot, precision, checksums=False)
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.write_text(json.dumps({rel: listing[rel].size for rel in files}), encoding="utf-8")
        verified = "sha256"
    reporter.emit("ready", f"speech recogniser ready: {repo_id}@{commit[:8]} ({precision})")
    return ResolvedModel(path=snapshot, source=repo_id, precision=precision, repo_id=repo_id, revision=revision,
                         commit=commit, notices=list(reporter.notices), verified=verified)


def resolve_recognizer(spec: Optional[str | os.PathLike] = None, precision: Optional[str] = None,
                       revision: Optional[str] = None, offline: Optional[bool] = None,
                       progress: Optional[ProgressCallback] = None,
                       cache: Optional[str | os.PathLike] = None, how_to: Optional[str] = None) -> ResolvedModel:
    """A ready recogniser folder for ``spec`` (a folder, a Hub repo id, or None for
    ``$OMNIVOICE_ASR_MODEL`` or ``DEFAULT_RECOGNIZER_REPO``).  ``how_to``: what to do when none can be had, in
    the caller's own flags (default: every front end's)."""
    precision = precision or DEFAULT_RECOGNIZER_PRECISION
    if precision not in PRECISION_SUFFIX:
        raise ModelFolderError(f"recogniser precision must be one of {', '.join(PRECISION_SUFFIX)}, got {precision!r}")
    spec = spec or os.environ.get(RECOGNIZER_ENV) or DEFAULT_RECOGNIZER_REPO
    path = pathlib.Path(os.path.expanduser(str(spec)))
    if path.is_dir():
        check_folder(path, precision, checksums=True)
        return ResolvedModel(path=path, source=str(spec), precision=precision)
    if str(spec).count("/") != 1 or str(spec).startswith((".", "/", "~")):
        raise ModelNotAvailable(f"The speech recogniser {spec} is neither a folder nor a Hub repo id (owner/name).")
    return _from_hub(str(spec), revision, precision, HubSettings.from_environment(offline),
                     pathlib.Path(cache) if cache else default_cache_dir(), Reporter(progress), how_to)
