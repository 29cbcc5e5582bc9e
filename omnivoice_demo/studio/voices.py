"""Saved voices: ``VoiceStore``, the one interface every front end uses, and ``VoiceLibrary``, the folder store
(the default): one ``.npz`` file per voice (``Voice.save``) in the user data folder.  The other store, a
PostgreSQL database shared by several processes and machines, is ``studio.voice_db``; ``studio.voice_store``
chooses one from ``--voice-store URL``.

List, save, load, rename, delete, export (the ``.npz`` and a ``.json`` describing it) and import;
every file is written under a temporary name and then renamed into place.  A voice's style variants
(``studio.variants``) live in its own file, so each of these carries them.

The folder is ``$OMNIVOICE_DATA/voices``, else
``${XDG_DATA_HOME:-~/.local/share}/omnivoice-onnx-studio/voices``.  On a shared
server (a Hugging Face Space), where every visitor would otherwise see every
other visitor's voices, the library is made per browser session
(``VoiceLibrary(private=True)``: ``voices/sessions/<session>/``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import json
import logging
import os
import pathlib
import re
import shutil
import threading
import time
from typing import Callable, Optional

import filelock

from ..storage.atomic import TEMPORARY_SUFFIX, storage_problem, write_atomically
from ..settings.limits import Limits
from ..errors import InvalidInput, ResourceLimitExceeded, StorageNotWritable, excerpt
from ..storage.voice_file import Voice, stored_tags
from .variants import check_variants, variant_listing
from ..text.voice_names import check_free, clean_name, find_name, look_alike_key

__all__ = ["StoreState", "VoiceEntry", "VoiceLibrary", "VoiceStore", "clean_name", "data_dir", "export_voice",
           "write_voice"]

log = logging.getLogger(__name__)

DATA_ENV = "OMNIVOICE_DATA"
APP_DIR_NAME = "omnivoice-onnx-studio"
#: where the start-up sweep moves voice files that cannot be read (under the library's root)
QUARANTINE_DIR = "quarantine"
#: saved voices one owner may keep (the library, or one session's folder): each can be megabytes
MAX_VOICES_PER_OWNER = 200


def data_dir() -> pathlib.Path:
    """The user data folder (not created here)."""
    if os.environ.get(DATA_ENV):
        return pathlib.Path(os.path.expanduser(os.environ[DATA_ENV]))
    base = os.environ.get("XDG_DATA_HOME") or os.path.join("~", ".local", "share")
    return pathlib.Path(os.path.expanduser(base)) / APP_DIR_NAME


@dataclasses.dataclass(frozen=True)
class VoiceEntry:
    """One saved voice as a list shows it: its name, when it was saved (Unix seconds) and its style tags."""

    name: str
    created_at: int
    tags: list[str]


@dataclasses.dataclass(frozen=True)
class StoreState:
    """How the store's last use went (``status``: ``up``, ``unavailable``, or ``unknown`` before any), when
    (Unix seconds) and why not; read without asking the store (``/ready``)."""

    status: str = "unknown"
    since: Optional[float] = None
    message: str = ""


class VoiceStore:
    """Saved voices by name, per owner (``session``: in shared mode each owner's own; else one library).

    The methods every store has (``VoiceLibrary``: a folder; ``voice_db.PostgresVoiceStore``: a database):
    ``names``, ``find`` (the saved voice a name asks for, or None), ``listing`` (a page of names, dates and tags),
    ``state`` (how the last use went), ``load``, ``save``, ``change``, ``rename``, ``delete``, ``tags``, ``created_at``, ``path`` (a
    local ``.npz`` of the voice, for batch workers), ``sweep`` (at start-up), ``export`` and ``import_file``
    (through ``load`` and ``save``: a file exported from one store imports into another).  Names are compared
    as ``text.voice_names`` says; a name taken is an ``InvalidInput`` with ``param="name"``."""

    root: pathlib.Path      # a local folder of this store (the folder itself, or the database's local cache)
    private: bool
    max_voices: int
    max_variants: int

    def describe(self) -> str:
        """Where the voices are, for messages (a database's address without its password)."""
        return str(self.root)

    def where(self, session: Optional[str] = None) -> str:
        """Where ``session``'s voices are, for messages (a folder, or the database)."""
        return self.describe()

    def private_paths(self) -> list[pathlib.Path]:
        """Server paths that error messages must not show in shared mode."""
        return [self.root]

    def check(self) -> None:
        """At start-up: ``StoreUnavailable`` when the store cannot be used (a folder always can)."""

    def close(self) -> None:
        """Release what the store holds (a database's connections)."""

    def sweep(self) -> list[pathlib.Path]:
        return []

    def names(self, session: Optional[str] = None) -> list[str]:
        raise NotImplementedError

    def find(self, name: str, session: Optional[str] = None) -> Optional[str]:
        """The saved voice ``name`` asks for (``find_name``), or None."""
        return find_name(name, self.names(session))

    def listing(self, session: Optional[str] = None, limit: int = 100,
                after: Optional[str] = None) -> tuple[list[VoiceEntry], bool]:
        """A page of the saved voices: at most ``limit``, ordered by the name's key (``look_alike_key``), those
        whose key comes after ``after``'s; and whether more follow."""
        limit = max(1, int(limit))
        names = sorted(self.names(session), key=look_alike_key)
        if after:
            names = [name for name in names if look_alike_key(name) > look_alike_key(after)]
        page = [entry for entry in (self._entry(name, session) for name in names[:limit]) if entry is not None]
        return page, len(names) > limit

    def _entry(self, name: str, session: Optional[str]) -> Optional[VoiceEntry]:
        return VoiceEntry(name, self.created_at(name, session), self.tags(name, session))

    def state(self) -> StoreState:
        """How the store's last use went (a folder is always up)."""
        return StoreState("up")

    def load(self, name: str, session: Optional[str] = None, max_frames: Optional[int] = None) -> Voice:
        raise NotImplementedError

    def save(self, voice: Voice, name: str, session: Optional[str] = None, overwrite: bool = False):
        raise NotImplementedError

    def change(self, name: str, update: Callable[[Voice], Voice], session: Optional[str] = None) -> Voice:
        raise NotImplementedError

    def rename(self, name: str, new_name: str, session: Optional[str] = None) -> str:
        raise NotImplementedError

    def delete(self, name: str, session: Optional[str] = None) -> None:
        raise NotImplementedError

    def tags(self, name: str, session: Optional[str] = None) -> list[str]:
        raise NotImplementedError

    def created_at(self, name: str, session: Optional[str] = None) -> int:
        raise NotImplementedError

    def path(self, name: str, session: Optional[str] = None) -> pathlib.Path:
        raise NotImplementedError

    def admit(self, voice: Voice, name: str, names: list[str], overwrite: bool) -> Optional[str]:
        """Check that ``voice`` may be saved as ``name`` beside the owner's ``names`` (taken, the owner's
        ``max_voices``, its variants) and give it its name.  Returns the saved voice it replaces (``overwrite``
        of the same name, ``find_name``), else None.  Every store calls it inside its one step of saving."""
        same = find_name(name, names) if overwrite else None
        check_not_built_in(name)
        check_free(name, names, itself=same)
        if same is None and len(names) >= self.max_voices:
            raise ResourceLimitExceeded(f"There are {self.max_voices} saved voices already, the most kept for "
                                        "one owner; delete one before saving another.", param="max_voices")
        check_variants(voice, self.max_variants)
        voice.name = same or name
        return same

    def export(self, name: str, folder: os.PathLike | str, session: Optional[str] = None) -> list[pathlib.Path]:
        """Copy the voice ``name`` to ``folder`` (created when missing): ``NAME.npz`` (the voice) and ``NAME.json``
        (what it is)."""
        voice = self.load(name, session)
        folder = pathlib.Path(folder)
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise InvalidInput(f"Cannot create the folder {folder} ({exc.strerror}); choose another.",
                               param="folder") from exc
        return export_voice(voice, folder / f"{clean_name(voice.name or name)}.npz")

    def import_file(self, path: os.PathLike | str, name: Optional[str] = None, session: Optional[str] = None,
                    max_frames: Optional[int] = None) -> str:
        """Save the voice file ``path`` (checked by ``Voice.load``) under ``name`` (default: its own);
        refused when the name is taken.  Returns the name used."""
        voice = Voice.load(path) if max_frames is None else Voice.load(path, max_frames=max_frames)
        name = clean_name(name or voice.name or pathlib.Path(path).stem)
        self.save(voice, name, session)
        return name


def check_not_built_in(name: str) -> str:
    """``name``, or ``InvalidInput`` when it is a built-in voice's (``auto``, a named design, a design word):
    those are resolved before the saved voices, without asking the store, so a saved voice could not be
    asked for by it."""
    from .vocabulary import is_built_in

    if is_built_in(name):
        raise InvalidInput(f"{excerpt(name)} is the name of a built-in voice (GET /v1/audio/voices lists them); "
                           "choose another name for the saved voice.", param="name")
    return name


def owner_key(session: Optional[str]) -> str:
    """A shared server's owner (a session) as a folder name and a database's owner: word characters only."""
    return re.sub(r"[^\w\-]", "", session or "") or "anonymous"


class VoiceLibrary(VoiceStore):
    """List, save and load voices in a folder (the default store: embedded, nothing to run)."""

    def __init__(self, root: Optional[pathlib.Path] = None, private: bool = False,
                 max_voices: int = MAX_VOICES_PER_OWNER, max_variants: int = Limits().max_voice_variants):
        self.root = pathlib.Path(root) if root is not None else data_dir() / "voices"
        self.private = private
        self.max_voices = max_voices   # per folder: the one library, or each session's
        self.max_variants = max_variants   # style variants one voice keeps (``Limits.max_voice_variants``)
        self._lock = threading.RLock()  # a name's check and its write are one step for this process's threads

    @contextlib.contextmanager
    def _writing(self):
        """A name's check and its write as one step: for this process's threads (a lock) and for other processes
        on the same folder (a lock file, ``filelock``; where the folder cannot hold one, read-only say, the
        thread lock alone, and the write itself says what is wrong)."""
        with self._lock:
            try:
                self.root.mkdir(parents=True, exist_ok=True)   # the lock beside the folder: its listing stays voices
                lock = filelock.FileLock(str(self.root.parent / f".{self.root.name}.lock"), timeout=60)
                lock.acquire()
            except (OSError, filelock.Timeout):
                lock = None
            try:
                yield
            except OSError as exc:   # a full or read-only folder: said, never an internal error (issue 49)
                problem = storage_problem(exc)
                if problem is None:
                    raise
                raise StorageNotWritable(
                    f"The saved voices cannot be changed now: the server's voices folder {problem}; the voices are "
                    "as they were. The server's operator must free some space or make the folder writable.",
                    full=exc.errno in (errno.ENOSPC, errno.EDQUOT)) from None
            finally:
                if lock is not None:
                    lock.release()

    def where(self, session: Optional[str] = None) -> str:
        return str(self.folder(session))

    def folder(self, session: Optional[str] = None) -> pathlib.Path:
        if self.private:
            return self.root / "sessions" / owner_key(session)
        return self.root

    def sweep(self) -> list[pathlib.Path]:
        """At start-up: move every voice file that cannot be read (a 0-byte or cut file from a crash or a
        full disk, before writes were atomic) to ``quarantine/``, so it is neither listed nor blocks its
        name, and remove unfinished temporary files.  Returns where the unreadable files went."""
        if not self.root.is_dir():
            return []
        roomy = Limits.local()  # the loosest bounds: only what no front end could read is moved
        moved = []
        folders = [self.root, *(p for p in (self.root / "sessions").glob("*") if p.is_dir())]
        for folder in folders:
            for leftover in folder.glob(f".*{TEMPORARY_SUFFIX}"):
                leftover.unlink(missing_ok=True)
            for path in folder.glob("*.npz"):
                try:
                    Voice.load(path, max_frames=roomy.max_reference_frames, max_bytes=roomy.max_upload_bytes)
                except Exception as exc:  # noqa: BLE001 (whatever stops it being read: it must not stop the start)
                    target = self.root / QUARANTINE_DIR / path.relative_to(self.root).parent / \
                        f"{path.name}.{time.strftime('%Y%m%d-%H%M%S')}"
                    target.parent.mkdir(parents=True, exist_ok=True)
                    shutil.move(str(path), target)
                    log.warning("voice file %s cannot be read (%s); moved to %s", path,
                                excerpt(str(exc) or type(exc).__name__, 200), target)
                    moved.append(target)
        return moved

    def names(self, session: Optional[str] = None) -> list[str]:
        """The saved voices' names (a file name that is not text, which no one could ask for, is left out)."""
        folder = self.folder(session)
        if not folder.is_dir():
            return []
        return sorted((p.stem for p in folder.glob("*.npz") if p.is_file() and _is_text(p.stem)), key=str.casefold)

    def _entry(self, name: str, session: Optional[str]) -> Optional[VoiceEntry]:
        path = self.folder(session) / f"{name}.npz"
        try:
            created = int(path.stat().st_mtime)
        except OSError:   # deleted since it was listed
            return None
        try:
            tags = stored_tags(path)
        except InvalidInput:
            tags = []
        return VoiceEntry(name, created, tags)

    def path(self, name: str, session: Optional[str] = None) -> pathlib.Path:
        """Where the voice ``name`` is (a saved one's own file, found by ``find_name``) or would be saved."""
        found = find_name(name, self.names(session))
        return self.folder(session) / f"{found or clean_name(name)}.npz"

    def save(self, voice: Voice, name: str, session: Optional[str] = None, overwrite: bool = False) -> pathlib.Path:
        """Save ``voice`` as ``name``; a name taken by another voice (``check_free``) is refused, unless
        ``overwrite`` and it is the same name (``name_key``): then that voice is replaced, under its own name."""
        name = clean_name(name)
        with self._writing():
            self.admit(voice, name, self.names(session), overwrite)
            return write_voice(voice, self.folder(session) / f"{voice.name}.npz")

    def change(self, name: str, update: Callable[[Voice], Voice], session: Optional[str] = None) -> Voice:
        """The saved voice ``name`` after ``update`` (a voice -> the changed voice: a style variant added or
        removed, ``studio.variants``), written back under its name (atomically, one step for this process)."""
        with self._writing():
            path = self._existing(name, session)
            voice = update(Voice.load(path))
            voice.name = path.stem
            write_voice(voice, path)
        return voice

    def tags(self, name: str, session: Optional[str] = None) -> list[str]:
        """The style tags of the voice ``name`` (its file's meta only; none when it cannot be read)."""
        try:
            return stored_tags(self._existing(name, session))
        except InvalidInput:
            return []

    def load(self, name: str, session: Optional[str] = None, max_frames: Optional[int] = None) -> Voice:
        """The voice ``name``, checked by ``Voice.load`` (``max_frames``: the longest reference allowed)."""
        path = self._existing(name, session)
        return Voice.load(path) if max_frames is None else Voice.load(path, max_frames=max_frames)

    def _existing(self, name: str, session: Optional[str]) -> pathlib.Path:
        found = find_name(name, self.names(session))
        if found is None:
            raise InvalidInput(f"There is no saved voice named {excerpt(name)} (save one from the Clone tab first, "
                               "or list the saved voices).", param="voice")
        return self.folder(session) / f"{found}.npz"

    def created_at(self, name: str, session: Optional[str] = None) -> int:
        """When the voice ``name`` was saved (Unix seconds: its file's modification time)."""
        return int(self._existing(name, session).stat().st_mtime)

    def delete(self, name: str, session: Optional[str] = None) -> None:
        """Remove the voice ``name``; ``InvalidInput`` when there is none."""
        with self._writing():
            self._existing(name, session).unlink()

    def rename(self, name: str, new_name: str, session: Optional[str] = None) -> str:
        """Give the voice ``name`` the name ``new_name``: refused when another voice has it (``check_free``); a
        change of case alone renames the same voice.  Returns the name used."""
        new_name = clean_name(new_name)
        with self._writing():
            old = self._existing(name, session)
            check_not_built_in(new_name)
            check_free(new_name, self.names(session), itself=old.stem)
            if new_name == old.stem:
                return new_name
            voice = Voice.load(old)
            voice.name = new_name
            new = write_voice(voice, self.folder(session) / f"{new_name}.npz")
            if not _same_file(old, new):  # a case-only rename on a case-insensitive disk wrote over the old file
                old.unlink()
        return new_name


def _is_text(name: str) -> bool:
    """Whether ``name`` can be written out (a file name of bytes that are not UTF-8 holds lone surrogates)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _same_file(a: pathlib.Path, b: pathlib.Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def export_voice(voice: Voice, target: pathlib.Path) -> list[pathlib.Path]:
    """``voice`` as ``target`` (an ``.npz``) and, beside it, a ``.json`` saying what it is: both or neither."""
    info = {"name": voice.name, "transcript": voice.transcript, "seconds": round(voice.seconds, 2),
            "language": voice.language, "transcript_source": voice.transcript_source, "file": target.name,
            "variants": variant_listing(voice, details=True)}
    about = target.with_suffix(".json")
    try:  # made before either file is written: a voice that cannot be described is not half exported
        text = json.dumps(info, ensure_ascii=False, indent=2).encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInput(f"The voice {excerpt(voice.name)} holds a character that is not valid Unicode (a lone "
                           "surrogate); it cannot be exported.") from None
    write_voice(voice, target)
    try:
        write_atomically(about, text, "voice's description")
    except BaseException:
        target.unlink(missing_ok=True)
        raise
    return [target, about]


def write_voice(voice: Voice, path: pathlib.Path) -> pathlib.Path:
    """``voice.save`` to ``path`` (atomic: a temporary name, fsync, rename)."""
    return voice.save(path)
