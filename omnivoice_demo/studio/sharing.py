"""Shared mode: when the app serves people other than its operator, visitors are kept apart.

Shared mode is on with ``SPACE_ID`` (a Hugging Face Space), ``--share`` (a
public gradio.live link), ``--shared``, or a ``--host`` that is not a loopback
address.  Then:

* the operator chooses the models with flags; the handlers that load, unload
  or switch a model, or take a path or repo id, call ``refuse_model_changes``
  first (a check on the server, whatever the page shows or a client sends);
* each visitor's voices live in their own browser (``gr.BrowserState``), as
  ``Voice.to_dict`` values in a ``BrowserVoices`` mapping: the server keeps
  none, a reload keeps them, and no visitor can list or use another's;
* messages never show a server path (``redact_paths``).

Saving under a name that is taken keeps both (``unique_name``: "Anna 2"); names compare as
``voice_names`` says, in the browser as in the voice folder.
"""

from __future__ import annotations

import ipaddress
import os
import pathlib
import re
import tempfile
from typing import Callable, Iterable, Mapping, Optional

from ..settings.limits import Limits
from ..errors import InvalidInput, excerpt
from ..storage.voice_file import Voice
from .variants import check_variants
from ..text.voice_names import check_free, clean_name, find_name, unique_name

__all__ = ["BrowserVoices", "browser_secret", "is_shared", "redact_paths", "refuse_model_changes",
           "shared_from_arguments", "unique_name"]

SECRET_ENV = "OMNIVOICE_BROWSER_SECRET"

#: A browser keeps at most this many voices (each about 32 KB of JSON for 10 s of reference).
MAX_BROWSER_VOICES = 16
MODEL_CHANGES_REFUSED = ("This is a shared server: the operator chooses its models, so they cannot be loaded, "
                         "unloaded or switched from the page. Run the app on your own machine to use other models.")


def is_shared(host: Optional[str] = None, share: bool = False, shared: bool = False,
              environ: Mapping[str, str] = os.environ) -> bool:
    """Whether the app serves others: a Space, a share link, ``--shared``, or a non-loopback host."""
    if shared or share or environ.get("SPACE_ID"):
        return True
    if not host or host == "localhost":
        return False
    try:
        return not ipaddress.ip_address(host).is_loopback
    except ValueError:  # a host name other than localhost: reachable from elsewhere
        return True


def shared_from_arguments(args) -> bool:
    """``is_shared`` of a command line's ``--host``, ``--share`` and ``--shared`` (those it has)."""
    return is_shared(getattr(args, "host", None), share=getattr(args, "share", False),
                     shared=getattr(args, "shared", False))


def refuse_model_changes(shared: bool) -> None:
    """Raise (an ``InvalidInput``, shown as an error) when a visitor of a shared server tries to change models."""
    if shared:
        raise InvalidInput(MODEL_CHANGES_REFUSED)


class BrowserVoices:
    """The voices one browser holds (the value of its ``gr.BrowserState``): name -> ``Voice.to_dict()``.

    Every method takes the stored value as it came from the browser (anything:
    it is the client's data) and returns a new one to store; a voice read
    back is checked as a file would be (``Voice.from_dict``).
    """

    def __init__(self, max_frames: int, max_voices: int = MAX_BROWSER_VOICES,
                 max_variants: int = Limits().max_voice_variants):
        self.max_frames, self.max_voices, self.max_variants = max_frames, max_voices, max_variants

    @staticmethod
    def _entries(stored) -> dict:
        return {k: v for k, v in stored.items() if isinstance(k, str) and isinstance(v, dict)} \
            if isinstance(stored, dict) else {}

    def names(self, stored) -> list[str]:
        return sorted(self._entries(stored), key=str.casefold)

    def _found(self, entries: dict, name: str) -> str:
        found = find_name(name, entries)
        if found is None:
            raise InvalidInput(f"This browser has no saved voice named {excerpt(name)}; save one from the Clone tab "
                               "first.", param="voice")
        return found

    def load(self, stored, name: str) -> Voice:
        entries = self._entries(stored)
        found = self._found(entries, name)
        return Voice.from_dict(entries[found], max_frames=self.max_frames, shown=f"The saved voice {excerpt(found)}")

    def save(self, stored, voice: Voice, name: str, replace: bool = False) -> tuple[dict, str]:
        """(the new stored value, the name used): a taken name gets a number (``unique_name``), unless ``replace``
        and it is the same name (``name_key``): then that voice is replaced, under its own name."""
        entries = self._entries(stored)
        same = find_name(name, entries) if replace else None
        name = same or unique_name(clean_name(name), entries)
        if same is None and len(entries) >= self.max_voices:
            raise InvalidInput(f"This browser holds {len(entries)} voices, the most it can keep; delete one first.")
        check_variants(voice, self.max_variants)
        voice.name = name
        return dict(entries, **{name: voice.to_dict()}), name

    def change(self, stored, name: str, update: Callable[[Voice], Voice]) -> tuple[dict, Voice]:
        """(the new stored value, the voice ``name`` after ``update``), kept under its name."""
        entries = self._entries(stored)
        found = self._found(entries, name)
        voice = update(self.load(entries, found))
        voice.name = found
        return dict(entries, **{found: voice.to_dict()}), voice

    def delete(self, stored, name: str) -> dict:
        entries = self._entries(stored)
        found = self._found(entries, name)
        return {k: v for k, v in entries.items() if k != found}

    def rename(self, stored, name: str, new_name: str) -> tuple[dict, str]:
        """(the new stored value, ``new_name``): refused when another voice has that name (``check_free``); a
        change of case alone renames the same voice."""
        entries = self._entries(stored)
        found = self._found(entries, name)
        voice = self.load(entries, found)
        new_name = check_free(clean_name(new_name), entries, itself=found)
        voice.name = new_name
        kept = {k: v for k, v in entries.items() if k != found}
        return dict(kept, **{new_name: voice.to_dict()}), new_name


def browser_secret(folder: pathlib.Path) -> str:
    """The key ``gr.BrowserState`` encrypts the voices with: ``$OMNIVOICE_BROWSER_SECRET``, else one made once
    and kept in ``folder/browser-secret`` (so stored voices survive a restart of the server too)."""
    if os.environ.get(SECRET_ENV):
        return os.environ[SECRET_ENV]
    import secrets

    path = pathlib.Path(folder) / "browser-secret"
    try:
        text = path.read_text().strip()
        if len(text) >= 32:
            return text
    except OSError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    text = secrets.token_hex(32)
    with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as handle:
        handle.write(text)
    return text


#: a web address (kept whole: it names no server folder)
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://[^\s)\]>\"']+")
#: an absolute path of two or more parts, not inside a word, an address or a placeholder, and not a route
#: of the HTTP API (our messages write those after their method: "GET /v1/audio/voices")
_PATH = re.compile(r"(?<![\w<>/:.])(?<!GET )(?<!POST )(?<!PATCH )(?<!DELETE )/(?:[\w.\-]+/)+([\w.\-]+)")


#: a path under a redacted root: ``<server>`` and its folders
_UNDER_ROOT = re.compile(r"<server>(?:/[\w.\-]+)*/([\w.\-]+)")


def redact_paths(text: str, roots: Iterable[os.PathLike | str] = ()) -> str:
    """``text`` with every server folder it names (the given roots, home, temp) replaced by ``<server>``.

    Web addresses stay whole, and so do routes written after their method (``GET /v1/audio/voices``)."""
    folders = {str(pathlib.Path(r)) for r in roots if r}
    folders |= {tempfile.gettempdir(), os.path.expanduser("~")}
    folders = sorted((f for f in folders if len(f) > 1), key=len, reverse=True)
    pieces, start = [], 0
    for url in _URL.finditer(text):
        pieces += [_redact_part(text[start:url.start()], folders), url.group()]
        start = url.end()
    return "".join(pieces + [_redact_part(text[start:], folders)])


def _redact_part(text: str, folders: list[str]) -> str:
    for folder in folders:
        text = re.sub(re.escape(folder) + r"(?=/|\b|$)", "<server>", text)
    # what was under a root keeps its last name only ("<server>/a/b/tiny" -> "<server>/tiny"), and any absolute
    # path left (a cache, a site-packages file) loses its folders: no part of a server path is shown
    text = _UNDER_ROOT.sub(r"<server>/\1", text)
    return _PATH.sub(r"<server>/\1", text)
