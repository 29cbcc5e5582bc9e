"""Whose pronunciations: each owner's lexicon, kept where their voices are kept.

* In shared mode a visitor's lexicon lives in their own browser (the value of a ``gr.BrowserState``, as
  their voices do, ``sharing.BrowserVoices``): the server keeps none, and no visitor sees another's.  The
  stored value is the client's data: it is read back through ``lexicon.from_mapping``, every check again.
* Otherwise the studio keeps one lexicon, ``lexicon.json`` in the user data folder, written atomically.

Every generation of the app uses the server's ``--lexicon`` with the owner's entries over it, word by word.
"""

from __future__ import annotations

import json
import pathlib
from typing import Optional

from ..text.lexicon import Entry, Lexicon, from_mapping
from ..errors import InvalidInput, excerpt
from ..storage.atomic import write_atomically

#: entries one owner's lexicon may hold (a browser's value travels with every request)
MAX_OWNER_ENTRIES = 500
LEXICON_FILE = "lexicon.json"


def as_json(lexicon: Lexicon) -> list[dict]:
    """A lexicon as its JSON form (``from_mapping`` reads it back)."""
    return [{"word": e.word, "say": e.say, "match_case": e.match_case} for e in lexicon.entries]


class OwnerLexicons:
    """``shared``: the stored value is a browser's; else the studio's file ``path``.  ``server``: ``--lexicon``."""

    def __init__(self, shared: bool, path: Optional[pathlib.Path] = None, server: Optional[Lexicon] = None):
        self.shared, self.path, self.server = shared, path, server or Lexicon()

    def load(self, stored=None) -> Lexicon:
        """The owner's lexicon: a browser's ``stored`` value (shared mode), else the studio's file."""
        if self.shared:
            return from_mapping(stored) if stored else Lexicon()
        if self.path is None or not self.path.is_file():
            return Lexicon()
        try:
            return from_mapping(json.loads(self.path.read_text(encoding="utf-8")))
        except (OSError, ValueError) as exc:
            raise InvalidInput(f"The studio's lexicon ({LEXICON_FILE}) cannot be read ({exc}); delete the file to "
                               "start a new one.", param="lexicon") from None

    def for_generation(self, stored=None) -> Lexicon:
        """What a generation of this owner uses: the server's lexicon with the owner's over it."""
        return self.server.merged(self.load(stored))

    def add(self, stored, word: str, say: str, match_case: bool = False) -> tuple[Lexicon, list[dict]]:
        """(the new lexicon, the value to store): ``word`` said as ``say`` (replacing its earlier entry)."""
        current = self.load(stored)
        entry = Entry(str(word or "").strip(), str(say or "").strip(), bool(match_case))
        if not entry.word or not entry.say:
            raise InvalidInput("Give the word and how to say it (a CMU override such as [B EY1 S], pinyin with "
                               "tones or a respelling).", param="lexicon")
        updated = current.merged(Lexicon((entry,)))   # checked: one word, a CMU override's form, no circle
        if len(updated.entries) > MAX_OWNER_ENTRIES:
            raise InvalidInput(f"This lexicon holds {MAX_OWNER_ENTRIES} words, the most it can keep; delete one "
                               "first.", param="lexicon")
        return updated, self._store(updated)

    def delete(self, stored, word: str) -> tuple[Lexicon, list[dict]]:
        current = self.load(stored)
        key = str(word or "").strip().casefold()
        kept = tuple(e for e in current.entries if e.word.casefold() != key)
        if len(kept) == len(current.entries):
            raise InvalidInput(f"The lexicon has no entry for {excerpt(str(word or ''))}.", param="lexicon")
        updated = Lexicon(kept)
        return updated, self._store(updated)

    def _store(self, lexicon: Lexicon) -> list[dict]:
        value = as_json(lexicon)
        if not self.shared and self.path is not None:
            write_atomically(self.path, json.dumps(value, ensure_ascii=False, indent=1).encode("utf-8"),
                             "lexicon")
        return value
