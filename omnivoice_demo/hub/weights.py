"""The original checkpoint's weights for ``backbone_weights=``: a local file or folder, or a Hub repo.

Only ``model.safetensors`` is fetched from a repo (through huggingface_hub, with its progress, resume
and offline rules; the file stays in the Hugging Face cache, the backbone built from it in ours).
"""

from __future__ import annotations

import os
import pathlib
import re

from ..backbones.checkpoint import WEIGHTS_FILE, CheckpointWeights, weights_digest
from ..errors import ModelFolderError, ModelNotAvailable, excerpt
from .cache import RepoCache
from .download import HubRepo, HubSettings
from .progress import ProgressCallback, Reporter

#: the original checkpoint, where ``--backbone-weights`` names no other
DEFAULT_WEIGHTS_REPO = "k2-fsa/OmniVoice"

#: the longest folder, file or repo id accepted (a path's own limit on Linux)
MAX_SOURCE_CHARS = 4096

_REPO_ID = re.compile(r"^[A-Za-z0-9][\w.-]{0,95}/[\w.-]{1,96}(@[\w./-]{1,128})?$")


def backbone_weights(source, offline: bool | None = None, progress: ProgressCallback | None = None,
                     cache_dir=None) -> CheckpointWeights:
    """The weights named by ``source``: a folder holding ``model.safetensors``, that file, or a Hub
    repo id[@revision] (``k2-fsa/OmniVoice``).  The file's header is checked here
    (``checkpoint.read_header``, by safetensors); its tensors when the backbone is built."""
    from ..storage.cache import default_cache_dir

    if isinstance(source, CheckpointWeights):
        return source
    cache = pathlib.Path(cache_dir or default_cache_dir())
    text = str(source).strip()
    if not text or len(text) > MAX_SOURCE_CHARS or "\x00" in text:
        raise ModelFolderError(f"The backbone weights {excerpt(text)} are neither a folder, a file nor a Hub repo id "
                               f"(such as {DEFAULT_WEIGHTS_REPO}; at most {MAX_SOURCE_CHARS} characters).")
    path = pathlib.Path(os.path.expanduser(text))
    try:
        is_dir, is_file = path.is_dir(), path.is_file()
    except OSError:  # a name longer than a path may be: not a folder nor a file
        is_dir = is_file = False
    if is_dir:
        path = path / WEIGHTS_FILE
        if not path.is_file():
            raise ModelFolderError(f"{path.parent} has no {WEIGHTS_FILE}: give the folder of the original "
                                   f"OmniVoice checkpoint, or a Hub repo such as {DEFAULT_WEIGHTS_REPO}.")
        return CheckpointWeights(path, str(path.parent), weights_digest(path, cache))
    if is_file:
        return CheckpointWeights(path, str(path), weights_digest(path, cache))
    if not _REPO_ID.match(text):
        raise ModelFolderError(f"The backbone weights {text[:200]!r} are neither a folder, a file nor a Hub repo id "
                               f"(such as {DEFAULT_WEIGHTS_REPO}).")
    repo_id, _, revision = text.partition("@")
    settings = HubSettings.from_environment(offline)
    repo = HubRepo(repo_id, revision or None, "int8", settings, RepoCache(cache, "weights", repo_id, settings.hf_cache),
                   Reporter(progress))
    commit, listing = repo.locate(f"the weights of {repo_id}")
    label = repo.label(commit)
    if listing is not None and WEIGHTS_FILE not in listing:
        raise ModelNotAvailable(f"{repo_id} has no {WEIGHTS_FILE}: it is not an OmniVoice checkpoint "
                                f"(the original weights are {DEFAULT_WEIGHTS_REPO}).")
    if listing is not None:
        folder = repo.download(commit, [WEIGHTS_FILE], f"the weights of {label}", listing)
    else:
        folder = repo.cached_snapshot(commit, f"the weights of {label}", ignore_patterns=["*"])
    path = folder / WEIGHTS_FILE
    if not path.is_file():
        raise ModelNotAvailable(f"{WEIGHTS_FILE} of {label} is not in the Hugging Face cache ({settings.hf_cache}); "
                                "run once with network access.")
    entry = (listing or {}).get(WEIGHTS_FILE)
    if entry is not None and path.stat().st_size != entry.size:
        raise ModelNotAvailable(f"{WEIGHTS_FILE} of {label} has {path.stat().st_size} bytes, the Hub lists "
                                f"{entry.size}: download it again (--force-download).")
    digest = entry.sha256 if entry is not None and entry.sha256 else weights_digest(path, cache)
    return CheckpointWeights(path, repo_id, digest)
