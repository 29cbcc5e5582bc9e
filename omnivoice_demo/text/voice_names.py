"""How saved voices' names are written, compared and kept apart: one rule for every store and every front end.

* ``clean_name``: a name as it is kept (NFKC: full-width letters become ASCII, a letter and its combining accent
  become one; then only letters, digits, spaces, ``- _ .``; at most ``MAX_NAME_LENGTH``): it is also a file name.
* ``name_key``: what two names are compared by, in creating, importing, renaming and looking up: NFKC,
  case-folded (``Anna``, ``anna`` and ``ＡＮＮＡ`` are one name).
* ``look_alike_key``: ``name_key`` with the Cyrillic and Greek letters that are drawn like Latin ones (a short
  table below, not Unicode's whole confusables list, which needs a library we do not ship) read as those Latin
  letters, so ``Аnna`` with a Cyrillic ``А`` collides with ``Anna``, and the dotted and dotless i's as i
  (``İda`` and ``ıda`` collide with ``Ida``).  A name whose look-alike key is another voice's is refused,
  naming that voice: a name is never taken over, and nothing is overwritten by one.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Iterable, Optional

from ..errors import InvalidInput, excerpt

__all__ = ["MAX_NAME_LENGTH", "clean_name", "check_free", "find_name", "look_alike_key", "name_key", "unique_name"]

MAX_NAME_LENGTH = 60
_NAME_RE = re.compile(r"[^\w\- .]+", re.UNICODE)
#: Cyrillic and Greek letters (after case folding) drawn like a Latin letter, as that letter (judged by the capital,
#: as a name's first letter is written: Greek Eta is an H)
_LOOK_ALIKES = str.maketrans({
    "а": "a", "в": "b", "е": "e", "ё": "e", "к": "k", "м": "m", "н": "h", "о": "o", "р": "p", "с": "c",
    "т": "t", "у": "y", "х": "x", "ѕ": "s", "і": "i", "ї": "i", "ј": "j", "ԁ": "d", "ԛ": "q", "ԝ": "w",
    "ү": "y", "һ": "h", "ӏ": "l",
    "α": "a", "β": "b", "ε": "e", "ζ": "z", "η": "h", "ι": "i", "κ": "k", "μ": "m", "ν": "n", "ο": "o",
    "ρ": "p", "τ": "t", "υ": "y", "χ": "x",
    # Turkish and Azerbaijani i's: the dotless ı is the small of I (so ``Istanbul`` and ``ıstanbul``); the dot
    # that case folding leaves of a capital dotted İ (``i`` and U+0307) is dropped below
    "ı": "i", "ȷ": "j",
})
#: a dot above (U+0307, combining) after an i or a j: what a capital dotted İ folds to beside its i
_DOT_ABOVE = re.compile("(?<=[ij])\u0307")


def clean_name(name: str) -> str:
    """A voice name that is also a safe file name; ``InvalidInput`` when nothing usable is left."""
    cleaned = _NAME_RE.sub("", unicodedata.normalize("NFKC", name or "").strip()).strip(" .")
    cleaned = re.sub(r"\s+", " ", cleaned)[:MAX_NAME_LENGTH]
    if not cleaned:
        raise InvalidInput("Give the voice a name (letters, digits, spaces, - _ .) before saving it.", param="name")
    return cleaned


def name_key(name: str) -> str:
    """What names are compared by: NFKC, case-folded (NFKC again: folding can leave text that is not NFKC)."""
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", name).casefold())


def look_alike_key(name: str) -> str:
    """``name_key`` with the Cyrillic and Greek look-alikes of Latin letters read as those letters, and the
    dotted and dotless i's as i (``İ``, U+0130, folds to an i with a combining dot: issue 57)."""
    return _DOT_ABOVE.sub("", name_key(name).translate(_LOOK_ALIKES))


def find_name(name: str, existing: Iterable[str]) -> Optional[str]:
    """The name of ``existing`` that ``name`` asks for: the same text, else the same ``name_key``; None if none."""
    existing = list(existing)
    if name in existing:
        return name
    key = name_key(name)
    return next((other for other in existing if name_key(other) == key), None)


def colliding(name: str, existing: Iterable[str], itself: Optional[str] = None) -> Optional[str]:
    """The name of ``existing`` (other than ``itself``, the voice being renamed) that ``name`` would be taken
    for (the same look-alike key); None when it is free."""
    key = look_alike_key(name)
    return next((other for other in existing if other != itself and look_alike_key(other) == key), None)


def check_free(name: str, existing: Iterable[str], itself: Optional[str] = None) -> str:
    """``name``, or ``InvalidInput`` naming the voice of ``existing`` it would be taken for."""
    other = colliding(name, existing, itself)
    if other is not None:
        if name_key(other) == name_key(name):   # the same name: said once (issue 58)
            raise InvalidInput(f"A voice named {excerpt(other)} exists already; choose another name.", param="name")
        raise InvalidInput(f"A voice named {excerpt(other)} looks the same as {excerpt(name)}; choose another name.",
                           param="name")
    return name


def unique_name(name: str, existing: Iterable[str]) -> str:
    """``name``, or ``name 2``, ``name 3``, ... when it is taken (by ``colliding``'s rule)."""
    existing = list(existing)
    if colliding(name, existing) is None:
        return name
    number = 2
    while colliding(f"{name} {number}", existing) is not None:
        number += 1
    return f"{name} {number}"
