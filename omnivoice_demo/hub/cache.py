"""Where things are kept: our cache of ready model folders, and where the Hugging Face cache is.

Our cache is $OMNIVOICE_CACHE, else $XDG_CACHE_HOME (or ~/.cache)/omnivoice-onnx-studio:

    hub/<owner>--<name>/refs/<revision>               commit the revision resolved to
    hub/<owner>--<name>/<commit>/listing.json         the repo's file list (sizes, checksums)
    hub/<owner>--<name>/<commit>/<precision>/         ready folder (repaired when needed)
    local/<folder name>-<hash>/<precision>/           ready copies of local folders
    built/<owner>--<name>/<commit>/<profile>/         folders built from a checkpoint
    built/local/<folder name>-<hash>/<profile>/       folders built from a local checkpoint
    locks/, tmp/                                      working files

Downloads go to the Hugging Face cache (HF_HUB_CACHE / HF_HOME), which we read and
never change, always through huggingface_hub (``scan_cache_dir``, ``try_to_load_from_cache``,
``get_cached_repo_tree``): its layout is its own; ready folders are assembled in ours.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import pathlib
import re
import shutil

from ..storage.atomic import atomic_write_json
from ..storage.manifest import MANIFEST_NAME, read_manifest_json

_COMMIT = re.compile(r"[0-9a-f]{40}")


def hf_cache_dir() -> pathlib.Path:
    """The Hugging Face hub cache as the environment says now (HF_HUB_CACHE, HF_HOME, XDG).

    Hand-written because huggingface_hub computes it only once, when it is imported
    (``huggingface_hub.constants.HF_HUB_CACHE``), and has no function that reads the environment
    again; ours is read at call time (a test, a server's settings may set it later) and passed to
    every huggingface_hub call as ``cache_dir``.  tests/test_hub.py compares it with the constant
    of a fresh interpreter under each variable."""
    env = os.environ
    for name in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        if env.get(name):
            return pathlib.Path(os.path.expandvars(os.path.expanduser(env[name])))
    home = env.get("HF_HOME") or os.path.join(env.get("XDG_CACHE_HOME") or "~/.cache", "huggingface")
    return pathlib.Path(os.path.expandvars(os.path.expanduser(home))) / "hub"


def repo_key(repo_id: str) -> str:
    """A repo id as one folder name of our cache (``owner--name``)."""
    return repo_id.replace("/", "--")


def hf_cached_revision(hf_cache: pathlib.Path, repo_id: str, revision: str):
    """The Hugging Face cache's snapshot of the model repo ``repo_id`` at ``revision`` (a commit, or a
    ref such as ``main``), as huggingface_hub's ``scan_cache_dir`` reads it (``CachedRevisionInfo``:
    ``commit_hash``, ``snapshot_path``, ``refs``); None when the cache has none."""
    from huggingface_hub import CacheNotFound, scan_cache_dir

    try:
        info = scan_cache_dir(hf_cache)
    except (CacheNotFound, OSError, ValueError):  # no cache there, or not a folder
        return None
    for repo in info.repos:
        if repo.repo_id == repo_id and repo.repo_type == "model":
            return next((rev for rev in repo.revisions if revision == rev.commit_hash or revision in rev.refs), None)
    return None


def safe_name(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_") or "_"


def is_commit(text: str) -> bool:
    return bool(_COMMIT.fullmatch(text))


def read_json(path: pathlib.Path) -> dict | None:
    """The JSON object in ``path``, or None when it is missing, unreadable or not an object.

    Our manifest is the exception: one that does not parse is an error naming it, never "foreign".
    """
    if path.name == MANIFEST_NAME:
        return read_manifest_json(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def local_copy_dir(cache: pathlib.Path, model_dir: pathlib.Path, precision: str) -> pathlib.Path:
    """Where the ready copy of a local folder that is not ready as it is goes."""
    key = hashlib.sha256(str(model_dir).encode()).hexdigest()[:12]
    return cache / "local" / f"{safe_name(model_dir.name)}-{key}" / precision


def local_build_dir(cache: pathlib.Path, checkpoint: pathlib.Path, profile: str) -> pathlib.Path:
    """Where a folder built from a local checkpoint goes (a new key when its files change)."""
    stat = [(p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in sorted(checkpoint.iterdir()) if p.is_file()]
    key = hashlib.sha256(json.dumps([str(checkpoint), stat]).encode()).hexdigest()[:16]
    return cache / "built" / "local" / f"{safe_name(checkpoint.name)}-{key}" / profile


@dataclasses.dataclass
class RepoFile:
    """One file of a repo's listing, as the Hub describes it."""

    path: str
    size: int
    sha256: str | None = None
    git_sha1: str | None = None


class RepoCache:
    """Our part of the cache for one Hub repo: ``<cache>/<kind>/<owner>--<name>/``.

    ``kind`` is "hub" (ready folders of a repo of ONNX folders) or "built" (folders
    built from a checkpoint repo).  Remembers which commit a revision resolved to (so it
    works offline), the listing of each commit, and the ready folders per commit.
    """

    def __init__(self, cache: pathlib.Path, kind: str, repo_id: str, hf_cache: pathlib.Path):
        self.repo_id = repo_id
        self.root = cache / kind / repo_key(repo_id)
        self.hf_cache = hf_cache

    def folder(self, commit: str, name: str) -> pathlib.Path:
        return self.root / commit / name

    def _ref(self, revision: str) -> pathlib.Path:
        return self.root / "refs" / safe_name(revision)

    def remember(self, revision: str, commit: str, listing: dict[str, RepoFile] | None = None) -> None:
        """Record that ``revision`` is ``commit`` now (and its listing)."""
        ref = self._ref(revision)
        ref.parent.mkdir(parents=True, exist_ok=True)
        ref.write_text(commit, encoding="utf-8")
        if listing is not None:
            path = self.root / commit / "listing.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_json(path, {"files": {k: dataclasses.asdict(v) for k, v in listing.items()}})

    def cached_commit(self, revision: str) -> str | None:
        """The commit ``revision`` last resolved to: ours, else the Hugging Face cache's ref (read only)."""
        if is_commit(revision):
            return revision
        try:
            commit = self._ref(revision).read_text(encoding="utf-8").strip()
        except OSError:
            commit = ""
        if commit:
            return commit
        cached = hf_cached_revision(self.hf_cache, self.repo_id, revision)
        return cached.commit_hash if cached is not None else None

    def cached_listing(self, commit: str) -> dict[str, RepoFile] | None:
        """The listing saved for ``commit``, else what the Hugging Face cache holds of it (sizes only)."""
        data = read_json(self.root / commit / "listing.json")
        if data and isinstance(data.get("files"), dict):
            return {k: RepoFile(**v) for k, v in data["files"].items()}
        try:
            from huggingface_hub import get_cached_repo_tree
        except ImportError:  # older huggingface_hub
            return None
        try:
            entries = get_cached_repo_tree(self.repo_id, revision=commit, cache_dir=self.hf_cache)
        except Exception:  # noqa: BLE001 - any failure means: no listing in that cache
            return None
        # its blob ids are those of the LFS pointers for large files: check sizes only
        return {e.path: RepoFile(e.path, int(e.size)) for e in entries}

    def prune(self, commit: str, name: str) -> None:
        """Remove our ready folders ``name`` of commits no ref of ours points to any more (the
        revision moved on); the Hugging Face cache is left to its own tools."""
        refs = self.root / "refs"
        wanted = {commit} | {p.read_text(encoding="utf-8").strip() for p in refs.glob("*") if p.is_file()}
        for old in self.root.iterdir():
            if old.name in wanted or old.name == "refs" or not is_commit(old.name):
                continue
            shutil.rmtree(old / name, ignore_errors=True)
            if not any(p.is_dir() for p in old.iterdir()):
                shutil.rmtree(old, ignore_errors=True)
