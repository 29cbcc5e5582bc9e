"""Sentence streaming with numbers read as words (engine/read_ahead.py): the first sentence is generated while the
later ones are read, and the run is the one of the plan ``prepare`` makes of the whole text.

* English (WeTextProcessing) and German (num2words) texts whose sentences read alone as in the whole text: the
  streamed run's codes and audio are today's streaming output (the whole text read, then planned), and the exact
  path (streaming off) still reads the whole text;
* a text whose reading is not sentence-local (WeTextProcessing reads "14" after a long text as "one four", alone as
  "fourteen"): with streaming each sentence is read alone, whether the plan is read ahead or not; off, as before;
* the first chunk's steps run while the later sentences are read (a planted normaliser holds them until the first
  step), and a limit only the read text passes stops the run before any audio, with prepare's own error;
* when the whole plan's first chunk is not the one made, it is made again: the output is still the plan's.
"""

from __future__ import annotations

import numpy as np
import pytest

from omnivoice_demo.engine.read_ahead import StreamedPlan
from omnivoice_demo.errors import ResourceLimitExceeded
from omnivoice_demo.text import normalize
from tests.support.planted_normalizer import held_reading  # noqa: F401 - a fixture

FAST = dict(num_step=4, seed=7)

#: sentence-local readings: each sentence alone is read as in the whole text
LOCAL = {
    "en": ["The first of 3 trains leaves at 9 am, and it is full. It costs $12 for 2 people. We arrived on "
           "May 5 and stayed for 21 days.",
           "We counted 250 birds on the lake. Then 31 more came, and the day ended."],
    "de": ["Ich habe 42 Äpfel und 1999 Birnen gekauft, und das war genug. Morgen kommen 3 Freunde zu Besuch. "
           "Wir essen um 19 Uhr.",
           "Es waren 12 Leute da, und alle hatten Hunger. Später kamen noch 7 dazu. Dann gingen 5 wieder nach Hause."],
}
#: a reading that depends on the text's length: "14" alone is "fourteen", after about 100 characters "one four" (so are
#: 11, 15, 18, 19; "100" becomes "one oh oh")
NOT_LOCAL = "The cat sat on the mat. " * 5 + "The score was 21 to 14."


def codes_and_audio(events):
    result = list(events)[-1]
    return [c.tolist() for c in result.codes], result.audio


def assert_same_run(a, b):
    assert a[0] == b[0]
    np.testing.assert_array_equal(a[1], b[1])


def todays_streaming_plan(engine, text, language, **kwargs):
    """The plan today's streaming makes: the whole text read as words, then planned (before read_ahead)."""
    plan = engine.prepare(text, language=language, normalize_text=True, sentence_streaming=True, **kwargs)
    whole = normalize.normalize_text(text, language)
    return engine.planner.checked_plan(engine.planner.plan_of(whole, plan.language, None, None, plan.config, plan.normalization))


@pytest.mark.parametrize("language, text", [(lang, text) for lang, texts in LOCAL.items() for text in texts])
def test_read_ahead_is_todays_streaming_output_where_sentences_read_alone_as_in_the_whole(engine, language, text):
    assert normalize.normalize_sentences(text, language) == normalize.normalize_text(text, language)
    streamed = engine.prepare(text, language=language, normalize_text=True, sentence_streaming=True,
                              read_ahead=True, **FAST)
    assert isinstance(streamed, StreamedPlan)
    today = todays_streaming_plan(engine, text, language, **FAST)
    eager = engine.prepare(text, language=language, normalize_text=True, sentence_streaming=True, **FAST)
    assert streamed.complete() == today == eager and len(today.chunks) >= 2
    assert_same_run(codes_and_audio(engine.run(streamed)), codes_and_audio(engine.run(today)))
    # the exact path reads the whole text, as the reference
    assert engine.prepare(text, language=language, normalize_text=True, **FAST).text == \
        normalize.normalize_text(text, language)


def test_a_reading_that_is_not_sentence_local_is_each_sentences_own_with_streaming_only(engine):
    whole, alone = normalize.normalize_text(NOT_LOCAL, "en"), normalize.normalize_sentences(NOT_LOCAL, "en")
    assert whole.endswith("twenty one to one four.") and alone.endswith("twenty one to fourteen.")
    exact = engine.prepare(NOT_LOCAL, language="en", normalize_text=True, **FAST)
    assert exact.text == whole   # streaming off: the reference's reading, unchanged
    streamed = engine.prepare(NOT_LOCAL, language="en", normalize_text=True, sentence_streaming=True,
                              read_ahead=True, **FAST)
    eager = engine.prepare(NOT_LOCAL, language="en", normalize_text=True, sentence_streaming=True, **FAST)
    assert isinstance(streamed, StreamedPlan) and streamed.complete() == eager and eager.text == alone
    assert_same_run(codes_and_audio(engine.run(streamed)), codes_and_audio(engine.run(eager)))


@pytest.mark.parametrize("number, alone, in_a_paragraph", [
    (11, "eleven", "one one"), (14, "fourteen", "one four"), (19, "nineteen", "one nine"), (100, "one hundred", "one oh oh")])
def test_wetextprocessing_reads_some_numbers_digit_by_digit_after_a_long_text(number, alone, in_a_paragraph):
    """What docs/text.md says of the whole text's reading: after 120 characters of text, these numbers drift."""
    sentence = f"We stayed {number} days."
    before = "The cat sat on the mat. " * 5
    assert normalize.normalize_text(sentence, "en") == f"We stayed {alone} days."
    assert normalize.normalize_text(before + sentence, "en").endswith(f"We stayed {in_a_paragraph} days.")
    assert normalize.normalize_sentences(before + sentence, "en").endswith(f"We stayed {alone} days.")


def test_nothing_to_read_ahead_gives_prepares_own_plan(engine):
    kwargs = dict(language="en", normalize_text=True, read_ahead=True, **FAST)
    assert not isinstance(engine.prepare(LOCAL["en"][0], **kwargs), StreamedPlan)    # streaming off
    assert not isinstance(engine.prepare("It costs $12.", sentence_streaming=True, **kwargs), StreamedPlan)
    assert not isinstance(engine.prepare(LOCAL["en"][0], sentence_streaming=True, duration=9.0, **kwargs),
                          StreamedPlan)   # the whole text's length sets every chunk's pace


def test_the_first_chunk_is_generated_while_the_later_sentences_are_read(engine, held_reading):
    first_step, reads = held_reading
    text = "The first of 3 sentences is here, and it goes on. The second one has 3 more words. The third ends it."
    order = []
    for event in engine.run(engine.prepare(text, language="en", normalize_text=True, sentence_streaming=True,
                                           read_ahead=True, **FAST)):
        if event.kind == "step" and not first_step.is_set():
            order.append("first step")
            first_step.set()
        elif event.kind == "chunk" and event.chunk == 0:
            order.append("first audio")
            read_by_then = len(reads)
    assert order == ["first step", "first audio"]
    assert reads[0][0].startswith("The first of 3 sentences") and "second" not in reads[0][0]
    later = reads[1:]
    assert later and all(waited for _, waited in later), reads   # read after the first chunk's steps began
    assert read_by_then == len(reads)   # the first audio comes after they are read and the whole plan checked


def test_a_limit_only_the_read_text_passes_stops_the_run_before_any_audio(limited, monkeypatch):
    engine = limited(max_audio_seconds=20.0)
    text = "We have some numbers here, and they are long. " + " ".join(
        f"Number {n} is next." for n in (12345678901234, 98765432109876, 55555555555555, 77777777777777))
    monkeypatch.setattr(normalize, "missing_modules", lambda: [])
    monkeypatch.setattr(normalize, "build_normalizer", lambda code: lambda s: _spelled(s))
    normalize.read_as_words.cache_clear()
    kwargs = dict(language="en", normalize_text=True, sentence_streaming=True, **FAST)
    with pytest.raises(ResourceLimitExceeded) as refused:
        engine.prepare(text, **kwargs)
    plan = engine.prepare(text, read_ahead=True, **kwargs)   # the text as written and its first chunk pass
    assert isinstance(plan, StreamedPlan)
    kinds = []
    with pytest.raises(ResourceLimitExceeded) as stopped:
        for event in engine.run(plan):
            kinds.append(event.kind)
    assert str(stopped.value) == str(refused.value) and "chunk" not in kinds
    normalize.read_as_words.cache_clear()


def _spelled(text: str) -> str:
    """A planted reading: every digit as its English word (long numbers read long)."""
    words = "zero one two three four five six seven eight nine".split()
    return "".join(f" {words[int(ch)]} " if ch.isdigit() else ch for ch in text)


def test_a_first_chunk_the_whole_plan_does_not_start_with_is_made_again(engine, monkeypatch):
    text = LOCAL["en"][0]
    kwargs = dict(language="en", normalize_text=True, sentence_streaming=True, **FAST)
    eager = codes_and_audio(engine.run(engine.prepare(text, **kwargs)))
    monkeypatch.setattr(StreamedPlan, "head_agrees", lambda self, whole, frames: False)
    events = list(engine.run(engine.prepare(text, read_ahead=True, **kwargs)))
    first_chunk_steps = [e.step for e in events if e.kind == "step" and e.chunk == 0]
    assert first_chunk_steps == list(range(1, 5)) * 2   # made from the head, then again from the whole plan
    assert_same_run(codes_and_audio(events), eager)


def test_closing_the_run_during_the_first_chunk_stops_it_at_once(engine, monkeypatch):
    stopped = []
    original = engine._unmask

    def unmask(*args, **kwargs):
        try:
            yield from original(*args, **kwargs)
        finally:
            stopped.append(True)

    monkeypatch.setattr(engine, "_unmask", unmask)
    plan = engine.prepare(LOCAL["en"][0], language="en", normalize_text=True, sentence_streaming=True,
                          read_ahead=True, **FAST)
    events = engine.run(plan)
    assert next(events).kind == "step"
    events.close()
    assert stopped == [True]   # the first chunk's steps ended with the run, not after its reading
    assert plan.complete().chunks[0] == plan.head.chunks[0]   # the reading finished on its worker, dropped
