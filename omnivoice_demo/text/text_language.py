"""The language a text is written in, detected for the number normaliser only.

The model is never given a detected language: it gets the language the user chose, or none
(language-agnostic), as the reference does.  What is detected here decides only whether numbers are
read as words, and in which language (``normalize_choice.py``), so that a German text with no language
set is not read with English number words (the reference's ``normalize_text`` takes every text without
CJK characters for English).

* The script first: Han characters without kana or hangul are Chinese (the reference's own rule for
  Chinese), kana Japanese, hangul Korean.
* Otherwise ``py3langid`` (a BSD-licensed, numpy-only port of langid.py, its model 4.6 MB, in the
  runtime requirements), restricted to the languages the model was trained with
  (``data/languages.json``), classifies each sentence with enough letters; a sentence whose best
  language is less likely than ``MIN_CONFIDENCE`` counts for none.  The text's language is the one that
  covers most of its letters; ``languages`` lists every language a sentence was found in, so a text
  mixing English and German is seen as mixed.
* Without ``py3langid`` installed, only the script check runs: a text in Latin or Cyrillic letters is
  then of no detected language (and is not normalised by default).
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.util
import re
import threading
from typing import Optional

from .languages import supported_language_codes

#: a sentence is classified when it has at least this many letters (shorter ones say too little)
MIN_LETTERS = 8
#: the least probability (py3langid's normalised one) of a sentence's best language for it to count
MIN_CONFIDENCE = 0.4

_HAN_RE = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")
_KANA_RE = re.compile(r"[\u3040-\u30ff]")
_HANGUL_RE = re.compile(r"[\uac00-\ud7af\u1100-\u11ff]")
_TAG_RE = re.compile(r"\[[^\[\]]*\]")          # non-verbal tags and CMU overrides say nothing of the language
_SENTENCE_RE = re.compile(r"(?<=[.!?;:…])\s+|\n+")
_LOCK = threading.Lock()


@dataclasses.dataclass(frozen=True)
class Detection:
    """What was found: ``language`` (the code covering most letters, or None) and every sentence language."""

    language: Optional[str]
    languages: tuple[str, ...] = ()

    @property
    def mixed(self) -> bool:
        return len(self.languages) > 1


def available() -> bool:
    """Whether the statistical detector (py3langid) is installed; the script check always runs."""
    return importlib.util.find_spec("py3langid") is not None


@functools.lru_cache(maxsize=1)
def _identifier():
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    identifier = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
    identifier.set_languages(sorted(set(identifier.labels) & supported_language_codes()))
    return identifier


def _script_language(text: str) -> Optional[str]:
    if _KANA_RE.search(text):
        return "ja"
    if _HANGUL_RE.search(text):
        return "ko"
    if _HAN_RE.search(text):
        return "zh"
    return None


def _letters(text: str) -> int:
    return sum(ch.isalpha() for ch in text)


@functools.lru_cache(maxsize=256)   # the app's preview and the generation that follows it detect once
def detect_language(text: str) -> Detection:
    """The language ``text`` is written in, as far as its script and its words tell (see the module)."""
    text = _TAG_RE.sub(" ", text or "")
    script = _script_language(text)
    if script is not None:
        return Detection(script, (script,))
    if not available():
        return Detection(None)
    shares: dict[str, int] = {}
    with _LOCK:   # one identifier per process, loaded on first use (about 1 s)
        identifier = _identifier()
        for sentence in _SENTENCE_RE.split(text):
            letters = _letters(sentence)
            if letters < MIN_LETTERS:
                continue
            code, confidence = identifier.classify(sentence)
            if confidence >= MIN_CONFIDENCE:
                shares[code] = shares.get(code, 0) + letters
        if not shares and _letters(text) >= MIN_LETTERS:   # no sentence long enough alone: the text as one
            code, confidence = identifier.classify(text)
            if confidence >= MIN_CONFIDENCE:
                shares[code] = _letters(text)
    ranked = tuple(sorted(shares, key=lambda code: -shares[code]))
    return Detection(ranked[0] if ranked else None, ranked)
