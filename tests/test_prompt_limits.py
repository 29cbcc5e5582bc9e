"""Every text that enters the prompt counts against the limits, and each is valid Unicode.

The text, an instruct, a voice's reference transcript (given, cloned or in a saved file, whose meta is
bounded before it is read) each count against ``max_text_chars``, and together against
``max_prompt_tokens``; a lone surrogate in any of them is ``InvalidInput`` with a message that can be sent.
The engine runs the tiny fp32 folder in process (``engine`` and ``limited`` in conftest.py).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from omnivoice_demo.errors import InvalidInput, ResourceLimitExceeded
from omnivoice_demo.storage.voice_file import MAX_META_CHARS, Voice
from tests.test_vocabulary import a_voice


LONG_TRANSCRIPT = "word " * 2000    # 10,000 characters: the probe sent 2,000 to 16,000 words


# --- the text, an instruct and a reference transcript each count, and together ----------------------------

def test_a_long_reference_transcript_is_refused_before_any_work(engine):
    voice = a_voice(transcript=LONG_TRANSCRIPT)
    with pytest.raises(ResourceLimitExceeded, match="transcript.*max_text_chars") as caught:
        engine.prepare("Hi.", voice=voice, num_step=1)
    assert caught.value.param == "max_text_chars"


def test_prompt_tokens_are_bounded_in_total(engine, limited):
    """Text and transcript each within the characters, together over the prompt's tokens."""
    text, transcript = "one two three four five six. " * 10, "seven eight nine ten eleven. " * 10
    plan = engine.prepare(text, voice=a_voice(transcript=transcript), num_step=1)
    tokens = engine.planner.prompt_tokens(plan)
    assert tokens > len(engine.tokenizer.encode(text).ids) + len(engine.tokenizer.encode(transcript).ids)
    limited(max_prompt_tokens=tokens - 1)
    with pytest.raises(ResourceLimitExceeded, match="max_prompt_tokens") as caught:
        engine.prepare(text, voice=a_voice(transcript=transcript), num_step=1)
    assert caught.value.param == "max_prompt_tokens"
    limited(max_prompt_tokens=tokens)
    engine.prepare(text, voice=a_voice(transcript=transcript), num_step=1)


def test_an_instruct_and_a_clone_transcript_count_too(engine):
    with pytest.raises(ResourceLimitExceeded, match="instruct"):
        engine.prepare("Hi.", instruct="female, " * 1000)
    audio = np.zeros(24000, dtype=np.float32)
    with pytest.raises(ResourceLimitExceeded, match="transcript"):
        engine.clone_voice(audio, 24000, transcript=LONG_TRANSCRIPT)


def test_a_voice_file_with_a_huge_meta_is_refused_before_it_is_read(tmp_path):
    meta = {"format_version": 1, "transcript": "x" * (MAX_META_CHARS + 10), "rms": 0.1}
    path = tmp_path / "big.npz"
    np.savez(path, codes=a_voice().codes, meta=np.array(json.dumps(meta)))
    with pytest.raises(InvalidInput, match="meta"):
        Voice.load(path)


def test_a_loaded_voice_with_a_long_transcript_is_refused(engine, tmp_path):
    path = a_voice(transcript=LONG_TRANSCRIPT).save(tmp_path / "long.npz")
    with pytest.raises(ResourceLimitExceeded, match="transcript"):
        engine.load_voice(path)


# --- a lone surrogate is invalid input --------------------------------------------------------------------

@pytest.mark.parametrize("field", ["text", "instruct", "transcript"])
def test_a_lone_surrogate_is_invalid_input_without_echoing_it(engine, field):
    bad = "Hello \ud800 there."
    kwargs = {"text": "Hi.", "num_step": 1}
    if field == "text":
        kwargs["text"] = bad
    elif field == "instruct":
        kwargs["instruct"] = bad
    else:
        kwargs["voice"] = a_voice(transcript=bad)
    with pytest.raises(InvalidInput, match="not valid Unicode") as caught:
        engine.prepare(**kwargs)
    str(caught.value).encode("utf-8")  # the message itself can be sent
