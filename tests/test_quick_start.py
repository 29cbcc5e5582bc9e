"""A quick first chunk for a voice assistant (issue 59, item 4; engine/streaming.py ``quick_start``), sentence
streaming's later chunks by the one splitter (issue 60), and the voice-assistant defaults of Wyoming and the
HTTP API's streams."""

from __future__ import annotations

import numpy as np
import pytest

from omnivoice_demo import OmniVoiceEngine
from omnivoice_demo.constants import FRAME_RATE
from omnivoice_demo.engine.duration import estimate_target_frames, total_weight
from omnivoice_demo.engine.streaming import (MIN_FIRST_FRAMES, MIN_QUICK_FRAMES, _frames, chunk_frames,
                                             sentence_chunks)
from omnivoice_demo.settings.generation import GenerationConfig
from omnivoice_demo.settings.presets import QUICK_START_SECONDS, VOICE_ASSISTANT_PRESET
from omnivoice_demo.text.sentences import split_sentences

#: issue 59's reply: a 2 s first sentence, then a longer one
REPLY = "The storm passed before midnight. By morning the streets were quiet again and the sky was clear."
CLAUSE = "Yes, of course. The storm passed before midnight, and by morning the streets were quiet again."
FAST = dict(num_step=2, seed=3)


@pytest.fixture(scope="module")
def engine(tiny_fp32_folder):
    return OmniVoiceEngine(tiny_fp32_folder)


def chunks_of(text: str, quick: float, **kwargs) -> list[str]:
    return sentence_chunks(text, estimate_target_frames(text), quick_start=quick, **kwargs)


# --- planning ----------------------------------------------------------------------------------------

def test_the_first_chunk_is_a_clause_where_one_fits_and_nothing_is_lost():
    chunks = chunks_of(CLAUSE, 1.2)
    assert chunks[0] == "Yes, of course."   # the longest run of clauses within 1.2 s, at the sentence's end
    assert MIN_QUICK_FRAMES <= _frames(chunks[0]) <= 1.2 * FRAME_RATE
    assert " ".join(chunks).split() == CLAUSE.split()
    assert chunks_of(CLAUSE, 0.0)[0].startswith("Yes, of course. The storm")   # off: at least 2 s


def test_a_long_first_clause_gives_its_first_words_and_the_next_chunk_ends_a_sentence():
    chunks = chunks_of(REPLY, 1.2)
    assert chunks[0] == "The storm passed"   # no clause within 1.2 s: the first words within it
    assert _frames(chunks[0]) <= 1.2 * FRAME_RATE
    # the next chunk is the rest of that sentence and what it takes to be made while the first plays
    assert chunks[1].startswith("before midnight.") and _frames(chunks[1]) >= MIN_FIRST_FRAMES
    assert " ".join(chunks).split() == REPLY.split()
    assert chunks_of(REPLY, 0.0)[0] == "The storm passed before midnight."


def test_a_mark_inside_a_number_is_no_clause_and_a_short_text_stays_whole():
    chunks = chunks_of("At 10:30, 1,250 people came to the square. The band played until late at night.", 1.2)
    assert not chunks[0].endswith(("10:", "1,"))
    assert chunks_of("Hello there. Bye now.", 1.2) == ["Hello there. Bye now."]   # nothing worth a chunk after
    assert chunks_of("你好，我们明天一起去公园散步，好吗？", 1.2) == ["你好，我们明天一起去公园散步，好吗？"]


def test_later_chunks_are_cut_by_the_one_splitter_not_the_references_chunker():
    """The reference's chunker ends a chunk at every full stop past its abbreviations list ("p.m.", "e.g."); the
    streaming path's later chunks are ``split_sentences``' sentences (issue 60)."""
    from omnivoice_demo.text.prompt import chunk_text_punctuation

    rest = "We met at 5 p.m. today in the hall. It rained e.g. on the roof. Then we all went home."
    text = "The first sentence of this text is here. " + rest
    chunks = sentence_chunks(text, estimate_target_frames(text), chunk_duration=1.0)
    assert chunks[1:] == [s.strip() for s in split_sentences(rest)]
    assert chunks[1:] != chunk_text_punctuation(rest, chunk_len=10)   # the reference's cuts differ here


# --- lengths -----------------------------------------------------------------------------------------

def test_a_quick_first_chunk_keeps_the_speaking_rate_of_the_later_ones(engine):
    """The estimator's soft floor would draw a short first chunk out, and every later one that takes its rate
    from it; a quick start's first chunk is sized at the rate alone."""
    plan = engine.prepare(REPLY, sentence_streaming=True, quick_start=1.2)
    assert plan.chunks[0] == "The storm passed"
    frames = chunk_frames(plan)
    rates = [f / total_weight(c) for f, c in zip(frames, plan.chunks)]
    assert max(rates) / min(rates) < 1.1
    floored = estimate_target_frames(plan.chunks[0])
    assert frames[0] < floored * 0.8   # what the floor would have made of it
    assert engine._layout(plan) == frames   # the engine runs these lengths


# --- generation --------------------------------------------------------------------------------------

def test_without_a_voice_the_quick_first_chunk_is_the_voice_of_the_later_ones(engine, monkeypatch):
    seen = []
    original = engine._rows

    def spy(text, frames, ref_text, ref_codes, plan):
        seen.append((text, frames, ref_text, None if ref_codes is None else np.array(ref_codes)))
        return original(text, frames, ref_text, ref_codes, plan)

    monkeypatch.setattr(engine, "_rows", spy)
    events = list(engine.stream(CLAUSE, sentence_streaming=True, quick_start=1.2, **FAST))
    result = events[-1]
    assert result.chunks[0] == "Yes, of course." and len(result.chunks) >= 2
    assert [e.chunk for e in events if e.kind == "chunk"] == list(range(len(result.chunks)))
    assert seen[0][2] is None and seen[0][3] is None
    for _text, _length, ref_text, ref_codes in seen[1:]:
        assert ref_text == result.chunks[0]
        np.testing.assert_array_equal(ref_codes, result.codes[0])
    assert result.codes[0].shape[1] == seen[0][1] == chunk_frames(engine.prepare(
        CLAUSE, sentence_streaming=True, quick_start=1.2, **FAST))[0]


def test_the_exact_path_and_sentence_streaming_are_unchanged_when_it_is_off(engine):
    plain = engine.generate(CLAUSE, **FAST)
    ignored = engine.generate(CLAUSE, quick_start=1.2, **FAST)   # no sentence streaming: the exact path
    assert ignored.chunks == plain.chunks == [CLAUSE]
    for mine, theirs in zip(ignored.codes, plain.codes):
        np.testing.assert_array_equal(mine, theirs)
    streamed = engine.prepare(CLAUSE, sentence_streaming=True, **FAST)
    assert streamed.chunks[0].startswith("Yes, of course. The storm")
    assert engine._layout(streamed) == [estimate_target_frames(streamed.chunks[0])] + [
        estimate_target_frames(c, streamed.chunks[0], estimate_target_frames(streamed.chunks[0]))
        for c in streamed.chunks[1:]]


def test_quick_start_is_a_setting_and_an_eval_candidate():
    from omnivoice_demo.eval.candidates import parse_candidate

    assert GenerationConfig().quick_start == 0.0
    candidate = parse_candidate("name=quick,preset=fast,streaming=on,quick_start=1.2")
    assert candidate.config.quick_start == 1.2 and candidate.config.sentence_streaming
    assert "quick start 1.2 s" in candidate.describe()
    with pytest.raises(Exception, match="quick_start"):
        GenerationConfig(quick_start=-1.0).validate()


# --- front ends --------------------------------------------------------------------------------------

def test_wyoming_defaults_to_the_voice_assistant_preset_with_a_quick_start_and_reference_is_a_flag_away():
    from omnivoice_demo.cli.main import build_parser
    from omnivoice_demo.wyoming.server import make_context

    assert VOICE_ASSISTANT_PRESET == "fast"
    parser = build_parser()
    args = parser.parse_args(["wyoming"])
    assert (args.wyoming_preset, args.wyoming_quick_start) == ("fast", QUICK_START_SECONDS)
    exact = parser.parse_args(["wyoming", "--preset", "reference", "--quick-start", "0"])
    assert (exact.wyoming_preset, exact.wyoming_quick_start) == ("reference", 0.0)
    beside = parser.parse_args(["serve", "--wyoming-uri", "tcp://127.0.0.1:10200", "--wyoming-quick-start", "0.8"])
    assert (beside.wyoming_preset, beside.wyoming_quick_start) == ("fast", 0.8)
    context = make_context(None, None, None)
    assert (context.preset, context.quick_start) == ("fast", QUICK_START_SECONDS)
    with pytest.raises(SystemExit):
        parser.parse_args(["wyoming", "--quick-start", "-1"])


def test_the_http_stream_starts_quick_and_a_whole_file_is_the_requests_own(engine):
    from omnivoice_demo.api import speech

    def plan(body):
        return speech.plan_for(engine, speech.parse(dict(input=REPLY, seed=3, **body)), None, None)

    streamed = plan({"stream_format": "audio"})
    assert streamed.config.sentence_streaming and streamed.config.quick_start == QUICK_START_SECONDS
    assert streamed.chunks[0] == "The storm passed"
    assert plan({"stream_format": "audio", "quick_start": 0}).chunks[0] == "The storm passed before midnight."
    old = plan({"stream_format": "audio", "sentence_streaming": False})   # the reference's chunker at 4 s
    assert not old.config.sentence_streaming and old.config.quick_start == 0.0
    whole = plan({"stream": False})
    assert not whole.config.sentence_streaming and whole.chunks == [REPLY]
