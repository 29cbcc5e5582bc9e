"""Streamed text (``synthesize-chunk`` events) -> the sentences that are complete so far.

A streamed text is cut exactly where ``text.sentences.split_sentences`` cuts the whole text, however it is
chunked (``released_sentences``): a sentence is given out as soon as no text that may still come can move or
remove the cut after it, and no sooner.  The splitter (sentencex, with our rules on top) decides a cut by the
text around it, so a cut waits for

* ``LOOKAHEAD_BYTES`` (30) bytes of whole words after it (after a heading's number that follows it: "Gut. 2."
  is cut before "2." only if a heading follows), or the end of its paragraph (a blank line and a word after it):
  sentencex reads at most 30 bytes past a full stop or a closing quote ("3." may go on as "3.5", "am 3." with
  " Mai", "coming?" with '" she asked') and nothing past a paragraph's end; a word still arriving is not read at
  all ("it'" may become "it's").  For a model's answer streamed at tens of characters a second that is a
  fraction of a second after each sentence's end;
* where a quote or bracket is open in the text, its closing: the cut must stay where it is whatever of
  ``PROBES`` (each closer of an opener in the text, with a word after it or at the end) follows the text so
  far.  In 'He asked "Are you coming?' the cut after "coming?" falls once '" and left.' closes the quote, so
  nothing is given out while the quote is open, and a quote that holds a sentence break in straight quotes
  waits for its paragraph's end (the splitter pairs straight quotes over the whole paragraph);
* and, where a line of the paragraph before it starts with a list's marker ("2. ", "- "), the paragraph's end
  (sentencex reads a paragraph with two such lines as a list, and cuts an item only at the next marker).

A stream whose quote or bracket never closes is spoken when its paragraph ends or at ``synthesize-stop``
(``finish``).  The splitter reads the text given out again with the text held, from the paragraph's start and at
most ``CONTEXT_CHARS`` (a Wyoming stream's default limit, ``max_text_chars`` 2,000, is under it, so the whole
paragraph is read); one language's rules cut the whole stream: the request's, else the language of the text that
has come when the first sentence is given out (``text.sentences.sentence_language``).

A stream whose text starts with a tag (``<speak``, ``<?xml``) is SSML: it is not cut into sentences (a sentence
of markup is no document) but held until its ``</speak>`` and then spoken whole, as SSML (``text/ssml.py``).
"""

from __future__ import annotations

import itertools
import re
from typing import Optional

from ..text.sentences import sentence_language, split_sentences

_SSML_END = re.compile(r"</\s*speak\s*>", re.I)
#: text (UTF-8 bytes, whole words) that must follow a cut before it is given out: sentencex's look past a full
#: stop or a closing quote (``get_next_word_approx``: 30 bytes)
LOOKAHEAD_BYTES = 30
#: the quote and bracket pairs of sentencex (and our ``[tag]``): each closer and the openers it closes
PAIRS = {"\"": "\"", "'": "'`", "''": "'`", "`": "`", "``": "``", "»": "«", "«": "»", "’": "‘", "‚": "‚", "”": "“",
         "‛": "‛", "“": "„", "‟": "‟", "›": "‹", "》": "《", "」": "「", "』": "『", "】": "【",
         ")": "([{<（", "]": "([{<（", "}": "([{<（", ">": "([{<（", "）": "([{<（"}
#: continuations tried after the text so far, for each closer: a cut that one of them moves or removes is not final
#: (a lower-case word after the closer continues the sentence, which removes every cut inside the quote; a closer
#: that ends the paragraph is read differently again)
PROBES = {closer: (f"x{closer} x", f" {closer} x", f"x{closer}", f" {closer}") for closer in PAIRS}
#: how much of the paragraph already given out is read again with the text still held (characters)
CONTEXT_CHARS = 4000
#: what may be a heading's number after a cut (``text.sentences`` keeps "2." with the heading after it)
_NUMBER = re.compile(r"[0-9IVXLC.]*")
#: a list item's marker at a line's start, and within a line, as sentencex finds them (``list_markers.rs``)
_BULLETS = "•◦▪▫■□●○⁃⁌⁍◆◇★☆➤➢➣▶▸►"
_LIST_LINE = re.compile(rf"^[ \t]*(?:[{_BULLETS}*+\-]|\((?:\d{{1,2}}|[A-Za-z]|[ivxlcdmIVXLCDM]+)\)"
                        r"|(?:\d+|[ivxlcdmIVXLCDM]{2,})(?:\.\)|\.|\))|[A-Za-z]\.?\)|[a-z]\.)[ \t]+[^\r\n]", re.M)
_LIST_INLINE = re.compile(rf"(?<=[ \t])(?:[{_BULLETS}]|\((?:\d{{1,2}}|[A-Za-z]|[ivxlcdmIVXLCDM]+)\)"
                          r"|(?:\d+|[ivxlcdmIVXLCDM]{2,}|[A-Za-z])\.?\))[ \t]+[^\r\n]")
#: a paragraph break as the segmenter reads one
_PARAGRAPH_BREAK = re.compile(r"\n\r*\n")
#: the end of a text that may still be the start of a longer word (a character of a script written without
#: spaces is a word of its own)
_PARTIAL_WORD = re.compile(r"[^\s\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]*\Z")


def released_sentences(text: str, language: str, *, done: str = "", final: bool = False) -> tuple[list[str], str]:
    """``(ready, rest)``: the sentences at the start of ``text`` that no later text can change, each with the white
    space after it as ``split_sentences`` gives it, and the text still held.  ``text`` is the stream's text not
    given out yet, ``done`` the text given out before it, ``language`` the code whose rules cut.  ``final``: no
    more text comes (every sentence is ready)."""
    if not text:
        return [], text
    head = context_of(done)
    if final:
        cuts = _cuts(head + text, language, len(head))
        bounds = [0, *cuts, len(text)]
        return [text[a:b] for a, b in zip(bounds, bounds[1:])], ""
    partial = _PARTIAL_WORD.search(text)
    known = head + text[:partial.start() if partial else len(text)]
    markers = _list_markers(known)
    cuts = list(itertools.takewhile(lambda cut: _decided(known, len(head), cut, markers),
                                    _cuts(known, language, len(head))))
    if cuts:
        cuts = cuts[:_settled(known, language, len(head), cuts)]
    if not cuts:
        return [], text
    return [text[a:b] for a, b in zip([0, *cuts], cuts)], text[cuts[-1]:]


def context_of(done: str) -> str:
    """What the splitter must read again before the held text: ``done`` from its paragraph's start, at most
    ``CONTEXT_CHARS``."""
    start = max(len(done) - CONTEXT_CHARS, 0)
    for found in _PARAGRAPH_BREAK.finditer(done, start):
        start = found.end()
    return done[start:]


def _decided(known: str, start: int, cut: int, markers: list[int]) -> bool:
    """Whether ``known`` holds all that decides the cut at ``start + cut``: 30 bytes after the full stop that made it,
    or the end of its paragraph.  That full stop is before the cut, or, where the text after the cut starts with a
    number and a full stop, the number's: ``split_sentences`` moves a cut after a heading's number ("2.") to before
    it, so "Gut. 2." then " Ergebnisse" is cut before "2." while "Gut. 2." then " und" is not cut at all."""
    at = start + cut
    number = _NUMBER.match(known, at)
    after = number.end() if number and "." in number.group() else at
    paragraph = max((found.end() for found in _PARAGRAPH_BREAK.finditer(known, 0, at)), default=0)
    in_list = any(paragraph <= marker < at for marker in markers)
    if len(known[after:].encode("utf-8")) >= LOOKAHEAD_BYTES and not in_list:
        return True
    # the full stop's paragraph has ended (nothing past a paragraph break is read)
    return _PARAGRAPH_BREAK.search(known, after if after > at else len(known[:at].rstrip())) is not None


def _list_markers(known: str) -> list[int]:
    """Where a list's marker ("2. ", "- ", "a) ") starts a line, or a "1)" a word, in ``known``, each paragraph's
    first: sentencex reads a paragraph with two markers as a list and cuts within an item only at the next marker,
    so a marker still to come may take a cut after the first away."""
    starts = [0, *(found.end() for found in _PARAGRAPH_BREAK.finditer(known))]
    ends = [*starts[1:], len(known)]
    firsts = []
    for start, end in zip(starts, ends):
        found = [marker.start() for marker in (_LIST_LINE.search(known, start, end), _LIST_INLINE.search(known, start, end))
                 if marker is not None]
        if found:
            firsts.append(min(found))
    return firsts


def _cuts(text: str, language: str, start: int) -> list[int]:
    """The offsets (from ``start``) where ``split_sentences`` cuts ``text`` after ``start``."""
    cuts, offset = [], 0
    for piece in split_sentences(text, language):
        offset += len(piece)
        if start < offset < len(text):
            cuts.append(offset - start)
    return cuts


def _settled(text: str, language: str, start: int, cuts: list[int]) -> int:
    """How many of ``cuts`` (the first ones) stay where they are whatever of ``PROBES`` follows ``text``."""
    settled = len(cuts)
    probes = [probe for closer, openers in PAIRS.items() if any(opener in text for opener in openers)
              for probe in PROBES[closer]]
    for probe in probes:
        probed = _cuts(text + probe, language, start)
        same = 0
        while same < settled and same < len(probed) and probed[same] == cuts[same]:
            same += 1
        settled = same
        if not settled:
            break
    return settled


class TextStream:
    """Collects text chunks; ``add`` returns the text of the sentences completed by a chunk, ``finish`` the rest."""

    def __init__(self, language: Optional[str] = None):
        self.language = language   # a code the model knows, or None (the text's own, decided once)
        self._buffer = ""
        self._done = ""            # the end of the text given out (the splitter's context for the rest)
        self.total = 0             # characters received, for the stream's limit

    def add(self, text: str) -> str:
        """The complete sentences now (joined, stripped; "" when none) after adding ``text``."""
        return "".join(self.sentences(text)).strip()

    def sentences(self, text: str) -> list[str]:
        """Like ``add``, the sentences one by one as ``split_sentences`` gives them (white space kept); an SSML
        document is one."""
        self.total += len(text)
        self._buffer += text
        if self._buffer.lstrip().startswith("<"):   # markup (SSML): whole, once its </speak> has come
            end = _SSML_END.search(self._buffer)
            if end is None:
                return []
            done, self._buffer = self._buffer[:end.end()], self._buffer[end.end():]
            return [done]
        return self._release(final=False)

    def finish(self) -> str:
        """The text after the last complete sentence (the stream stopped)."""
        return "".join(self.finish_sentences()).strip()

    def finish_sentences(self) -> list[str]:
        """Like ``finish``, the rest's sentences one by one."""
        if self._buffer.lstrip().startswith("<"):
            rest, self._buffer = [self._buffer], ""
            return rest
        return self._release(final=True)

    def _release(self, *, final: bool) -> list[str]:
        if self.language is None and not final and not self._buffer.strip():
            return []
        code = self.language or sentence_language(None, self._done + self._buffer)
        ready, self._buffer = released_sentences(self._buffer, code, done=self._done, final=final)
        if ready:
            self.language = self.language or code      # one language's rules for the whole stream
            self._done = context_of(self._done + "".join(ready))
        return ready
