"""Saved voices: one ``.npz`` file per voice (``Voice.save``) in the user data folder.

List, save, load, rename, delete, export (the ``.npz`` and a ``.json`` describing it) and import;
every file is written under a temporary name and then renamed into place.

The folder is ``$OMNIVOICE_DATA/voices``, else
``${XDG_DATA_HOME:-~/.local/share}/omnivoice-onnx-studio/voices``.  On a shared
server (a Hugging Face Space), where every visitor would otherwise see every
other visitor's voices, the library is made per browser session
(``VoiceLibrary(private=True)``: ``voices/sessions/<session>/``).
"""

from __future__ import annotations

import json
import logging
import os
import pathlib
import re
import shutil
import time
from typing import Optional

from ..storage.atomic import TEMPORARY_SUFFIX, write_atomically
from ..engine.config import Limits
from ..errors import InvalidInput, ResourceLimitExceeded
from ..engine.voice import Voice

log = logging.getLogger(__name__)

DATA_ENV = "OMNIVOICE_DATA"
APP_DIR_NAME = "omnivoice-onnx-studio"
MAX_NAME_LENGTH = 60
#: where the start-up sweep moves voice files that cannot be read (under the library's root)
QUARANTINE_DIR = "quarantine"
#: saved voices one owner may keep (the library, or one session's folder): each can be megabytes
MAX_VOICES_PER_OWNER = 200
_NAME_RE = re.compile(r"[^\w\- .]+", re.UNICODE)


def data_dir() -> pathlib.Path:
    """The user data folder (not created here)."""
    if os.environ.get(DATA_ENV):
        return pathlib.Path(os.path.expanduser(os.environ[DATA_ENV]))
    base = os.environ.get("XDG_DATA_HOME") or os.path.join("~", ".local", "share")
    return pathlib.Path(os.path.expanduser(base)) / APP_DIR_NAME


def clean_name(name: str) -> str:
    """A voice name that is also a safe file name; ``InvalidInput`` when nothing usable is left."""
    cleaned = _NAME_RE.sub("", (name or "").strip()).strip(" .")
    cleaned = re.sub(r"\s+", " ", cleaned)[:MAX_NAME_LENGTH]
    if not cleaned:
        raise InvalidInput("Give the voice a name (letters, digits, spaces, - _ .) before saving it.")
    return cleaned


class VoiceLibrary:
    """List, save and load voices in a folder."""

    def __init__(self, root: Optional[pathlib.Path] = None, private: bool = False,
                 max_voices: int = MAX_VOICES_PER_OWNER):
        self.root = pathlib.Path(root) if root is not None else data_dir() / "voices"
        self.private = private
        self.max_voices = max_voices   # per folder: the one library, or each session's

    def folder(self, session: Optional[str] = None) -> pathlib.Path:
        if self.private:
            key = re.sub(r"[^\w\-]", "", session or "") or "anonymous"
            return self.root / "sessions" / key
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
                except (InvalidInput, OSError) as exc:
                    target = self.root / QUARANTINE_DIR / path.relative_to(self.root).parent / \
                        f"{path.name}.{time.strftime('%Y%m%d-%H%M%S')}"
                    target.parent.mkdir(parents=True, exist_ok=True)
                    shutil.move(str(path), target)
                    log.warning("voice file %s cannot be read (%s); moved to %s", path, exc, target)
                    moved.append(target)
        return moved

    def names(self, session: Optional[str] = None) -> list[str]:
        folder = self.folder(session)
        if not folder.is_dir():
            return []
        return sorted((p.stem for p in folder.glob("*.npz") if p.is_file()), key=str.casefold)

    def path(self, name: str, session: Optional[str] = None) -> pathlib.Path:
        return self.folder(session) / f"{clean_name(name)}.npz"

    def save(self, voice: Voice, name: str, session: Optional[str] = None, overwrite: bool = True) -> pathlib.Path:
        name = clean_name(name)
        path = self.path(name, session)
        if path.exists() and not overwrite:
            raise InvalidInput(f"A voice named {name!r} exists already; choose another name.", param="name")
        if not path.exists() and len(self.names(session)) >= self.max_voices:
            raise ResourceLimitExceeded(f"There are {self.max_voices} saved voices already, the most kept for one "
                                        "owner; delete one before saving another.", param="max_voices")
        voice.name = name
        return write_voice(voice, path)

    def load(self, name: str, session: Optional[str] = None, max_frames: Optional[int] = None) -> Voice:
        """The voice ``name``, checked by ``Voice.load`` (``max_frames``: the longest reference allowed)."""
        path = self._existing(name, session)
        return Voice.load(path) if max_frames is None else Voice.load(path, max_frames=max_frames)

    def _existing(self, name: str, session: Optional[str]) -> pathlib.Path:
        path = self.path(name, session)
        if not path.is_file():
            raise InvalidInput(f"There is no saved voice named {name!r}; the saved voices are: "
                               f"{', '.join(self.names(session)) or 'none'} (save one from the Clone tab first).",
                               param="voice")
        return path

    def created_at(self, name: str, session: Optional[str] = None) -> int:
        """When the voice ``name`` was saved (Unix seconds: its file's modification time)."""
        return int(self._existing(name, session).stat().st_mtime)

    def delete(self, name: str, session: Optional[str] = None) -> None:
        """Remove the voice ``name``; ``InvalidInput`` when there is none."""
        self._existing(name, session).unlink()

    def rename(self, name: str, new_name: str, session: Optional[str] = None) -> str:
        """Give the voice ``name`` the name ``new_name`` (refused when that is taken); returns the name used."""
        voice = self.load(name, session)
        new_name = clean_name(new_name)
        taken = {n.casefold(): n for n in self.names(session) if n.casefold() != clean_name(name).casefold()}
        if new_name.casefold() in taken:
            raise InvalidInput(f"A voice named {taken[new_name.casefold()]!r} exists already; choose another name.",
                               param="name")
        self.save(voice, new_name, session)
        if clean_name(name) != new_name:
            old = self.path(name, session)
            if old.exists() and old.resolve() != self.path(new_name, session).resolve():
                old.unlink()
        return new_name

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
        return export_voice(voice, folder / f"{voice.name or clean_name(name)}.npz")

    def import_file(self, path: os.PathLike | str, name: Optional[str] = None, session: Optional[str] = None,
                    max_frames: Optional[int] = None) -> str:
        """Save the voice file ``path`` (checked by ``Voice.load``) under ``name`` (default: its own);
        refused when the name is taken.  Returns the name used."""
        voice = Voice.load(path) if max_frames is None else Voice.load(path, max_frames=max_frames)
        name = clean_name(name or voice.name or pathlib.Path(path).stem)
        self.save(voice, name, session, overwrite=False)
        return name


def export_voice(voice: Voice, target: pathlib.Path) -> list[pathlib.Path]:
    """``voice`` as ``target`` (an ``.npz``) and, beside it, a ``.json`` saying what it is."""
    write_voice(voice, target)
    info = {"name": voice.name, "transcript": voice.transcript, "seconds": round(voice.seconds, 2),
            "language": voice.language, "transcript_source": voice.transcript_source, "file": target.name}
    about = target.with_suffix(".json")
    write_atomically(about, json.dumps(info, ensure_ascii=False, indent=2).encode("utf-8"))
    return [target, about]


def write_voice(voice: Voice, path: pathlib.Path) -> pathlib.Path:
    """``voice.save`` to ``path`` (atomic: a temporary name, fsync, rename)."""
    return voice.save(path)
