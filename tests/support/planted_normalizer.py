"""A planted slow normaliser (issue 42, item 4): the first reading at once, every later one held until the engine's
first step, recording whether it came first.  Plain tests/support code: it runs against any checkout's engine."""

from __future__ import annotations

import threading

import pytest

from omnivoice_demo.text import normalize

#: how long a planted reading of a later sentence waits for the first step (it never comes where prepare reads them)
WAIT = 5.0


@pytest.fixture
def held_reading(monkeypatch):
    """A planted normaliser: the first call reads at once, every later one waits (at most ``WAIT``) until ``first_step``
    is set; ``reads`` records, per call, its text and whether the first step had come when it was read."""
    first_step = threading.Event()
    reads = []
    original = normalize.build_normalizer
    installed = not normalize.missing_modules()   # else a stand-in reading (the test is of timing, not of words)

    def build(code):
        def read(text):
            if reads:
                reads.append((text, first_step.wait(WAIT)))
            else:
                reads.append((text, first_step.is_set()))
            return fn(text)
        fn = original(code) if installed else (lambda text: text.replace("3", "three"))
        return read

    monkeypatch.setattr(normalize, "build_normalizer", build)
    monkeypatch.setattr(normalize, "missing_modules", lambda: [])
    normalize.read_as_words.cache_clear()
    yield first_step, reads
    normalize.read_as_words.cache_clear()
