"""Sentences: the one splitter that books, subtitles, sentence streaming, Wyoming's streamed text and the
text's language detection cut text by.

Built on ``sentencex`` (Wikimedia's segmenter, about 300 languages with fallbacks, in the runtime
requirements), chosen over ``pysbd`` by accuracy on held-out sentences in eight languages, by speed (pysbd took
about a thousand times as long on a chapter) and by the languages it knows, although it is the larger of the two
installed (4 MB against pysbd's twentieth of that) (``benchmarks/sentence_splitters.py``, BENCHMARKS.md).  It keeps titles and Latin abbreviations ("Prof.",
"e.g."), times of day written with full stops ("5 p.m. today"), decimals, quoted questions the sentence goes on
from ('"Why?" she asked.') and, with German rules, ordinal dates ("am 5. Juni") inside their sentence.  Three
rules of ours on top, each a case the segmenter cuts and a reader does not:

* a numbered heading stays with its title: "1. Source Code." is one sentence, not "1." and "Source Code.";
* nothing is cut inside a ``[...]`` tag (the model's non-verbal tags and CMU overrides);
* white space alone (a paragraph break) is not a sentence: it stays with the sentence before it.

The language is the one given (a code or a name the model knows), else the one the text is written in
(``language_id.guess_language``), else English's rules.

This is not the reference's long-text chunking: the exact path keeps ``prompt.chunk_text_punctuation`` (a port of
``omnivoice.utils.text.chunk_text_punctuation``), whose cuts decide the chunks and so the tokens.
"""

from __future__ import annotations

import re
from typing import Optional

import sentencex

from ..errors import InvalidInput
from .language_id import guess_language
from .languages import resolve_language

#: the rules used when no language is given or found (sentencex's own fallback for a language it lacks)
DEFAULT_LANGUAGE = "en"

_TAG_RE = re.compile(r"\[[^\[\]]*\]")
#: a numbered heading's number at the end of a piece ("1.", "2.1.", "IV."), after the piece's start or a space
_HEADING_NUMBER_RE = re.compile(r"(?:(?<=\s)|^)(?:\d{1,3}(?:\.\d{1,3})*|[IVXLC]{1,6})\.\s*$")
#: what ends a sentence before a heading's number (with closing quotes and brackets)
_ENDS_SENTENCE_RE = re.compile(r"[.!?…。！？][\"'”’)\]»」』】）]*\s*$")
#: a script written without spaces between words: one of its characters is a whole word for a stream
_UNSPACED_RE = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_WORD_AFTER_RE = re.compile(r"\s*\S+\s")


def sentence_language(language: Optional[str], text: str = "") -> str:
    """The code whose rules cut ``text``: ``language`` (a code or a name; "auto" or None: the text's own), else
    ``DEFAULT_LANGUAGE``."""
    code = None
    if language:
        try:
            code = resolve_language(language)
        except InvalidInput:
            code = None
    if code is None and text.strip():
        code = guess_language(text)
    return code or DEFAULT_LANGUAGE


def split_sentences(text: str, language: Optional[str] = None) -> list[str]:
    """``text``'s sentences: pieces that join back to ``text``, each with the white space after it (the module
    says where it cuts).  ``language``: a code or name whose rules apply (None: the text's own)."""
    if not text:
        return [text]
    code = sentence_language(language, text)
    ends = [int(span["end_index"]) for span in sentencex.get_sentence_boundaries(code, text)]
    return _pieces(text, _mend(text, ends))


def sentence_texts(text: str, language: Optional[str] = None) -> list[str]:
    """``text``'s sentences stripped, the empty ones left out (``[text.strip()]`` when none is left)."""
    parts = [part.strip() for part in split_sentences(text, language)]
    return [part for part in parts if part] or [text.strip()]


def decided_end(text: str, language: Optional[str] = None) -> int:
    """How much of ``text``, a text still arriving, is whole sentences that more text cannot change: the end of the
    last cut of ``split_sentences`` after which a whole word (followed by white space, or a character of a script
    written without spaces) has arrived; 0 when none.  "Prof." alone is not yet a sentence; "Prof. Smith
    arrived. He" ends one."""
    pieces = split_sentences(text, language)
    end, offset = 0, 0
    for piece in pieces[:-1]:
        offset += len(piece)
        rest = text[offset:]
        if _WORD_AFTER_RE.match(rest) or _UNSPACED_RE.search(rest):
            end = offset
    return end


def _mend(text: str, ends: list[int]) -> list[int]:
    """The segmenter's cut offsets with our three rules applied (see the module)."""
    tags = [(m.start(), m.end()) for m in _TAG_RE.finditer(text)]
    cuts = sorted({_past_space(text, end) for end in ends})               # white space stays with the piece before
    cuts = [cut for cut in cuts if 0 < cut < len(text) and text[:cut].strip()]
    cuts = [cut for cut in cuts if not any(left < cut < right for left, right in tags)]
    mended: list[int] = []
    start = 0
    for cut in cuts:
        piece = text[start:cut]
        heading = _HEADING_NUMBER_RE.search(piece)
        if heading and text[cut:].strip():
            before = piece[:heading.start()]
            if not before.strip():      # the piece is the number alone: it goes with what follows
                continue
            if _ENDS_SENTENCE_RE.search(before):   # "Gut. 1." : "Gut." ends, "1." goes with what follows
                mended.append(start + heading.start())
                start += heading.start()
                continue
        mended.append(cut)
        start = cut
    return mended


def _past_space(text: str, offset: int) -> int:
    while offset < len(text) and text[offset].isspace():
        offset += 1
    return offset


def _pieces(text: str, cuts: list[int]) -> list[str]:
    bounds = [0, *cuts, len(text)]
    return [text[a:b] for a, b in zip(bounds, bounds[1:]) if b > a] or [text]
