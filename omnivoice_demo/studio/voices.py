"""Saved voices: one ``.npz`` file per voice (``Voice.save``) in the user data folder.

The folder is ``$OMNIVOICE_DATA/voices``, else
``${XDG_DATA_HOME:-~/.local/share}/omnivoice-onnx-studio/voices``.  On a shared
server (a Hugging Face Space), where every visitor would otherwise see every
other visitor's voices, the library is made per browser session
(``VoiceLibrary(private=True)``: ``voices/sessions/<session>/``).
"""

from __future__ import annotations

import os
import pathlib
import re
from typing import Optional

from ..errors import InvalidInput
from ..voice import Voice

DATA_ENV = "OMNIVOICE_DATA"
APP_DIR_NAME = "omnivoice-onnx-studio"
MAX_NAME_LENGTH = 60
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

    def __init__(self, root: Optional[pathlib.Path] = None, private: bool = False):
        self.root = pathlib.Path(root) if root is not None else data_dir() / "voices"
        self.private = private

    def folder(self, session: Optional[str] = None) -> pathlib.Path:
        if self.private:
            key = re.sub(r"[^\w\-]", "", session or "") or "anonymous"
            return self.root / "sessions" / key
        return self.root

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
            raise InvalidInput(f"A voice named {name!r} exists already; choose another name.")
        voice.name = name
        return voice.save(path)

    def load(self, name: str, session: Optional[str] = None, max_frames: Optional[int] = None) -> Voice:
        """The voice ``name``, checked by ``Voice.load`` (``max_frames``: the longest reference allowed)."""
        path = self.path(name, session)
        if not path.is_file():
            raise InvalidInput(f"There is no saved voice named {name!r} (in {path.parent}); save one from the "
                             "Clone tab first, or pick another voice.")
        return Voice.load(path) if max_frames is None else Voice.load(path, max_frames=max_frames)

    def delete(self, name: str, session: Optional[str] = None) -> None:
        path = self.path(name, session)
        if path.is_file():
            path.unlink()
