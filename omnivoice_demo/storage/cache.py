"""Our cache folder: where it is, one inter-process lock per thing assembled in it, and staging folders.

The Hub resolver keeps model folders there (``hub.cache.RepoCache``), the backbone choice its rebuilt
graphs and what ``auto`` chose."""

from __future__ import annotations

import contextlib
import hashlib
import os
import pathlib
import shutil
import uuid


CACHE_ENV = "OMNIVOICE_CACHE"


def default_cache_dir() -> pathlib.Path:
    """Our cache: $OMNIVOICE_CACHE, else $XDG_CACHE_HOME (or ~/.cache)/omnivoice-onnx-studio."""
    if os.environ.get(CACHE_ENV):
        return pathlib.Path(os.path.expanduser(os.environ[CACHE_ENV]))
    base = os.environ.get("XDG_CACHE_HOME") or "~/.cache"
    return pathlib.Path(os.path.expanduser(base)) / "omnivoice-onnx-studio"


@contextlib.contextmanager
def folder_lock(cache: pathlib.Path, target: pathlib.Path):
    """An inter-process lock for assembling ``target`` (filelock comes with huggingface_hub)."""
    from filelock import FileLock

    locks = cache / "locks"
    locks.mkdir(parents=True, exist_ok=True)
    name = hashlib.sha256(str(target.resolve()).encode()).hexdigest()[:24]
    with FileLock(str(locks / f"{name}.lock")):
        yield


@contextlib.contextmanager
def staging_dir(cache: pathlib.Path):
    """A fresh working folder under ``tmp/``, removed afterwards."""
    root = cache / "tmp"
    root.mkdir(parents=True, exist_ok=True)
    path = root / f"stage-{uuid.uuid4().hex[:12]}"
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)

