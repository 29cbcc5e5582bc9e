"""Talking to the Hub: the settings of one call, a repo's commit and file list, and downloads
into the Hugging Face cache checked against the Hub's sizes and checksums.

Every huggingface_hub call gets the endpoint, token and cache directory explicitly; nothing
of huggingface_hub is changed for the process.  Its offline switch (HF_HUB_OFFLINE, read
when huggingface_hub is imported) is respected: when it is on, we are offline too.

Resuming: huggingface_hub retries a transfer cut in the middle with an HTTP Range request
from the last complete chunk (``huggingface_hub.constants.DOWNLOAD_CHUNK_SIZE``), and files
completed before a failed run are kept in its cache and not fetched again.  huggingface_hub
>= 1.x deletes the partial file of a run that fails, so a file that was not complete starts
again from zero in the next run.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import pathlib
import re

from ..errors import ModelNotAvailable
from ..storage.digests import file_sha256
from .cache import RepoCache, RepoFile, hf_cache_dir
from .progress import DownloadProgress, Reporter, format_bytes


class ModelDownloadError(ModelNotAvailable):
    """A download failed or was cut; what was complete is kept and the next run continues."""


def env_offline() -> bool:
    """HF_HUB_OFFLINE (or TRANSFORMERS_OFFLINE) as set now."""
    return any(os.environ.get(name, "").strip().upper() in {"1", "ON", "YES", "TRUE"}
               for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"))


@dataclasses.dataclass(frozen=True)
class HubSettings:
    """What every huggingface_hub call of one resolution is given."""

    endpoint: str
    token: str | None
    hf_cache: pathlib.Path
    offline: bool

    @classmethod
    def from_environment(cls, offline: bool | None = None) -> "HubSettings":
        """HF_ENDPOINT, HF_TOKEN (or the saved login), HF_HUB_CACHE / HF_HOME as set now.
        ``offline`` None reads HF_HUB_OFFLINE now; huggingface_hub's own offline mode wins."""
        from huggingface_hub import constants, get_token

        offline = env_offline() if offline is None else bool(offline)
        return cls(endpoint=(os.environ.get("HF_ENDPOINT") or constants.ENDPOINT).rstrip("/"),
                   token=get_token(), hf_cache=hf_cache_dir(),
                   offline=offline or bool(constants.HF_HUB_OFFLINE))


def connection_errors() -> tuple[type[BaseException], ...]:
    """What huggingface_hub raises when the Hub cannot be reached (its HTTP client is httpx2)."""
    import httpx2
    from huggingface_hub.errors import OfflineModeIsEnabled

    return (httpx2.ConnectError, httpx2.TimeoutException, OfflineModeIsEnabled, httpx2.RemoteProtocolError)


def git_blob_sha1(path: pathlib.Path, block: int = 1 << 20) -> str:
    """The git blob id of a file (the Hub's checksum of files not stored in LFS)."""
    digest = hashlib.sha1(b"blob %d\0" % path.stat().st_size)
    with open(path, "rb") as handle:
        while chunk := handle.read(block):
            digest.update(chunk)
    return digest.hexdigest()


def check_against_listing(path: pathlib.Path, entry: RepoFile, where: str) -> str | None:
    """None when ``path`` matches the Hub's size and checksum, else what is wrong."""
    if not path.is_file():
        return f"{entry.path} is missing from {where}"
    size = path.stat().st_size
    if size != entry.size:
        return f"{entry.path} has {size} bytes, the Hub lists {entry.size} (in {where})"
    if entry.sha256:
        if file_sha256(path) != entry.sha256:
            return f"{entry.path} fails the Hub's sha256 checksum (in {where}): the file is corrupt"
    elif entry.git_sha1 and len(entry.git_sha1) == 40:
        if git_blob_sha1(path) != entry.git_sha1:
            return f"{entry.path} fails the Hub's git checksum (in {where}): the file is corrupt"
    return None


def offline_help(repo_id: str, precision: str, what: str) -> str:
    return (
        f"{what} To get it, run the same command once with network access (without --offline / "
        f"HF_HUB_OFFLINE=1; --model {repo_id} --precision {precision}), and it is cached for offline use; "
        "or pass a local model folder with --model DIR (build one with `python -m convert`)."
    )


def _glob_escape(path: str) -> str:
    return re.sub(r"([\[\]*?])", r"[\1]", path)


class HubRepo:
    """One repo at one revision on the Hub, with our record of it (``RepoCache``).

    ``offline`` starts as the settings say and turns on when the Hub cannot be reached:
    from then on only the Hugging Face cache is used.
    """

    def __init__(self, repo_id: str, revision: str | None, precision: str, settings: HubSettings,
                 store: RepoCache, reporter: Reporter):
        self.repo_id, self.revision, self.precision = repo_id, revision, precision
        self.rev_name = revision or "main"
        self.settings, self.store, self.reporter = settings, store, reporter
        self.offline = settings.offline

    def label(self, commit: str, folder: str | None = None) -> str:
        where = "" if folder is None else f" ({folder + '/' if folder else 'root'})"
        return f"{self.repo_id}@{commit[:8]}{where}"

    def _fetch_listing(self) -> tuple[str, dict[str, RepoFile]]:
        from huggingface_hub import HfApi
        from huggingface_hub.hf_api import RepoFile as HubFile

        api = HfApi(endpoint=self.settings.endpoint, token=self.settings.token)
        info = api.repo_info(self.repo_id, revision=self.revision)
        if not info.sha:
            raise ModelNotAvailable(f"{self.settings.endpoint} gave no commit for {self.repo_id}@{self.rev_name}")
        files = {}
        for entry in api.list_repo_tree(self.repo_id, recursive=True, revision=info.sha):
            if isinstance(entry, HubFile):
                files[entry.path] = RepoFile(entry.path, int(entry.size),
                                             sha256=entry.lfs.sha256 if entry.lfs is not None else None,
                                             git_sha1=entry.blob_id)
        return info.sha, files

    def locate(self, subject: str) -> tuple[str, dict[str, RepoFile] | None]:
        """The commit of the revision and the repo's listing: from the Hub, else from the caches
        (with a notice when the Hub could not be reached).  ``subject`` names what is wanted in
        the error raised when neither has it."""
        from huggingface_hub.errors import (GatedRepoError, HfHubHTTPError, RepositoryNotFoundError,
                                            RevisionNotFoundError)

        endpoint = self.settings.endpoint
        unreachable = None
        if not self.offline:
            self.reporter.emit("resolve", f"asking {endpoint} for {self.repo_id}@{self.rev_name}")
            try:
                commit, listing = self._fetch_listing()
            except (RepositoryNotFoundError, GatedRepoError) as exc:
                raise ModelNotAvailable(f"{self.repo_id} was not found on {endpoint}, or it needs a login "
                                        f"(set HF_TOKEN): {exc}") from exc
            except RevisionNotFoundError as exc:
                raise ModelNotAvailable(f"{self.repo_id} has no revision {self.rev_name!r}: {exc}") from exc
            except connection_errors() as exc:
                unreachable = exc
            except HfHubHTTPError as exc:
                status = getattr(getattr(exc, "response", None), "status_code", 0) or 0
                if status < 500:
                    raise ModelNotAvailable(f"{endpoint} refused {self.repo_id}: {exc}") from exc
                unreachable = exc
            else:
                self.store.remember(self.rev_name, commit, listing)
                return commit, listing

        self.offline = True
        commit = self.store.cached_commit(self.rev_name)
        if commit is None:
            what = (f"Offline, and {subject} was never downloaded: no cached copy." if unreachable is None else
                    f"The Hub at {endpoint} could not be reached ({type(unreachable).__name__}: {unreachable}) "
                    f"and {subject} is not cached.")
            raise ModelNotAvailable(offline_help(self.repo_id, self.precision, what))
        if unreachable is not None:
            self.reporter.notice("resolve", f"The Hub at {endpoint} could not be reached "
                                            f"({type(unreachable).__name__}); using the cached copy of "
                                            f"{self.label(commit)}.")
        return commit, self.store.cached_listing(commit)

    def _snapshot(self, commit: str, progress: DownloadProgress, force: bool = False, **patterns) -> pathlib.Path:
        from huggingface_hub import snapshot_download

        return pathlib.Path(snapshot_download(
            self.repo_id, revision=commit, cache_dir=str(self.settings.hf_cache), endpoint=self.settings.endpoint,
            token=self.settings.token, local_files_only=self.offline, force_download=force,
            tqdm_class=progress.tqdm_class(), **patterns))

    def download(self, commit: str, paths: list[str], label: str, listing: dict[str, RepoFile],
                 force: bool = False) -> pathlib.Path:
        """Fetch ``paths`` of ``commit`` into the Hugging Face cache (only what is not there yet,
        unless ``force``); return the snapshot folder."""
        from huggingface_hub import try_to_load_from_cache
        from huggingface_hub.errors import LocalEntryNotFoundError

        hf_cache = self.settings.hf_cache
        missing = [p for p in paths if force or not isinstance(
            try_to_load_from_cache(self.repo_id, p, cache_dir=hf_cache, revision=commit), str)]
        progress = DownloadProgress(self.reporter, f"downloading {label}", len(paths),
                                    sum(listing[p].size for p in missing if p in listing))
        if missing:
            self.reporter.emit("download", f"downloading {len(missing)} of {len(paths)} files of {label} "
                               f"({format_bytes(progress.bytes_total)}) into {hf_cache}",
                               files_total=len(paths), bytes_total=progress.bytes_total)
        try:
            path = self._snapshot(commit, progress, force, allow_patterns=[_glob_escape(p) for p in paths])
        except LocalEntryNotFoundError as exc:
            raise ModelNotAvailable(offline_help(
                self.repo_id, self.precision,
                f"The Hub cannot be used (offline or unreachable) and {len(missing)} of the {len(paths)} files "
                f"of {label} ({format_bytes(progress.bytes_total)}) are not in the Hugging Face cache "
                f"({hf_cache}): {', '.join(missing[:3])}{' ...' if len(missing) > 3 else ''}.")) from exc
        except (OSError, *connection_errors()) as exc:
            raise ModelDownloadError(
                f"Downloading {label} from {self.settings.endpoint} failed ({type(exc).__name__}: {exc}). "
                f"Files already complete are kept in {hf_cache}; run again to continue.") from exc
        if missing:
            progress.finish()
        return path

    def cached_snapshot(self, commit: str, label: str, ignore_patterns: list[str]) -> pathlib.Path:
        """The snapshot of ``commit`` as the Hugging Face cache holds it (offline, no listing)."""
        from huggingface_hub.errors import LocalEntryNotFoundError

        try:
            return self._snapshot(commit, DownloadProgress(self.reporter, "", 0, 0), ignore_patterns=ignore_patterns)
        except LocalEntryNotFoundError as exc:
            raise ModelNotAvailable(offline_help(
                self.repo_id, self.precision, f"Offline, and {label} is not cached.")) from exc
