"""Streamed text (``synthesize-chunk`` events) -> the sentences that are complete so far.

A sentence is complete when its end mark (``.``, ``!``, ``?``, ``…``, with any closing quotes or
brackets) is followed by white space, or at a CJK full stop (``。！？``), which needs none.  Until the
text stops, a sentence whose end mark has arrived without the following space is still open (``3.5``,
``e.g.`` at the end of a chunk).
"""

from __future__ import annotations

import re

from ..engine.streaming import SENTENCE_END
from ..text.prompt import CLOSING_MARKS

_CLOSING = "".join(re.escape(mark) for mark in sorted(CLOSING_MARKS))
_WIDE_END = "。！？"
_NARROW_END = "".join(re.escape(mark) for mark in sorted(SENTENCE_END - set(_WIDE_END)))
_BOUNDARY = re.compile(rf"[{_NARROW_END}]+[{_CLOSING}]*\s+|[{_WIDE_END}]+[{_CLOSING}]*")


class TextStream:
    """Collects text chunks; ``add`` returns the text of the sentences completed by a chunk, ``finish`` the rest."""

    def __init__(self):
        self._buffer = ""
        self.total = 0   # characters received, for the stream's limit

    def add(self, text: str) -> str:
        """The complete sentences now (joined, stripped; "" when none) after adding ``text``."""
        self.total += len(text)
        self._buffer += text
        end = 0
        for match in _BOUNDARY.finditer(self._buffer):
            end = match.end()
        done, self._buffer = self._buffer[:end], self._buffer[end:]
        return done.strip()

    def finish(self) -> str:
        """The text after the last complete sentence (the stream stopped)."""
        rest, self._buffer = self._buffer.strip(), ""
        return rest
