"""Where the ONNX model folder comes from: a local folder, the Hub, or a build from the checkpoint.

``resolve_model()`` turns what the user asked for into a ready, self-contained
model folder (backbone graphs, tokenizer, ``audio_tokenizer/``, and a manifest
of ours whose backbone is bidirectional):

* a local folder: used as it is when it is already a ready folder of ours;
  otherwise (the published layout, a causal backbone, the codec elsewhere) a
  ready copy is assembled in our cache;
* a Hub repo of ONNX folders (default ``onnx-community/OmniVoice-Onnx``): the
  folder for the precision is found from the repo's file list (the folder that
  holds a manifest and ``llm_decoder.onnx``), only that folder and the codec are
  downloaded with ``huggingface_hub.snapshot_download``, checked against the
  Hub's sizes and checksums (and our manifest, when it is ours), and assembled
  in our cache; a causal backbone (the published export) is repaired there
  with ``make_bidirectional``, the Hugging Face cache is never written to;
* a Hub repo (or a local folder) of the PyTorch checkpoint with ``build=True``
  (default ``k2-fsa/OmniVoice``): downloaded and converted with
  ``convert.pipeline.convert_checkpoint``.

Hugging Face settings are read from the environment at call time: HF_ENDPOINT,
HF_HOME / HF_HUB_CACHE, HF_TOKEN, HF_HUB_OFFLINE.  Our cache is
$OMNIVOICE_CACHE, else ~/.cache/omnivoice-onnx-studio:

    hub/<owner>--<name>/refs/<revision>               commit the revision resolved to
    hub/<owner>--<name>/<commit>/listing.json         the repo's file list (sizes, checksums)
    hub/<owner>--<name>/<commit>/<precision>/         ready folder (repaired when needed)
    local/<folder name>-<hash>/<precision>/           ready copies of local folders
    built/<owner>--<name>/<commit>/<profile>/         folders built from a checkpoint
    locks/, tmp/                                      working files

Resuming: huggingface_hub retries a transfer cut in the middle with an HTTP
Range request from the last complete chunk (we lower its chunk to 1 MiB), and
files completed before a failed run are kept in its cache and not fetched
again.  huggingface_hub >= 1.x deletes the partial file of a run that fails,
so a file that was not complete starts again from zero in the next run.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import fnmatch
import hashlib
import importlib.util
import json
import logging
import os
import pathlib
import re
import shutil
import sys
import threading
import time
import uuid
from typing import Any, Callable, Iterable

from .manifest import (
    BACKBONE_GRAPHS,
    CODEC_DIR,
    CODEC_GRAPHS,
    FORMAT_NAME,
    MANIFEST_NAME,
    ModelFolderError,
    load_manifest,
    sha256_of,
    verify_files,
    write_manifest,
)

log = logging.getLogger(__name__)

DEFAULT_REPO = "onnx-community/OmniVoice-Onnx"
DEFAULT_CHECKPOINT_REPO = "k2-fsa/OmniVoice"
PRECISIONS = ("int4", "fp16", "fp32", "cuda")
DEFAULT_PRECISION = "int4"
#: precision asked for -> convert profile (``convert.pipeline.PROFILES``) and our manifest's "profile"
PRECISION_PROFILES = {"int4": "cpu", "fp16": "cpu_fp16", "fp32": "cpu_fp32", "cuda": "gpu"}
#: folder names that mean a precision (the published layout: int4/, cuda/, fp16 at the root)
FOLDER_ALIASES = {
    "int4": ("int4", "cpu", "cpu_int4", "q4", "int4_cpu"),
    "fp16": ("fp16", "cpu_fp16", "fp16_cpu"),
    "fp32": ("fp32", "cpu_fp32", "fp32_cpu"),
    "cuda": ("cuda", "gpu", "cuda_fp16", "fp16_cuda"),
}
#: import name -> pip name of what ``convert`` needs beyond the runtime
BUILD_MODULES = {"torch": "torch", "omnivoice": "omnivoice", "onnxruntime_genai": "onnxruntime-genai",
                 "olive": "olive-ai"}
INSTALL_HINT = "pip install -r requirements-dev.txt   (or: bash scripts/setup_dev.sh)"
CACHE_ENV = "OMNIVOICE_CACHE"
#: huggingface_hub resumes a cut transfer from the last complete chunk; its default is 10 MiB
DOWNLOAD_CHUNK_SIZE = 1 << 20
BACKBONE = BACKBONE_GRAPHS["backbone"]
SKIP_SUFFIXES = (".png", ".jpg", ".jpeg", ".gif", ".webp")  # not copied into a model folder
CHECKPOINT_IGNORE = ["*.md", "*.png", "*.jpg", "*.jpeg", "*.gif", "*.webp", ".gitattributes"]
REPAIR_WHY = (
    "its llm_decoder.onnx attends causally (onnxruntime-genai's GroupQueryAttention default), "
    "but OmniVoice's backbone attends in both directions, so as published it computes a different "
    "model (about 18% of tokens agree with the reference)"
)


# --- errors and results ---------------------------------------------------------------


class ModelNotAvailableError(ModelFolderError):
    """The model cannot be had now: offline and not cached, the Hub unreachable, no such repo, ..."""


class ModelDownloadError(ModelNotAvailableError):
    """A download failed or was cut; what was complete is kept and the next run continues."""


class BuildExtrasMissingError(ModelNotAvailableError):
    """The build route needs the convert extras (torch, omnivoice, onnxruntime-genai, olive)."""


@dataclasses.dataclass
class ProgressEvent:
    """One progress report.  ``stage`` is one of: "resolve", "download", "verify", "repair",
    "assemble", "build", "ready".  ``notice`` carries a message the user should read (the
    backbone was repaired, a cached copy is used because the Hub is unreachable, ...)."""

    stage: str
    message: str
    files_done: int = 0
    files_total: int = 0
    bytes_done: int = 0
    bytes_total: int = 0
    notice: str | None = None

    @property
    def fraction(self) -> float | None:
        if self.bytes_total:
            return min(1.0, self.bytes_done / self.bytes_total)
        if self.files_total:
            return min(1.0, self.files_done / self.files_total)
        return None


ProgressCallback = Callable[[ProgressEvent], Any]


class ResolvedModel(type(pathlib.Path())):
    """The ready folder (a ``pathlib.Path``) with where it came from and what was done to it.

    Attributes: ``source`` (what was asked for), ``repo_id``, ``revision``, ``commit``,
    ``precision``, ``subfolder`` (the folder of the source it was taken from, "" for the
    root), ``repaired`` (the backbone was made bidirectional by us), ``notices`` (messages
    for the user).  Paths derived from it (``/``, ``.parent``) are plain paths.
    """

    source: str = ""
    repo_id: str | None = None
    revision: str | None = None
    commit: str | None = None
    precision: str | None = None
    subfolder: str | None = None
    repaired: bool = False
    notices: list[str]

    @classmethod
    def make(cls, path, **attrs) -> "ResolvedModel":
        obj = cls(path)
        obj.notices = []
        for key, value in attrs.items():
            setattr(obj, key, value)
        return obj


class _Reporter:
    def __init__(self, callback: ProgressCallback | None):
        self.callback = callback
        self.notices: list[str] = []
        self.lock = threading.RLock()

    def emit(self, stage: str, message: str, **fields) -> None:
        event = ProgressEvent(stage, message, **fields)
        log.debug("%s: %s", stage, message)
        if self.callback is not None:
            with self.lock:
                self.callback(event)

    def notice(self, stage: str, text: str) -> None:
        self.notices.append(text)
        log.info(text)
        self.emit(stage, text, notice=text)


class _DownloadProgress:
    """Turns huggingface_hub's tqdm updates into ProgressEvents (files and bytes)."""

    def __init__(self, reporter: _Reporter, label: str, files_total: int, bytes_total: int):
        self.reporter, self.label = reporter, label
        self.files_total, self.bytes_total = files_total, bytes_total
        self.files_done = self.bytes_done = 0
        self.last = 0.0
        self.lock = threading.Lock()

    def update(self, role: str, n: float) -> None:
        with self.lock:
            if role == "files":
                self.files_done += int(n)
            elif role == "bytes":
                self.bytes_done += int(n)
            else:
                return
            now = time.monotonic()
            if role == "bytes" and now - self.last < 0.1:
                return
            self.last = now
            self._emit()

    def _emit(self) -> None:
        done = min(self.bytes_done, self.bytes_total) if self.bytes_total else self.bytes_done
        self.reporter.emit(
            "download",
            f"{self.label}: {self.files_done}/{self.files_total} files, "
            f"{_fmt_bytes(done)} of {_fmt_bytes(self.bytes_total)}",
            files_done=min(self.files_done, self.files_total), files_total=self.files_total,
            bytes_done=done, bytes_total=self.bytes_total,
        )

    def finish(self) -> None:
        with self.lock:
            self.files_done = self.files_total
            self.bytes_done = max(self.bytes_done, self.bytes_total)
            self._emit()

    def tqdm_class(self):
        from tqdm.std import tqdm as std_tqdm

        progress = self
        sink = _devnull()

        class _Bar(std_tqdm):
            """A silent tqdm whose updates go to the progress callback.

            snapshot_download makes three kinds of bars with it: files done ("Fetching N
            files", unit "it"), bytes written ("Reconstructing", unit "B") and network
            bytes ("Downloading bytes", not used: resumed bytes would count twice).
            """

            def __init__(self, *args, **kwargs):
                kwargs.pop("name", None)
                kwargs["file"] = sink
                kwargs["disable"] = False
                desc = str(kwargs.get("desc") or "")
                unit = kwargs.get("unit", "it")
                if unit != "B":
                    self._role = "files"
                elif desc.startswith("Downloading bytes"):
                    self._role = "transfer"
                else:
                    self._role = "bytes"
                super().__init__(*args, **kwargs)

            def update(self, n=1):
                result = super().update(n)
                progress.update(self._role, n or 0)
                return result

        return _Bar


# --- settings -------------------------------------------------------------------------


def _env_true(name: str) -> bool:
    return os.environ.get(name, "").strip().upper() in {"1", "ON", "YES", "TRUE"}


def env_offline() -> bool:
    """HF_HUB_OFFLINE (or TRANSFORMERS_OFFLINE) as set now."""
    return _env_true("HF_HUB_OFFLINE") or _env_true("TRANSFORMERS_OFFLINE")


def hub_endpoint() -> str:
    from huggingface_hub import constants

    return (os.environ.get("HF_ENDPOINT") or constants.ENDPOINT).rstrip("/")


def hub_cache_dir() -> pathlib.Path:
    """The Hugging Face hub cache as the environment says now (HF_HUB_CACHE, HF_HOME, XDG)."""
    env = os.environ
    for name in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        if env.get(name):
            return pathlib.Path(os.path.expandvars(os.path.expanduser(env[name])))
    home = env.get("HF_HOME") or os.path.join(env.get("XDG_CACHE_HOME") or "~/.cache", "huggingface")
    return pathlib.Path(os.path.expandvars(os.path.expanduser(home))) / "hub"


def default_cache_dir() -> pathlib.Path:
    """Our cache: $OMNIVOICE_CACHE, else $XDG_CACHE_HOME (or ~/.cache)/omnivoice-onnx-studio."""
    if os.environ.get(CACHE_ENV):
        return pathlib.Path(os.path.expanduser(os.environ[CACHE_ENV]))
    base = os.environ.get("XDG_CACHE_HOME") or "~/.cache"
    return pathlib.Path(os.path.expanduser(base)) / "omnivoice-onnx-studio"


_HF_LOCK = threading.RLock()
_DEVNULL = None


def _devnull():
    global _DEVNULL
    if _DEVNULL is None:
        _DEVNULL = open(os.devnull, "w")  # noqa: SIM115 - one per process
    return _DEVNULL


@contextlib.contextmanager
def _hf_session(offline: bool):
    """Make huggingface_hub follow our offline decision and resume in small chunks.

    huggingface_hub reads HF_HUB_OFFLINE once at import; the decision made now (from
    the argument or the environment as it is now) is applied for the duration of the
    call.  One resolution at a time per process.
    """
    from huggingface_hub import constants

    with _HF_LOCK:
        saved = constants.HF_HUB_OFFLINE, constants.DOWNLOAD_CHUNK_SIZE
        constants.HF_HUB_OFFLINE = bool(offline)
        constants.DOWNLOAD_CHUNK_SIZE = DOWNLOAD_CHUNK_SIZE
        try:
            yield
        finally:
            constants.HF_HUB_OFFLINE, constants.DOWNLOAD_CHUNK_SIZE = saved


# --- helpers --------------------------------------------------------------------------


def _fmt_bytes(n: int | float) -> str:
    n = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if abs(n) < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} GB"


def _repo_key(repo_id: str) -> str:
    return repo_id.replace("/", "--")


def _safe_name(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_") or "_"


def _join(folder: str, name: str) -> str:
    return f"{folder}/{name}" if folder else name


def _parent(path: str) -> str:
    return path.rsplit("/", 1)[0] if "/" in path else ""


def _glob_escape(path: str) -> str:
    return re.sub(r"([\[\]*?])", r"[\1]", path)


def git_blob_sha1(path: pathlib.Path, block: int = 1 << 20) -> str:
    digest = hashlib.sha1(b"blob %d\0" % path.stat().st_size)
    with open(path, "rb") as handle:
        while chunk := handle.read(block):
            digest.update(chunk)
    return digest.hexdigest()


def _atomic_write_json(path: pathlib.Path, data: dict) -> None:
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.tmp")
    tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, path)


@contextlib.contextmanager
def _folder_lock(cache: pathlib.Path, target: pathlib.Path):
    """An inter-process lock for assembling ``target`` (no-op without the filelock package)."""
    try:
        from filelock import FileLock
    except ImportError:  # pragma: no cover - filelock comes with huggingface_hub
        yield
        return
    locks = cache / "locks"
    locks.mkdir(parents=True, exist_ok=True)
    name = hashlib.sha256(str(target.resolve()).encode()).hexdigest()[:24]
    with FileLock(str(locks / f"{name}.lock")):
        yield


@dataclasses.dataclass
class _File:
    path: str
    size: int
    sha256: str | None = None
    git_sha1: str | None = None


# --- which folder of a repo -----------------------------------------------------------


def backbone_folders(paths: Iterable[str]) -> list[str]:
    """Folders ("" = root) that hold a manifest and a backbone graph."""
    paths = set(paths)
    return sorted({_parent(p) for p in paths
                   if p.rsplit("/", 1)[-1] == MANIFEST_NAME and _join(_parent(p), BACKBONE) in paths})


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
                           source: str) -> str:
    """Pick the folder for ``precision``: by folder name, else by what its manifest says,
    else the root for fp16 (the published layout), else the only folder there is."""
    if precision not in PRECISIONS:
        raise ValueError(f"unknown precision {precision!r}; choose one of {', '.join(PRECISIONS)}")
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
    raise ModelNotAvailableError(
        f"{source} has no model folder for precision {precision}; it has: {available}. "
        f"Choose one of those with --precision."
    )


def codec_base(paths: Iterable[str], folder: str) -> str:
    """The folder whose ``audio_tokenizer/`` serves ``folder``: itself, else the nearest parent."""
    paths = set(paths)
    base = folder
    while True:
        if all(_join(base, rel) in paths for rel in CODEC_GRAPHS.values()):
            return base
        if not base:
            break
        base = _parent(base)
    raise ModelFolderError(
        f"no {CODEC_DIR}/ with the four codec graphs ({', '.join(CODEC_GRAPHS.values())}) "
        f"in {folder or 'the root'} or above it."
    )


def needed_files(paths: Iterable[str], folder: str) -> dict[str, str]:
    """Repo path -> path in the ready folder: the files of ``folder`` itself (not its
    subfolders) and its codec folder."""
    paths = sorted(set(paths))
    base = codec_base(paths, folder)
    codec_prefix = _join(base, CODEC_DIR) + "/"
    out = {}
    for path in paths:
        name = path.rsplit("/", 1)[-1]
        if _parent(path) == folder and not name.startswith(".") and not name.lower().endswith(SKIP_SUFFIXES):
            out[path] = name
        elif path.startswith(codec_prefix):
            out[path] = CODEC_DIR + "/" + path[len(codec_prefix):]
    return out


# --- checks and assembly --------------------------------------------------------------


def _load_header(path: pathlib.Path, rel: str):
    import onnx

    try:
        return onnx.load(str(path), load_external_data=False)
    except Exception as exc:  # DecodeError and friends
        raise ModelFolderError(f"{rel} is not a readable ONNX graph ({type(exc).__name__}: {exc}); "
                               "the file is corrupt.") from exc


def check_graph_files(folder: pathlib.Path) -> None:
    """For folders without a manifest of ours: every graph exists, parses, and its external
    weights exist and are long enough."""
    import onnx

    for rel in [*BACKBONE_GRAPHS.values(), *CODEC_GRAPHS.values()]:
        path = folder / rel
        if not path.is_file():
            raise ModelFolderError(f"{rel} is missing from {folder}.")
        model = _load_header(path, rel)
        for tensor in model.graph.initializer:
            if tensor.data_location != onnx.TensorProto.EXTERNAL:
                continue
            info = {entry.key: entry.value for entry in tensor.external_data}
            data = path.parent / info.get("location", "")
            need = int(info.get("offset", 0) or 0) + int(info.get("length", 0) or 0)
            data_rel = (pathlib.PurePosixPath(rel).parent / info.get("location", "")).as_posix()
            if not data.is_file():
                raise ModelFolderError(f"{data_rel} (weights of {rel}) is missing from {folder}.")
            if data.stat().st_size < need:
                raise ModelFolderError(f"{data_rel} (weights of {rel}) is truncated: "
                                       f"{data.stat().st_size} bytes, needs at least {need}.")


def backbone_is_causal(folder: pathlib.Path) -> bool:
    from .repair import is_causal_graph

    return is_causal_graph(_load_header(folder / BACKBONE, BACKBONE))


def _read_json(path: pathlib.Path) -> dict | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _ready_manifest(folder: pathlib.Path, checksums: bool) -> dict:
    """Load and verify a ready folder; raise ModelFolderError when it is not one."""
    manifest = load_manifest(folder)
    if manifest.get("backbone_attention") != "bidirectional":
        raise ModelFolderError(f"{folder} has backbone_attention {manifest.get('backbone_attention')!r}")
    verify_files(folder, manifest, checksums=checksums)
    return manifest


def _stage_links(files: dict[pathlib.Path, str], staging: pathlib.Path) -> None:
    """Lay out ``files`` (source path -> relative path) as symlinks (copies where links fail)."""
    for source, rel in files.items():
        dest = staging / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        real = source.resolve()
        try:
            os.symlink(real, dest)
        except OSError:
            shutil.copy2(real, dest)


def _assemble(staging: pathlib.Path, final: pathlib.Path, origin: dict, reporter: _Reporter,
              label: str) -> bool:
    """Check the staged files and write ``final``; return True when the backbone was repaired."""
    from .repair import make_bidirectional

    raw = _read_json(staging / MANIFEST_NAME)
    ours = bool(raw) and raw.get("format") == FORMAT_NAME
    reporter.emit("verify", f"checking the files of {label}")
    if ours:
        verify_files(staging, load_manifest(staging), checksums=True)
    else:
        check_graph_files(staging)
    causal = backbone_is_causal(staging)
    if final.exists():
        shutil.rmtree(final)
    final.parent.mkdir(parents=True, exist_ok=True)
    if causal:
        reporter.emit("repair", f"making the backbone of {label} bidirectional")
        make_bidirectional(staging, final)
    else:
        reporter.emit("assemble", f"copying {label} into {final}")
        tmp = final.with_name(final.name + ".partial")
        if tmp.exists():
            shutil.rmtree(tmp)
        shutil.copytree(staging, tmp, symlinks=False)
        if not ours:
            if (tmp / MANIFEST_NAME).is_file():
                (tmp / MANIFEST_NAME).rename(tmp / "source_manifest.json")
            write_manifest(tmp, {"backbone_attention": "bidirectional"})
        tmp.rename(final)
    manifest = json.loads((final / MANIFEST_NAME).read_text(encoding="utf-8"))
    manifest["origin"] = {**origin, "repaired": causal}
    _atomic_write_json(final / MANIFEST_NAME, manifest)
    return causal


def _repair_notice(label: str, final: pathlib.Path, fresh: bool) -> str:
    if fresh:
        return (f"Repaired the backbone of {label}: {REPAIR_WHY}. A copy with causal=0 on every attention "
                f"node was written to {final} and will be reused; the source was not changed.")
    return (f"Using the repaired copy of {label} in {final}: the published backbone is causal and "
            "OmniVoice attends in both directions (repaired once, reused).")


def _was_repaired(manifest: dict) -> bool:
    """Whether we repaired it on assembly (a publisher's own repair does not count)."""
    return bool((manifest.get("origin") or {}).get("repaired"))


# --- the Hub --------------------------------------------------------------------------


def _connection_errors() -> tuple[type[BaseException], ...]:
    import httpx2
    from huggingface_hub.errors import OfflineModeIsEnabled

    return (httpx2.ConnectError, httpx2.TimeoutException, OfflineModeIsEnabled, httpx2.RemoteProtocolError)


def _hub_listing(repo_id: str, revision: str | None, endpoint: str) -> tuple[str, dict[str, _File]]:
    from huggingface_hub import HfApi
    from huggingface_hub.hf_api import RepoFile

    api = HfApi(endpoint=endpoint)
    info = api.repo_info(repo_id, revision=revision)
    if not info.sha:
        raise ModelNotAvailableError(f"{endpoint} gave no commit for {repo_id}@{revision or 'main'}")
    files = {}
    for entry in api.list_repo_tree(repo_id, recursive=True, revision=info.sha):
        if isinstance(entry, RepoFile):
            files[entry.path] = _File(entry.path, int(entry.size),
                                      sha256=entry.lfs.sha256 if entry.lfs is not None else None,
                                      git_sha1=entry.blob_id)
    return info.sha, files


def _cached_hf_listing(repo_id: str, commit: str, hf_cache: pathlib.Path) -> dict[str, _File] | None:
    try:
        from huggingface_hub import get_cached_repo_tree
    except ImportError:  # older huggingface_hub
        return None
    try:
        entries = get_cached_repo_tree(repo_id, revision=commit, cache_dir=hf_cache)
    except Exception:
        return None
    # its blob ids are those of the LFS pointers for large files: check sizes only
    return {e.path: _File(e.path, int(e.size)) for e in entries}


def _save_listing(path: pathlib.Path, files: dict[str, _File]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    _atomic_write_json(path, {"files": {k: dataclasses.asdict(v) for k, v in files.items()}})


def _load_listing(path: pathlib.Path) -> dict[str, _File] | None:
    data = _read_json(path)
    if not data or not isinstance(data.get("files"), dict):
        return None
    return {k: _File(**v) for k, v in data["files"].items()}


def _check_against_listing(path: pathlib.Path, entry: _File, where: str) -> str | None:
    """None when ``path`` matches the Hub's size and checksum, else what is wrong."""
    if not path.is_file():
        return f"{entry.path} is missing from {where}"
    size = path.stat().st_size
    if size != entry.size:
        return f"{entry.path} has {size} bytes, the Hub lists {entry.size} (in {where})"
    if entry.sha256:
        if sha256_of(path) != entry.sha256:
            return f"{entry.path} fails the Hub's sha256 checksum (in {where}): the file is corrupt"
    elif entry.git_sha1 and len(entry.git_sha1) == 40:
        if git_blob_sha1(path) != entry.git_sha1:
            return f"{entry.path} fails the Hub's git checksum (in {where}): the file is corrupt"
    return None


def _offline_help(repo_id: str, precision: str, what: str) -> str:
    return (
        f"{what} To get it, run once with network access (without --offline / HF_HUB_OFFLINE=1), "
        f"e.g. `python app.py --model {repo_id} --precision {precision}`, and it is cached for offline use; "
        "or pass a local model folder with --model DIR (build one with `python -m convert`)."
    )


class _HubResolver:
    def __init__(self, repo_id: str, revision: str | None, precision: str, cache: pathlib.Path,
                 offline: bool, reporter: _Reporter, checksums: bool, force_download: bool):
        self.repo_id, self.revision, self.precision = repo_id, revision, precision
        self.cache, self.offline, self.reporter = cache, offline, reporter
        self.checksums, self.force = checksums, force_download
        self.endpoint = hub_endpoint()
        self.hf_cache = hub_cache_dir()
        self.root = cache / "hub" / _repo_key(repo_id)
        self.rev_name = revision or "main"

    # refs: revision -> commit, in our cache (the HF cache's refs are read, never written by us)
    def _ref_path(self) -> pathlib.Path:
        return self.root / "refs" / _safe_name(self.rev_name)

    def _cached_commit(self) -> str | None:
        if re.fullmatch(r"[0-9a-f]{40}", self.rev_name):
            return self.rev_name
        for ref in (self._ref_path(),
                    self.hf_cache / f"models--{_repo_key(self.repo_id)}" / "refs" / self.rev_name):
            try:
                commit = ref.read_text(encoding="utf-8").strip()
            except OSError:
                continue
            if commit:
                return commit
        return None

    def label(self, commit: str, folder: str | None = None) -> str:
        where = "" if folder is None else f" ({folder + '/' if folder else 'root'})"
        return f"{self.repo_id}@{commit[:8]}{where}"

    def run(self) -> ResolvedModel:
        listing = None
        unreachable = None
        if not self.offline:
            from huggingface_hub.errors import (GatedRepoError, HfHubHTTPError, RepositoryNotFoundError,
                                                RevisionNotFoundError)

            self.reporter.emit("resolve", f"asking {self.endpoint} for {self.repo_id}@{self.rev_name}")
            try:
                commit, listing = _hub_listing(self.repo_id, self.revision, self.endpoint)
            except (RepositoryNotFoundError, GatedRepoError) as exc:
                raise ModelNotAvailableError(
                    f"{self.repo_id} was not found on {self.endpoint}, or it needs a login "
                    f"(set HF_TOKEN): {exc}") from exc
            except RevisionNotFoundError as exc:
                raise ModelNotAvailableError(f"{self.repo_id} has no revision {self.rev_name!r}: {exc}") from exc
            except _connection_errors() as exc:
                unreachable = exc
            except HfHubHTTPError as exc:
                status = getattr(getattr(exc, "response", None), "status_code", 0) or 0
                if status < 500:
                    raise ModelNotAvailableError(f"{self.endpoint} refused {self.repo_id}: {exc}") from exc
                unreachable = exc
            else:
                self.root.mkdir(parents=True, exist_ok=True)
                self._ref_path().parent.mkdir(parents=True, exist_ok=True)
                self._ref_path().write_text(commit, encoding="utf-8")
                _save_listing(self.root / commit / "listing.json", listing)

        if listing is None:
            commit = self._cached_commit()
            if commit is None:
                what = (f"Offline, and {self.repo_id}@{self.rev_name} (precision {self.precision}) "
                        "was never downloaded: no cached copy.") if unreachable is None else (
                        f"The Hub at {self.endpoint} could not be reached ({type(unreachable).__name__}: "
                        f"{unreachable}) and {self.repo_id}@{self.rev_name} (precision {self.precision}) "
                        "is not cached.")
                raise ModelNotAvailableError(_offline_help(self.repo_id, self.precision, what))
            if unreachable is not None:
                self.reporter.notice("resolve", f"The Hub at {self.endpoint} could not be reached "
                                                f"({type(unreachable).__name__}); using the cached copy of "
                                                f"{self.label(commit)}.")
            listing = (_load_listing(self.root / commit / "listing.json")
                       or _cached_hf_listing(self.repo_id, commit, self.hf_cache))
            self.offline = True

        final = self.root / commit / self.precision
        attrs = dict(source=f"{self.repo_id}@{self.rev_name}", repo_id=self.repo_id, revision=self.rev_name,
                     commit=commit, precision=self.precision)
        with _folder_lock(self.cache, final):
            if not self.force and final.is_dir():
                try:
                    manifest = _ready_manifest(final, self.checksums)
                except ModelFolderError as exc:
                    self.reporter.notice("verify", f"The cached model folder {final} is damaged ({exc}); "
                                                   "assembling it again.")
                else:
                    folder = (manifest.get("origin") or {}).get("folder")
                    result = ResolvedModel.make(final, subfolder=folder, repaired=_was_repaired(manifest), **attrs)
                    if result.repaired:
                        self.reporter.notice("repair", _repair_notice(self.label(commit, folder), final, False))
                    return self._ready(result)
            if listing is None:
                raise ModelNotAvailableError(_offline_help(
                    self.repo_id, self.precision,
                    f"Offline, and the file list of {self.label(commit)} is not cached."))
            return self._download_and_assemble(commit, listing, final, attrs)

    def _prune(self, commit: str) -> None:
        """Remove our ready folders of this precision for commits no ref of ours points to any more
        (the revision moved on); the Hugging Face cache is left to its own tools."""
        refs = self.root / "refs"
        wanted = {commit} | {p.read_text(encoding="utf-8").strip() for p in refs.glob("*") if p.is_file()}
        for old in self.root.iterdir():
            if old.name in wanted or old.name == "refs" or not re.fullmatch(r"[0-9a-f]{40}", old.name):
                continue
            shutil.rmtree(old / self.precision, ignore_errors=True)
            if not any(p.is_dir() for p in old.iterdir()):
                shutil.rmtree(old, ignore_errors=True)

    def _ready(self, result: ResolvedModel) -> ResolvedModel:
        result.notices = list(self.reporter.notices)
        self.reporter.emit("ready", f"model ready: {result}")
        return result

    def _snapshot(self, commit: str, patterns: list[str], progress: _DownloadProgress,
                  force: bool = False) -> pathlib.Path:
        from huggingface_hub import snapshot_download

        with _hf_session(self.offline):
            path = snapshot_download(
                self.repo_id, revision=commit, cache_dir=str(self.hf_cache), endpoint=self.endpoint,
                allow_patterns=patterns, local_files_only=self.offline, force_download=force,
                tqdm_class=progress.tqdm_class(),
            )
        return pathlib.Path(path)

    def _download(self, commit: str, paths: list[str], label: str, listing: dict[str, _File],
                  force: bool = False) -> pathlib.Path:
        from huggingface_hub.errors import LocalEntryNotFoundError

        snapshot = self.hf_cache / f"models--{_repo_key(self.repo_id)}" / "snapshots" / commit
        missing = [p for p in paths if force or not (snapshot / p).is_file()]
        progress = _DownloadProgress(self.reporter, f"downloading {label}", len(paths),
                                     sum(listing[p].size for p in missing if p in listing))
        if missing:
            self.reporter.emit("download", f"downloading {len(missing)} of {len(paths)} files of {label} "
                               f"({_fmt_bytes(progress.bytes_total)}) into {self.hf_cache}",
                               files_total=len(paths), bytes_total=progress.bytes_total)
        try:
            path = self._snapshot(commit, [_glob_escape(p) for p in paths], progress, force)
        except LocalEntryNotFoundError as exc:
            raise ModelNotAvailableError(_offline_help(
                self.repo_id, self.precision,
                f"The Hub cannot be used (offline or unreachable) and {len(missing)} of the {len(paths)} files "
                f"of {label} ({_fmt_bytes(progress.bytes_total)}) are not in the Hugging Face cache "
                f"({self.hf_cache}): {', '.join(missing[:3])}{' ...' if len(missing) > 3 else ''}.")) from exc
        except (OSError, *_connection_errors()) as exc:
            raise ModelDownloadError(
                f"Downloading {label} from {self.endpoint} failed ({type(exc).__name__}: {exc}). "
                f"Files already complete are kept in {self.hf_cache}; run again to continue.") from exc
        if missing:
            progress.finish()
        return path

    def _download_and_assemble(self, commit: str, listing: dict[str, _File], final: pathlib.Path,
                               attrs: dict) -> ResolvedModel:
        def read_manifest(folder: str) -> dict | None:
            rel = _join(folder, MANIFEST_NAME)
            return _read_json(self._download(commit, [rel], self.label(commit, folder), listing) / rel)

        folder = choose_backbone_folder(listing, self.precision, read_manifest, self.label(commit))
        label = self.label(commit, folder)
        files = needed_files(listing, folder)
        snapshot = self._download(commit, sorted(files), label, listing, force=self.force)

        # the Hub's sizes and checksums, then (in _assemble) our manifest or the graph headers
        self.reporter.emit("verify", f"checking {len(files)} downloaded files of {label} against the Hub's checksums")
        for rel in sorted(files):
            problem = _check_against_listing(snapshot / rel, listing[rel], "the Hugging Face cache")
            if problem and not self.offline:
                self.reporter.notice("download", f"{problem}; downloading it again.")
                snapshot = self._download(commit, [rel], label, listing, force=True)
                problem = _check_against_listing(snapshot / rel, listing[rel], "the Hugging Face cache")
            if problem:
                raise ModelFolderError(
                    f"{problem}. The download of {label} is damaged: run again with --force-download "
                    f"(force_download=True), or delete {snapshot / rel} and run again.")

        tmp_root = self.cache / "tmp"
        tmp_root.mkdir(parents=True, exist_ok=True)
        staging = tmp_root / f"stage-{uuid.uuid4().hex[:12]}"
        try:
            _stage_links({snapshot / rel: target for rel, target in files.items()}, staging)
            origin = {"repo": self.repo_id, "revision": self.rev_name, "commit": commit, "folder": folder,
                      "precision": self.precision, "endpoint": self.endpoint}
            try:
                repaired = _assemble(staging, final, origin, self.reporter, label)
            except ModelFolderError as exc:
                raise ModelFolderError(f"{label}: {exc}") from exc
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        self._prune(commit)
        result = ResolvedModel.make(final, subfolder=folder, repaired=repaired, **attrs)
        if repaired:
            self.reporter.notice("repair", _repair_notice(label, final, True))
        return self._ready(result)


# --- local folders --------------------------------------------------------------------


def _local_paths(folder: pathlib.Path) -> list[str]:
    out = []
    for path in folder.rglob("*"):
        rel = path.relative_to(folder).as_posix()
        if path.is_file() and not any(part.startswith(".") for part in rel.split("/")[:-1]):
            out.append(rel)
    return sorted(out)


def _is_checkpoint(folder: pathlib.Path) -> bool:
    return (folder / "config.json").is_file() and (
        any(folder.glob("*.safetensors")) or any(folder.glob("*.bin")))


def _resolve_local(folder: pathlib.Path, precision: str, cache: pathlib.Path, reporter: _Reporter,
                   checksums: bool) -> ResolvedModel:
    folder = folder.resolve()
    paths = _local_paths(folder)
    if not backbone_folders(paths) and _is_checkpoint(folder):
        raise ModelFolderError(
            f"{folder} is a PyTorch checkpoint, not an ONNX model folder: convert it with "
            f"`python -m convert --model {folder} --output DIR`, or pass build=True (--build).")
    reporter.emit("resolve", f"looking for the {precision} model in {folder}")
    sub = choose_backbone_folder(paths, precision, lambda d: _read_json(folder / d / MANIFEST_NAME), str(folder))
    model_dir = folder / sub if sub else folder
    files = needed_files(paths, sub)
    attrs = dict(source=str(folder), precision=precision, subfolder=sub)

    # a ready folder of ours is used where it is
    raw = _read_json(model_dir / MANIFEST_NAME) or {}
    codec_inside = all((model_dir / rel).is_file() for rel in CODEC_GRAPHS.values())
    if raw.get("format") == FORMAT_NAME and raw.get("backbone_attention") == "bidirectional" and codec_inside:
        reporter.emit("verify", f"checking {model_dir}")
        manifest = load_manifest(model_dir)
        verify_files(model_dir, manifest, checksums=checksums)
        if not backbone_is_causal(model_dir):
            return _finish(ResolvedModel.make(model_dir, repaired=False, **attrs), reporter)

    # otherwise a ready copy in our cache, rebuilt when the source files change
    key = hashlib.sha256(str(model_dir).encode()).hexdigest()[:12]
    final = cache / "local" / f"{_safe_name(model_dir.name)}-{key}" / precision
    fingerprint = {rel: [(folder / rel).stat().st_size, (folder / rel).stat().st_mtime_ns] for rel in files}
    stamp = final.with_name(final.name + ".source.json")
    label = str(model_dir) + ("" if codec_inside else f" with {_join(codec_base(paths, sub), CODEC_DIR)}/")
    with _folder_lock(cache, final):
        if final.is_dir() and _read_json(stamp) == {"source": str(folder), "files": fingerprint}:
            try:
                manifest = _ready_manifest(final, checksums)
            except ModelFolderError as exc:
                reporter.notice("verify", f"The cached copy {final} is damaged ({exc}); assembling it again.")
            else:
                result = ResolvedModel.make(final, repaired=_was_repaired(manifest), **attrs)
                if result.repaired:
                    reporter.notice("repair", _repair_notice(label, final, False))
                return _finish(result, reporter)
        staging = cache / "tmp" / f"stage-{uuid.uuid4().hex[:12]}"
        try:
            _stage_links({folder / rel: target for rel, target in files.items()}, staging)
            origin = {"local": str(folder), "folder": sub, "precision": precision}
            repaired = _assemble(staging, final, origin, reporter, label)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        _atomic_write_json(stamp, {"source": str(folder), "files": fingerprint})
    result = ResolvedModel.make(final, repaired=repaired, **attrs)
    if repaired:
        reporter.notice("repair", _repair_notice(label, final, True))
    return _finish(result, reporter)


def _finish(result: ResolvedModel, reporter: _Reporter) -> ResolvedModel:
    result.notices = list(reporter.notices)
    reporter.emit("ready", f"model ready: {result}")
    return result


# --- the build route ------------------------------------------------------------------


def missing_build_modules() -> list[str]:
    """pip names of the convert extras that are not importable."""
    return [pip for module, pip in BUILD_MODULES.items() if importlib.util.find_spec(module) is None]


def _require_build_extras() -> None:
    missing = missing_build_modules()
    if missing:
        raise BuildExtrasMissingError(
            f"Building the ONNX model from the PyTorch checkpoint needs {', '.join(missing)}, "
            f"which {'is' if len(missing) == 1 else 'are'} not installed. Install the convert extras with:\n"
            f"    {INSTALL_HINT}\n"
            "or use the published ONNX folders instead (leave out --build)."
        )


def _resolve_build(spec_kind: str, spec_value, revision: str | None, precision: str, cache: pathlib.Path,
                   offline: bool, reporter: _Reporter, checksums: bool, force_download: bool) -> ResolvedModel:
    _require_build_extras()  # before any download: the checkpoint is gigabytes
    profile = PRECISION_PROFILES[precision]
    if spec_kind == "local":
        local = pathlib.Path(spec_value).resolve()
        if not _is_checkpoint(local):
            raise ModelFolderError(f"{local} is not a PyTorch checkpoint folder (config.json + weights).")
        stat = [(p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in sorted(local.iterdir()) if p.is_file()]
        key = hashlib.sha256(json.dumps([str(local), stat]).encode()).hexdigest()[:16]
        final = cache / "built" / "local" / f"{_safe_name(local.name)}-{key}" / profile
        attrs = dict(source=str(local), precision=precision)
        label = str(local)

        def get_checkpoint() -> pathlib.Path:
            return local
    else:
        repo_id = spec_value
        resolver = _HubResolver(repo_id, revision, precision, cache, offline, reporter, checksums, force_download)
        resolver.root = cache / "built" / _repo_key(repo_id)
        commit, listing = None, None
        if not offline:
            reporter.emit("resolve", f"asking {resolver.endpoint} for {repo_id}@{resolver.rev_name}")
            try:
                commit, listing = _hub_listing(repo_id, revision, resolver.endpoint)
            except _connection_errors() as exc:
                reporter.notice("resolve", f"The Hub at {resolver.endpoint} could not be reached "
                                           f"({type(exc).__name__}); looking in the cache.")
            except Exception as exc:
                raise ModelNotAvailableError(f"{repo_id}@{resolver.rev_name} is not available from "
                                             f"{resolver.endpoint}: {exc}") from exc
        if commit is None:
            resolver.offline = True
            commit = resolver._cached_commit()
            if commit is None:
                raise ModelNotAvailableError(_offline_help(
                    repo_id, precision, f"The checkpoint {repo_id}@{resolver.rev_name} is not cached and "
                                        "cannot be downloaded now."))
        else:
            resolver._ref_path().parent.mkdir(parents=True, exist_ok=True)
            resolver._ref_path().write_text(commit, encoding="utf-8")
        final = resolver.root / commit / profile
        attrs = dict(source=f"{repo_id}@{resolver.rev_name}", repo_id=repo_id, revision=resolver.rev_name,
                     commit=commit, precision=precision)
        label = resolver.label(commit)

        def get_checkpoint() -> pathlib.Path:
            if listing is not None:
                paths = sorted(p for p in listing if not any(
                    fnmatch.fnmatch(p.rsplit("/", 1)[-1], pattern) for pattern in CHECKPOINT_IGNORE))
                return resolver._download(commit, paths, f"the checkpoint {label}", listing, force_download)
            from huggingface_hub import snapshot_download
            from huggingface_hub.errors import LocalEntryNotFoundError

            try:
                return pathlib.Path(snapshot_download(
                    repo_id, revision=commit, cache_dir=str(resolver.hf_cache), local_files_only=True,
                    ignore_patterns=CHECKPOINT_IGNORE, tqdm_class=_DownloadProgress(reporter, "", 0, 0).tqdm_class()))
            except LocalEntryNotFoundError as exc:
                raise ModelNotAvailableError(_offline_help(
                    repo_id, precision, f"Offline, and the checkpoint {label} is not cached.")) from exc

    with _folder_lock(cache, final):
        if final.is_dir() and not force_download:
            try:
                _ready_manifest(final, checksums)
            except ModelFolderError as exc:
                reporter.notice("verify", f"The built folder {final} is damaged ({exc}); building it again.")
            else:
                return _finish(ResolvedModel.make(final, repaired=False, **attrs), reporter)
        checkpoint = get_checkpoint()
        from convert.pipeline import convert_checkpoint

        tmp = final.with_name(final.name + f".building-{uuid.uuid4().hex[:8]}")
        reporter.emit("build", f"converting {label} to ONNX (profile {profile}); this takes a while")
        try:
            convert_checkpoint(checkpoint, tmp, profile=profile, include_codec=True, bidirectional=True,
                               progress=lambda message: reporter.emit("build", str(message)))
            _ready_manifest(tmp, checksums=False)
            if final.exists():
                shutil.rmtree(final)
            tmp.rename(final)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return _finish(ResolvedModel.make(final, repaired=False, **attrs), reporter)


# --- the entry point ------------------------------------------------------------------

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
        return "hub", repo, revision or None
    raise ModelNotAvailableError(
        f"{text!r} is neither an existing folder nor a Hub repo id (owner/name[@revision]).")


def resolve_model(spec: str | os.PathLike | None = None, precision: str | None = None,
                  cache_dir: str | os.PathLike | None = None, offline: bool | None = None, build: bool = False,
                  progress: ProgressCallback | None = None, *, revision: str | None = None,
                  checksums: bool = True, force_download: bool = False) -> ResolvedModel:
    """Return a ready model folder for ``spec`` at ``precision``.

    ``spec``: a local folder, a Hub repo id of ONNX folders (default
    ``onnx-community/OmniVoice-Onnx``; ``owner/name@revision`` pins a revision), or
    with ``build=True`` a PyTorch checkpoint (Hub repo id, default ``k2-fsa/OmniVoice``,
    or a local folder).  ``precision``: int4 | fp16 | fp32 | cuda.  ``offline``: None
    reads HF_HUB_OFFLINE now.  ``progress`` receives ``ProgressEvent``s.  ``checksums``:
    verify sha256 of a cached ready folder each time (sizes only when False).

    Raises ``ModelNotAvailableError`` (offline and not cached, Hub unreachable, no such
    repo or precision), ``ModelDownloadError`` (a download failed; run again to continue),
    ``BuildExtrasMissingError`` and ``ModelFolderError`` (a file is corrupt or missing;
    the message names it).
    """
    kind, value, spec_revision = parse_spec(spec, build)
    if precision is None:
        # a model folder given as it is keeps its own precision; otherwise the default
        precision = (precision_of_manifest(_read_json(value / MANIFEST_NAME)) if kind == "local" and not build
                     else None) or DEFAULT_PRECISION
    if precision not in PRECISIONS:
        raise ValueError(f"unknown precision {precision!r}; choose one of {', '.join(PRECISIONS)}")
    offline = env_offline() if offline is None else bool(offline)
    cache = pathlib.Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    reporter = _Reporter(progress)
    revision = revision or spec_revision
    with _hf_session(offline):
        if build:
            return _resolve_build(kind, value, revision, precision, cache, offline, reporter, checksums,
                                  force_download)
        if kind == "local":
            return _resolve_local(value, precision, cache, reporter, checksums)
        return _HubResolver(value, revision, precision, cache, offline, reporter, checksums, force_download).run()


# --- command line ---------------------------------------------------------------------


def add_model_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """--model, --precision, --offline (and --build, --force-download, --model-cache), shared by
    the CLI and the app."""
    group = parser.add_argument_group("model")
    group.add_argument("--model", default=None, metavar="DIR|REPO",
                       help=f"a model folder, or a Hub repo id[@revision] (default {DEFAULT_REPO}; "
                            f"with --build: the PyTorch checkpoint, default {DEFAULT_CHECKPOINT_REPO})")
    group.add_argument("--precision", default=None, choices=PRECISIONS,
                       help=f"which model folder to use (default: a model folder's own, else {DEFAULT_PRECISION})")
    group.add_argument("--offline", action="store_const", const=True, default=None,
                       help="use only what is cached (default: HF_HUB_OFFLINE)")
    group.add_argument("--build", action="store_true",
                       help="build the ONNX folder from the PyTorch checkpoint (needs requirements-dev.txt)")
    group.add_argument("--force-download", action="store_true",
                       help="download the model files again, even when cached")
    group.add_argument("--model-cache", default=None, metavar="DIR",
                       help=f"where ready model folders are kept (default ${CACHE_ENV} or "
                            "~/.cache/omnivoice-onnx-studio)")
    return parser


def resolve_from_args(args: argparse.Namespace, progress: ProgressCallback | None = None) -> ResolvedModel:
    """``resolve_model`` with the values of ``add_model_arguments``; progress goes to stderr by default."""
    return resolve_model(
        getattr(args, "model", None), precision=getattr(args, "precision", None),
        cache_dir=getattr(args, "model_cache", None), offline=getattr(args, "offline", None),
        build=getattr(args, "build", False), progress=progress or console_progress(),
        force_download=getattr(args, "force_download", False),
    )


def console_progress(stream=None, interval: float = 0.5) -> ProgressCallback:
    """A progress callback that writes short lines to stderr (download lines at most every ``interval``)."""
    stream = stream or sys.stderr
    state = {"last": 0.0, "stage": None, "message": None}

    def callback(event: ProgressEvent) -> None:
        now = time.monotonic()
        if event.notice:
            print(f"NOTE: {event.notice}", file=stream, flush=True)
            return
        if event.message == state["message"]:
            return
        throttled = event.stage == "download" and event.stage == state["stage"] and now - state["last"] < interval
        if throttled and event.bytes_done < event.bytes_total:
            return
        state.update(last=now, stage=event.stage, message=event.message)
        fraction = event.fraction
        prefix = f"[{event.stage}{'' if fraction is None else f' {fraction * 100:5.1f}%'}]"
        print(f"{prefix} {event.message}", file=stream, flush=True)

    return callback
