"""Where and when text normalisation runs: its cheap bounds first, a bounded gate of its own, its preload.

``normalize.py`` decides what normalisation makes of a text (and whether it is on); this module bounds what it
may cost a server before it is spent (issue 43, item 2; issue 42, item 4):

* ``check_number_bounds``: the normaliser's time grows with the digits of a number and with the numbers of a
  text (a 599-digit number took about 5 s of CPU), so before any of it runs, each run of digits is held to
  ``Limits.max_number_digits`` and their count to ``Limits.max_numbers`` (``ResourceLimitExceeded``: HTTP 413,
  Wyoming ``limit_exceeded``).  One regular-expression pass.
* ``GATE``, a ``TextWorkGate``: one normalisation runs at a time in a process (the normalisers are shared, and
  two at once on a CPU are not faster); those that wait are taken shortest text first, so a short request is
  never queued behind long ones; and the characters waiting are bounded (``MAX_WAITING_CHARS``; a short text,
  up to ``SMALL_CHARS``, only by the count of texts waiting, ``MAX_WAITING_TEXTS``): one more is refused at
  once with ``Busy`` (HTTP 429), never queued without bound.  A text that finds nothing waiting is
  always taken.  The engine's generation queue (``studio.service``) never sees this work, so it has its own.
* ``preload_in_background`` (``normalize.start_preload``): WeTextProcessing builds its grammars on first use (about 6 s on a busy 2-core VM); a
  server where normalisation is on starts building the English ones in the background when it starts, so
  the first request does not wait for them.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import logging
import re
import threading
from typing import Iterator, Optional

from ..errors import Busy

log = logging.getLogger(__name__)

_NUMBER_RE = re.compile(r"\d+")
#: characters that may wait for the normaliser at once (beyond them: Busy); four texts at the public limit
MAX_WAITING_CHARS = 2400
#: a text this short is never refused for the characters waiting (it runs before them all), only past
#: ``MAX_WAITING_TEXTS`` texts waiting
SMALL_CHARS = 200
MAX_WAITING_TEXTS = 32


#: what a user can do about a number the normaliser may not read (a reference number, a long code), and about a
#: text with more numbers than it may read
READ_AS_WRITTEN = "turn off reading numbers as words (\"Read numbers as words\", normalize_text=false) to have "
NUMBER_ADVICE = ("Write a long number in groups with spaces between them (each group is read on its own), or "
                 + READ_AS_WRITTEN + "it read as written")
NUMBERS_ADVICE = "Send the text in shorter parts, or " + READ_AS_WRITTEN + "them read as written"


def check_number_bounds(text: str, limits) -> None:
    """``ResourceLimitExceeded`` naming the limit when a run of digits of ``text`` is longer than
    ``limits.max_number_digits`` or it holds more than ``limits.max_numbers`` of them; nothing else."""
    count = 0
    for match in _NUMBER_RE.finditer(text):
        count += 1
        limits.check(f"A number of the text (at character {match.start()})", match.end() - match.start(),
                     "max_number_digits", " digits", advice=NUMBER_ADVICE)
        if count > limits.max_numbers:
            limits.check("The numbers of the text read through normalize_text", count, "max_numbers",
                         advice=NUMBERS_ADVICE)


def without_numbers(text: str) -> str:
    """``text`` with its runs of digits left out: what normalisation can only lengthen, so the length planned
    from it is a floor of the length planned after normalisation (checked before the normaliser runs)."""
    return _NUMBER_RE.sub("", text)


class TextWorkGate:
    """One text job at a time, the shortest waiting one next; a bounded waiting room (see the module)."""

    def __init__(self, max_waiting_chars: int = MAX_WAITING_CHARS, max_waiting_texts: int = MAX_WAITING_TEXTS,
                 small_chars: int = SMALL_CHARS):
        self.max_waiting_chars, self.max_waiting_texts = int(max_waiting_chars), int(max_waiting_texts)
        self.small_chars = int(small_chars)
        self._cond = threading.Condition()
        self._running = False
        self._waiting: list[tuple[int, int]] = []   # a heap of (characters, arrival)
        self._waiting_chars = 0
        self._arrivals = itertools.count()
        self.counters = {"ran": 0, "waited": 0, "refused": 0}

    def stats(self) -> dict:
        with self._cond:
            return dict(self.counters, running=self._running, waiting=len(self._waiting),
                        waiting_chars=self._waiting_chars)

    @contextlib.contextmanager
    def slot(self, size: int, what: str = "Text normalisation") -> Iterator[None]:
        """Hold the gate for a job of ``size`` characters: at once when free, else in its turn; ``Busy`` when the
        characters waiting would pass ``max_waiting_chars``."""
        size = max(0, int(size))
        with self._cond:
            if self._running or self._waiting:
                over = size > self.small_chars and self._waiting_chars + size > self.max_waiting_chars
                if self._waiting and (over or len(self._waiting) >= self.max_waiting_texts):
                    self.counters["refused"] += 1
                    raise Busy(f"The server is busy: {what} of {self._waiting_chars} characters is waiting, the "
                               f"most it takes. Try again shortly, or send a shorter text.")
                ticket = (size, next(self._arrivals))
                heapq.heappush(self._waiting, ticket)
                self._waiting_chars += size
                self.counters["waited"] += 1
                try:
                    self._cond.wait_for(lambda: not self._running and self._waiting[0] == ticket)
                finally:
                    self._waiting.remove(ticket)
                    heapq.heapify(self._waiting)
                    self._waiting_chars -= size
            self._running = True
            self.counters["ran"] += 1
        try:
            yield
        finally:
            with self._cond:
                self._running = False
                self._cond.notify_all()


#: the process's gate: every normalisation (normalize.normalize_text) passes through it
GATE = TextWorkGate()

_PRELOAD: dict[str, threading.Thread] = {}
_PRELOAD_LOCK = threading.Lock()


def preload_in_background(build, languages: tuple[str, ...] = ("en",)) -> Optional[threading.Thread]:
    """Run ``build(code)`` for each of ``languages`` in a background thread, once per process for the same
    languages (None when it was started already); a failure is logged, and the first request builds it."""
    key = ",".join(languages)
    with _PRELOAD_LOCK:
        if key in _PRELOAD:
            return None

        def run() -> None:
            for code in languages:
                try:
                    build(code)
                except Exception as exc:   # noqa: BLE001 - the first request then builds it and says what failed
                    log.warning("Preloading the %s text normaliser failed (%s); it is built on first use.", code,
                                type(exc).__name__)
        thread = threading.Thread(target=run, name="omnivoice-normalizer-preload", daemon=True)
        _PRELOAD[key] = thread
        thread.start()
        return thread
