"""The output folder of a batch: atomic files, sidecars, and what a rerun may skip.

For item ``ID`` the folder holds ``ID.wav`` (or ``.flac``), ``ID.json`` (the
sidecar: status, its render key and the key's parts, seed, timings, chunk
times, sha256 of the audio) and, when asked for, ``ID.srt`` / ``ID.vtt``.
Every file is written to a temporary name in the same folder, flushed to
disk, then renamed over the final name, so a file is either whole or absent;
the sidecar is written last, so a sidecar saying ``done`` means its audio is
complete.  A rerun reuses an item when its sidecar says ``done`` with the same
render key (``engine.render_key``) and the audio's sha256 still matches; items whose sidecar says
``failed`` are left alone unless failures are retried.  A sidecar or audio file that is a symbolic link is
never followed nor trusted (``storage.links``): the item is made again, and the rename replaces the link.
"""

from __future__ import annotations

import contextlib
import json
import pathlib
from typing import Optional

from ..errors import InvalidInput
from ..storage.atomic import replacing_path, storage_problem
from ..storage.links import is_regular_file, read_regular
from ..storage.digests import file_sha256

#: how a batch's files in progress start (``remove_stale_parts`` removes what a killed run left)
TEMP_MARK = ".part-"
LOCK_NAME = ".batch.lock"


class FolderNotWritable(InvalidInput):
    """A file of the output folder could not be written: its disk is full, over quota or read-only.  The run stops
    (every later file would fail too); what was made is kept, and the same command run again reuses it."""


class OutputFolder:
    def __init__(self, path):
        self.path = pathlib.Path(path)

    def create(self) -> "OutputFolder":
        try:
            self.path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise InvalidInput(f"Cannot create the output folder {self.path.name}: {exc.strerror}.",
                               param="output") from None
        return self

    def audio_path(self, item_id: str, audio_format: str) -> pathlib.Path:
        return self.path / f"{item_id}.{audio_format}"

    def sidecar_path(self, item_id: str) -> pathlib.Path:
        return self.path / f"{item_id}.json"

    def subtitle_path(self, item_id: str, kind: str) -> pathlib.Path:
        return self.path / f"{item_id}.{kind}"

    # --- writing ------------------------------------------------------------------------

    def write_bytes(self, final: pathlib.Path, data: bytes) -> None:
        with self.atomic(final) as temp:
            temp.write_bytes(data)

    def write_json(self, final: pathlib.Path, data: dict) -> None:
        self.write_bytes(final, (json.dumps(data, indent=1, ensure_ascii=False) + "\n").encode("utf-8"))

    def write_audio(self, final: pathlib.Path, audio, rate: int, audio_format: str, subtype: str) -> None:
        """``audio`` encoded in memory (soundfile), then written as any file is: a full disk is then an ``OSError``
        that says so (libsndfile writing to a full disk says "problem with initialization of the flac decoder")."""
        import io

        import soundfile

        buffer = io.BytesIO()
        soundfile.write(buffer, audio, rate, subtype=subtype, format=audio_format.upper())
        self.write_bytes(final, buffer.getvalue())

    @contextlib.contextmanager
    def atomic(self, final: pathlib.Path):
        """A temporary path next to ``final`` (``.part-<name>-<random>.part``); renamed over it (after fsync) when
        the block succeeds, else removed (``storage.atomic.replacing_path``).  A full, over-quota or read-only disk
        is a ``FolderNotWritable`` that says what to do."""
        try:
            with replacing_path(final, prefix=f"{TEMP_MARK}{final.name}-") as temp:
                yield temp
        except OSError as exc:
            raise self.not_writable(exc, final.name) from None

    def not_writable(self, exc: OSError, name: str) -> Exception:
        """``exc`` as a ``FolderNotWritable`` when it says the disk is full, over quota or read-only; else itself."""
        problem = storage_problem(exc)
        if problem is None:
            return exc
        return FolderNotWritable(f"Cannot write {name}: the disk of the output folder {self.path.name} {problem}. "
                                 "Free some space (or make the folder writable) and run the same command again: "
                                 "every file made so far is kept and reused.")

    def remove_stale_parts(self) -> int:
        """Delete temporary files left by a run that was killed (call while holding the lock)."""
        removed = 0
        for temp in self.path.glob(f"{TEMP_MARK}*"):
            with contextlib.suppress(OSError):
                temp.unlink()
                removed += 1
        return removed

    @contextlib.contextmanager
    def lock(self):
        """Only one batch run per output folder (an ``flock`` held for the run)."""
        import fcntl

        try:
            if (self.path / LOCK_NAME).is_symlink():   # never opened through a link (``storage.links``)
                (self.path / LOCK_NAME).unlink()
            handle = open(self.path / LOCK_NAME, "a+")
        except OSError as exc:
            raise self.not_writable(exc, LOCK_NAME) from None
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.close()
            raise InvalidInput(f"Another batch run is writing to {self.path.name}; wait for it or use another "
                               "output folder.", param="output") from None
        try:
            yield self
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
            handle.close()

    # --- reading --------------------------------------------------------------------------

    def read_sidecar(self, item_id: str) -> Optional[dict]:
        """The item's sidecar; None when there is none, it is unreadable, or it is no regular file of this folder
        (a link, to a file elsewhere, is never followed nor trusted: the item is made again, ``storage.links``)."""
        data = read_regular(self.sidecar_path(item_id))
        try:
            record = json.loads(data) if data is not None else None
        except ValueError:
            return None
        return record if isinstance(record, dict) else None

    def finished(self, item_id: str, key: str, audio_format: str) -> Optional[dict]:
        """The sidecar of a finished item whose key matches and whose audio checks, else None."""
        sidecar = self.read_sidecar(item_id)
        if not sidecar or sidecar.get("status") != "done" or sidecar.get("key") != key:
            return None
        audio = self.audio_path(item_id, audio_format)
        if not is_regular_file(audio) or file_sha256(audio) != sidecar.get("sha256"):
            return None
        return sidecar

    def failed(self, item_id: str, key: str) -> Optional[dict]:
        """The sidecar of an item that failed with these same inputs, else None."""
        sidecar = self.read_sidecar(item_id)
        if sidecar and sidecar.get("status") == "failed" and sidecar.get("key") == key:
            return sidecar
        return None


