"""Text work is bounded before it is spent, and queued on its own (issue 43 item 2; issue 42 item 4).

The probe's case: twelve concurrent texts of a 599-digit number (about 5 s of normaliser CPU each here, more on
a busy box) were normalised before any limit looked at them, and a small request beside them waited 61 s
(0.12 s alone).  Now the digits and the numbers of a text are bounded before the normaliser runs, and the
normaliser has a gate of its own: one at a time, the shortest waiting text next, a bounded waiting room (429
past it).  The normaliser is planted (a recording stand-in) where its cost matters, so the tests assert what
ran and in which order, never wall-clock times.
"""

from __future__ import annotations

import functools
import threading

import pytest

from omnivoice_demo.text import normalize, text_work
from omnivoice_demo.text.text_work import TextWorkGate
from omnivoice_demo.errors import Busy, ResourceLimitExceeded
from tests.support.api_client import router_client

HEAVY = "7" * 599                         # the probe's text: 599 characters, one number
SMALL = "Hello there."


class PlantedNormaliser:
    """Stands in for WeTextProcessing's English normaliser: records each text it normalises (and, with ``hold``,
    keeps a text with "hold" in it until ``release`` is set)."""

    def __init__(self, hold: bool = False):
        self.seen: list[str] = []
        self.inside, self.release = threading.Event(), threading.Event()
        self.hold = hold
        self.lock = threading.Lock()

    def __call__(self, text: str) -> str:
        with self.lock:
            self.seen.append(text)
        if self.hold and "hold" in text:
            self.inside.set()
            assert self.release.wait(60)
        return text


@pytest.fixture
def planted(monkeypatch):
    fake = PlantedNormaliser()
    monkeypatch.setattr(normalize, "build_normalizer", lambda code: fake)
    monkeypatch.setattr(normalize, "GATE", TextWorkGate())
    normalize.read_as_words.cache_clear()
    yield fake
    normalize.read_as_words.cache_clear()


def test_a_long_number_is_refused_before_the_normaliser_runs(engine, planted):
    with pytest.raises(ResourceLimitExceeded, match=r"599 digits.*max_number_digits") as caught:
        engine.prepare(HEAVY, normalize_text=True, num_step=1)
    assert caught.value.param == "max_number_digits"
    assert "in groups with spaces" in str(caught.value) and "normalize_text=false" in str(caught.value)
    engine.prepare(" ".join(["1234"] * 5), normalize_text=True, num_step=1)   # the advice: in groups, it is read
    engine.prepare("Reference 1234567890123456789012345.", normalize_text=False, num_step=1)  # or as written
    many = " ".join(str(n) for n in range(engine.limits.max_numbers + 1))
    with pytest.raises(ResourceLimitExceeded, match=r"max_numbers\)\. Send the text in shorter parts"):
        engine.prepare(many, normalize_text=True, num_step=1)
    assert planted.seen == ["1234 1234 1234 1234 1234"]     # the normaliser saw neither refused text
    engine.prepare("It costs 12 dollars.", normalize_text=True, num_step=1)
    assert planted.seen[-1] == "It costs 12 dollars."


def test_the_planned_length_is_checked_on_the_raw_text_before_normalising(engine, planted, limited):
    limited(max_audio_seconds=2.0)
    with pytest.raises(ResourceLimitExceeded, match=r"before normalize_text.*max_audio_seconds"):
        engine.prepare("A sentence of words that goes on for a while, longer than two seconds of speech.",
                       normalize_text=True, num_step=1)
    assert planted.seen == []


def test_the_probe_twelve_heavy_texts_beside_a_small_one_over_http(engine, planted, tmp_path):
    """Twelve heavy requests at once answer 413 before any normalising; the small one is the only text the
    normaliser sees, and it gets its audio."""
    from omnivoice_demo.studio import VoiceLibrary

    api = router_client(engine, VoiceLibrary(tmp_path / "voices"))
    statuses, small = [], {}

    def heavy():
        statuses.append(api.post("/v1/audio/speech", json={"input": HEAVY, "stream": False, "steps": 1,
                                                           "normalize_text": True}).status_code)
    threads = [threading.Thread(target=heavy) for _ in range(12)]
    for thread in threads:
        thread.start()
    small["response"] = api.post("/v1/audio/speech", json={"input": SMALL, "stream": False, "steps": 1,
                                                             "normalize_text": True})
    for thread in threads:
        thread.join(120)
    assert statuses == [413] * 12
    assert small["response"].status_code == 200 and small["response"].content
    assert planted.seen == [SMALL]


def test_a_small_text_waits_for_at_most_the_one_in_flight_and_the_waiting_room_is_bounded(monkeypatch):
    """The stated factor: a small text waits for at most the one normalisation in flight (then runs next,
    before every longer text that came earlier); past MAX_WAITING_CHARS waiting, one more is Busy (429)."""
    fake = PlantedNormaliser(hold=True)
    gate = TextWorkGate(max_waiting_chars=4 * 500)
    monkeypatch.setattr(normalize, "build_normalizer", lambda code: fake)
    monkeypatch.setattr(normalize, "GATE", gate)
    normalize.read_as_words.cache_clear()
    heavy = [(f"heavy text {n:02d} " * 40)[:500] for n in range(12)]   # 500 characters each
    order, busy = [], []

    def run(text, label):
        try:
            normalize.normalize_text(text, "en")
            order.append(label)
        except Busy:
            busy.append(label)
    first = threading.Thread(target=run, args=("hold " + heavy[0], "heavy 0"))
    first.start()
    assert fake.inside.wait(30)                       # heavy 0 holds the normaliser
    others = [threading.Thread(target=run, args=(text, f"heavy {n}"))
              for n, text in enumerate(heavy[1:], 1)]
    for thread in others:
        thread.start()
        while thread.is_alive() and gate.stats()["waiting"] + len(busy) < others.index(thread) + 1:
            threading.Event().wait(0.01)               # each arrives in turn
    small = threading.Thread(target=run, args=(SMALL, "small"))
    small.start()
    while gate.stats()["waiting"] < 5:
        threading.Event().wait(0.01)
    fake.release.set()
    for thread in [first, small, *others]:
        thread.join(30)
    assert len(busy) == 11 - 4 and gate.counters["refused"] == 7    # four heavy texts fit the waiting room
    assert order[0] == "heavy 0" and order[1] == "small"            # the small one next, before waiting heavy ones
    assert sorted(order[2:]) == sorted(f"heavy {n}" for n in range(1, 5))
    normalize.read_as_words.cache_clear()


def test_a_server_builds_the_normaliser_before_its_first_request(monkeypatch):
    """Issue 42 item 4: a server (``service_from_arguments``) starts building the grammars in the background;
    its first request finds them built and does not build them again."""
    import argparse

    from omnivoice_demo.studio.service import service_from_arguments

    built, events = [], []

    def slow_build(code):
        events.append(("build", code))
        built.append(code)
        return lambda text: events.append(("normalise", text)) or text
    monkeypatch.setattr(normalize, "missing_modules", lambda: [])
    monkeypatch.setattr(normalize, "_normalizer", functools.lru_cache(maxsize=None)(slow_build))
    monkeypatch.setattr(text_work, "_PRELOAD", {})
    normalize.read_as_words.cache_clear()
    started = []
    real_start = normalize.start_preload

    def start(*args, **kwargs):
        started.append(real_start(*args, **kwargs))
        return started[-1]
    monkeypatch.setattr("omnivoice_demo.studio.service.start_preload", start)
    service_from_arguments(argparse.Namespace(max_queue=2, max_running=1))
    assert started and started[0] is not None
    started[0].join(30)
    assert built == ["en"]
    normalize.normalize_text("The first request.", "en")
    assert events == [("build", "en"), ("normalise", "The first request.")]
    normalize.read_as_words.cache_clear()


def test_a_normaliser_that_fails_on_a_text_is_said_in_the_result_and_the_response(engine, monkeypatch):
    """A stretch the normaliser raises on is read as written (as the reference's port always did), and now the plan's
    note (the result's settings, the app's "Numbers:" line) and the HTTP response's header say so."""
    from omnivoice_demo.api.speech import description_headers
    from omnivoice_demo.text.descriptions import read_description

    def failing(text: str) -> str:
        if "boom" in text:
            raise RuntimeError("the grammar broke")
        return text.replace("12", "twelve")

    monkeypatch.setattr(normalize, "build_normalizer", lambda code: failing)
    normalize.read_as_words.cache_clear()
    try:
        plain = engine.prepare("I have 12 apples.", language="en", normalize_text=True, num_step=1)
        broken = engine.prepare("I have 12 apples [laughter] boom 3.", language="en", normalize_text=True, num_step=1)
        streamed = engine.prepare("I have 12 apples. And boom 3 more.", language="en", normalize_text=True,
                                  num_step=1, sentence_streaming=True)
    finally:
        normalize.read_as_words.cache_clear()
    assert plain.text.startswith("I have twelve") and plain.normalization.failed == 0
    assert "failed" not in plain.settings["normalized_note"]
    assert broken.text.endswith("boom 3.") and broken.normalization.failed == 1
    assert "the normaliser failed on 1 stretch of the text, read as written there" in broken.settings["normalized_note"]
    assert streamed.normalization.failed == 1 and streamed.text.startswith("I have twelve")
    description = read_description(None)
    assert description_headers(broken, description)["X-OmniVoice-Normalize-Failed"] == "1"
    assert "X-OmniVoice-Normalize-Failed" not in description_headers(plain, description)
    assert description_headers(broken, description)["X-OmniVoice-Normalized"] == "en"
