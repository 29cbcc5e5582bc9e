"""The language identifier under ``text_language`` and the sentence splitter: a text's script, py3langid's
classifier (loaded once, restricted to the model's languages), and the language of a text taken whole.

* The script first: Han characters without kana or hangul are Chinese (the reference's own rule for
  Chinese), kana Japanese, hangul Korean.
* Otherwise ``py3langid`` (a BSD-licensed, numpy-only port of langid.py, its model 4.6 MB, in the
  runtime requirements), restricted to the languages the model was trained with (``data/languages.json``);
  a language less likely than ``MIN_CONFIDENCE`` counts for none.
* Without ``py3langid`` installed, only the script check runs.

``guess_language`` (the whole text at once) chooses the rules the sentence splitter cuts a text of no given
language by; ``text_language.detect_language`` classifies each of those sentences.
"""

from __future__ import annotations

import functools
import importlib.util
import re
import threading
from typing import Optional

from .languages import supported_language_codes

#: a text (or sentence) is classified when it has at least this many letters (shorter ones say too little)
MIN_LETTERS = 8
#: the least probability (py3langid's normalised one) of a best language for it to count
MIN_CONFIDENCE = 0.4

_HAN_RE = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")
_KANA_RE = re.compile(r"[\u3040-\u30ff]")
_HANGUL_RE = re.compile(r"[\uac00-\ud7af\u1100-\u11ff]")
TAG_RE = re.compile(r"\[[^\[\]]*\]")          # non-verbal tags and CMU overrides say nothing of the language
LOCK = threading.Lock()


def available() -> bool:
    """Whether the statistical detector (py3langid) is installed; the script check always runs."""
    return importlib.util.find_spec("py3langid") is not None


@functools.lru_cache(maxsize=1)
def identifier():
    """py3langid's identifier restricted to the model's languages (call it holding ``LOCK``)."""
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    found = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
    found.set_languages(sorted(set(found.labels) & supported_language_codes()))
    return found


def script_language(text: str) -> Optional[str]:
    if _KANA_RE.search(text):
        return "ja"
    if _HANGUL_RE.search(text):
        return "ko"
    if _HAN_RE.search(text):
        return "zh"
    return None


def letters(text: str) -> int:
    return sum(ch.isalpha() for ch in text)


@functools.lru_cache(maxsize=256)
def guess_language(text: str) -> Optional[str]:
    """The language of ``text`` taken whole (its script, else py3langid on all of it), or None."""
    text = TAG_RE.sub(" ", text or "")
    script = script_language(text)
    if script is not None or not available() or letters(text) < MIN_LETTERS:
        return script
    with LOCK:   # one identifier per process, loaded on first use (about 1 s)
        code, confidence = identifier().classify(text)
    return code if confidence >= MIN_CONFIDENCE else None
