"""Language names and codes the model was trained with.

The table (``data/languages.json``) is a copy of ``omnivoice.utils.lang_map``
made by ``scripts/export_reference_tables.py``: 646 languages, each with the
lowercase name the reference resolves, its code (ISO 639-1 where one exists,
else ISO 639-3) and the display name of ``lang_display_name``.

``resolve_language`` mirrors ``OmniVoice``'s ``_resolve_language`` for every
name and code the reference knows.  It differs, on purpose, where the
reference gives up: the reference logs a warning for an unknown language and
silently falls back to language-agnostic mode (``None``); this engine raises
``ValueError`` instead, with close matches, so that a typo in the UI or on the
command line is not silently turned into a different model input.
"""

from __future__ import annotations

import difflib
import json
import pathlib
from functools import lru_cache

from ..errors import InvalidInput, excerpt

__all__ = [
    "LANGUAGE_COUNT",
    "language_choices",
    "language_display_name",
    "resolve_language",
    "supported_language_codes",
    "supported_language_names",
]

_DATA = pathlib.Path(__file__).resolve().parent.parent / "data" / "languages.json"

#: Values meaning "no language token" (the model's language-agnostic mode).
#: "none" and ``None`` are the reference's; "" and "auto" are this engine's.
_NO_LANGUAGE = {"", "none", "auto"}


@lru_cache(maxsize=1)
def _table() -> tuple[dict[str, str], dict[str, str]]:
    """(lowercase name -> code, code -> display name), read once from the data file."""
    entries = json.loads(_DATA.read_text(encoding="utf-8"))["languages"]
    name_to_code = {e["name"]: e["code"] for e in entries}
    code_to_display = {e["code"]: e["display"] for e in entries}
    return name_to_code, code_to_display


def supported_language_codes() -> set[str]:
    """The codes the model knows (``LANG_IDS`` of the reference)."""
    return set(_table()[1])


def supported_language_names() -> set[str]:
    """The lowercase names the model knows (``LANG_NAMES`` of the reference)."""
    return set(_table()[0])


def language_display_name(code: str) -> str:
    """Display name of a code, e.g. ``"en"`` -> ``"English"``."""
    return _table()[1][code]


def language_choices() -> list[tuple[str, str]]:
    """``(display name, code)`` for every language, sorted by display name (for a dropdown)."""
    return sorted(((d, c) for c, d in _table()[1].items()), key=lambda dc: (dc[0].casefold(), dc[1]))


def resolve_language(name_or_code: str | None) -> str | None:
    """Language name or code -> the code the model is prompted with, or ``None``.

    Mirrors ``omnivoice.models.omnivoice._resolve_language``:

    * ``None`` or ``"none"`` (any case) -> ``None`` (language-agnostic);
    * an exact code (``"en"``, ``"yue"``) -> itself;
    * a name, case-insensitively (``"English"``) -> its code.

    Differences, all in inputs the reference does not resolve: surrounding
    whitespace is ignored, ``""`` and ``"auto"`` also mean ``None``, a code in
    another case (``"EN"``) is accepted, and an unknown language raises
    ``ValueError`` (the reference warns and returns ``None``).
    """
    if name_or_code is None:
        return None
    name_to_code, code_to_display = _table()
    if name_or_code in code_to_display:  # reference: exact code first
        return name_or_code
    key = name_or_code.strip().lower()
    if key in _NO_LANGUAGE:
        return None
    if key in name_to_code:
        return name_to_code[key]
    if key in code_to_display:
        return key
    raise InvalidInput(_unknown_language_message(name_or_code, key))


def _unknown_language_message(raw: str, key: str) -> str:
    name_to_code, code_to_display = _table()
    candidates = sorted(name_to_code) + sorted(code_to_display)
    matches = difflib.get_close_matches(key, candidates, n=3, cutoff=0.6)
    suggestions = []
    for m in matches:
        code = name_to_code.get(m, m)
        label = f"{code_to_display[code]} ({code})"
        if label not in suggestions:
            suggestions.append(label)
    message = f"Unknown language {excerpt(raw)}."
    if suggestions:
        message += " Did you mean " + " or ".join(suggestions) + "?"
    message += (
        " Use a language name (e.g. 'English') or code (e.g. 'en'), or 'auto' for none;"
        " the command 'omnivoice languages' lists the supported ones (so does the app's language menu)."
    )
    return message


#: Number of supported languages (646 for omnivoice 0.2.1).
LANGUAGE_COUNT = len(_table()[1])
