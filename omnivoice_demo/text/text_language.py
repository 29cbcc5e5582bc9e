"""The language a text is written in, detected for the number normaliser only.

The model is never given a detected language: it gets the language the user chose, or none
(language-agnostic), as the reference does.  What is detected here decides only whether numbers are
read as words, and in which language (``normalize_choice.py``), so that a German text with no language
set is not read with English number words (the reference's ``normalize_text`` takes every text without
CJK characters for English).

* The script first (``language_id.script_language``): Han characters without kana or hangul are Chinese,
  kana Japanese, hangul Korean.
* Otherwise py3langid (``language_id``) classifies each sentence with enough letters, the sentences cut by
  ``sentences.split_sentences`` (the one splitter) with the rules of the language the whole text reads as
  (``language_id.guess_language``); a sentence whose best language is less likely than ``MIN_CONFIDENCE``
  counts for none.  The text's language is the one that covers most of its letters; ``languages`` lists every
  language a sentence was found in, so a text mixing English and German is seen as mixed.
* Without ``py3langid`` installed, only the script check runs: a text in Latin or Cyrillic letters is
  then of no detected language (and is not normalised by default).
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Optional

from .language_id import (LOCK, MIN_CONFIDENCE, MIN_LETTERS, TAG_RE, available, guess_language, identifier,
                          letters, script_language)
from .sentences import DEFAULT_LANGUAGE, split_sentences

__all__ = ["Detection", "available", "detect_language", "guess_language", "MIN_CONFIDENCE", "MIN_LETTERS"]


@dataclasses.dataclass(frozen=True)
class Detection:
    """What was found: ``language`` (the code covering most letters, or None) and every sentence language."""

    language: Optional[str]
    languages: tuple[str, ...] = ()

    @property
    def mixed(self) -> bool:
        return len(self.languages) > 1


@functools.lru_cache(maxsize=256)   # the app's preview and the generation that follows it detect once
def detect_language(text: str) -> Detection:
    """The language ``text`` is written in, as far as its script and its words tell (see the module)."""
    text = TAG_RE.sub(" ", text or "")
    script = script_language(text)
    if script is not None:
        return Detection(script, (script,))
    if not available():
        return Detection(None)
    shares: dict[str, int] = {}
    pieces = split_sentences(text, guess_language(text) or DEFAULT_LANGUAGE)
    with LOCK:   # one identifier per process, loaded on first use (about 1 s)
        found = identifier()
        for sentence in pieces:
            count = letters(sentence)
            if count < MIN_LETTERS:
                continue
            code, confidence = found.classify(sentence)
            if confidence >= MIN_CONFIDENCE:
                shares[code] = shares.get(code, 0) + count
        if not shares and letters(text) >= MIN_LETTERS:   # no sentence long enough alone: the text as one
            code, confidence = found.classify(text)
            if confidence >= MIN_CONFIDENCE:
                shares[code] = letters(text)
    ranked = tuple(sorted(shares, key=lambda code: -shares[code]))
    return Detection(ranked[0] if ranked else None, ranked)
