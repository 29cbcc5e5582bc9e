"""Streamed text (``synthesize-chunk`` events) -> the sentences that are complete so far.

Sentences are cut by the one splitter (``text.sentences``), by the rules of the stream's language (the
request's; none: the text's own), and only once enough text has arrived to decide: a cut is given out when a
whole word has come after it (``sentences.decided_end``), so "Prof." then " Smith arrived." is one sentence, not
"Prof." spoken alone.  ``finish`` gives out the rest.  A stream whose text starts with a tag (``<speak``,
``<?xml``) is SSML: it is not cut into sentences (a sentence of markup is no document) but held until its
``</speak>`` and then spoken whole, as SSML (``text/ssml.py``).
"""

from __future__ import annotations

import re
from typing import Optional

from ..text.sentences import decided_end

_SSML_END = re.compile(r"</\s*speak\s*>", re.I)


class TextStream:
    """Collects text chunks; ``add`` returns the text of the sentences completed by a chunk, ``finish`` the rest."""

    def __init__(self, language: Optional[str] = None):
        self.language = language   # a code the model knows, or None
        self._buffer = ""
        self.total = 0   # characters received, for the stream's limit

    def add(self, text: str) -> str:
        """The complete sentences now (joined, stripped; "" when none) after adding ``text``."""
        self.total += len(text)
        self._buffer += text
        if self._buffer.lstrip().startswith("<"):   # markup (SSML): whole, once its </speak> has come
            end = _SSML_END.search(self._buffer)
            if end is None:
                return ""
            done, self._buffer = self._buffer[:end.end()], self._buffer[end.end():]
            return done.strip()
        end = decided_end(self._buffer, self.language)
        done, self._buffer = self._buffer[:end], self._buffer[end:]
        return done.strip()

    def finish(self) -> str:
        """The text after the last complete sentence (the stream stopped)."""
        rest, self._buffer = self._buffer.strip(), ""
        return rest

