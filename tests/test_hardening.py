"""Issue 21: the probe's cases that got through, each as a test that failed before its fix.

Numbered as the issue's items: 1 the texts that enter the prompt, 3 voice files written atomically and
the start-up sweep, 9 malformed inputs as 4xx, and the others below.  The engine runs the tiny fp32
folder in process; the HTTP API is the real router on a FastAPI test client (no subprocess).
"""

from __future__ import annotations

import dataclasses
import json
import pathlib

import numpy as np
import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from omnivoice_demo.config import Limits
from omnivoice_demo.errors import InvalidInput, ResourceLimitExceeded
from omnivoice_demo.voice import MAX_META_CHARS, Voice
from tests.test_vocabulary import a_voice

LONG_TRANSCRIPT = "word " * 2000    # 10,000 characters: the probe sent 2,000 to 16,000 words


@pytest.fixture(scope="module")
def engine(tiny_fp32_folder):
    from omnivoice_demo.engine import OmniVoiceEngine

    return OmniVoiceEngine(tiny_fp32_folder, verify="size", calibrate=False, backbone="fp32")


@pytest.fixture
def limited(engine):
    """The module's engine with other limits for one test (restored after it)."""
    original = engine.limits

    def set_limits(**fields):
        engine.limits = dataclasses.replace(original, **fields)
        return engine
    yield set_limits
    engine.limits = original


# --- item 1: every text that enters the prompt counts against the limits ------------------------

def test_a_long_reference_transcript_is_refused_before_any_work(engine):
    voice = a_voice(transcript=LONG_TRANSCRIPT)
    with pytest.raises(ResourceLimitExceeded, match="transcript.*max_text_chars") as caught:
        engine.prepare("Hi.", voice=voice, num_step=1)
    assert caught.value.param == "max_text_chars"


def test_prompt_tokens_are_bounded_in_total(engine, limited):
    """Text and transcript each within the characters, together over the prompt's tokens."""
    text, transcript = "one two three four five six. " * 10, "seven eight nine ten eleven. " * 10
    plan = engine.prepare(text, voice=a_voice(transcript=transcript), num_step=1)
    tokens = engine.prompt_tokens(plan)
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


# --- item 3: voice files are written whole or not at all; unreadable ones are swept aside -----------

def _fail_midway(error):
    """An ``np.savez`` that writes some bytes and then fails (a kill or a full disk in the middle)."""
    def savez(handle, **arrays):
        handle.write(b"PK\x03\x04 half a voice")
        raise error
    return savez


@pytest.mark.parametrize("error", [OSError(28, "No space left on device"), KeyboardInterrupt()])
def test_a_voice_save_that_fails_midway_leaves_the_old_file(tmp_path, monkeypatch, error):
    from omnivoice_demo.studio import VoiceLibrary

    library = VoiceLibrary(tmp_path / "voices")
    library.save(a_voice(transcript="The first one."), "Anna")
    before = library.path("Anna").read_bytes()
    monkeypatch.setattr(np, "savez", _fail_midway(error))
    expected = (InvalidInput, "full") if isinstance(error, OSError) else (KeyboardInterrupt, None)
    with pytest.raises(expected[0], match=expected[1]):
        library.save(a_voice(transcript="The second one."), "Anna")
    with pytest.raises(expected[0]):
        a_voice().save(tmp_path / "voices" / "Carl.npz")
    monkeypatch.undo()
    assert library.path("Anna").read_bytes() == before
    assert library.names() == ["Anna"] and sorted(p.name for p in (tmp_path / "voices").iterdir()) == ["Anna.npz"]


def test_a_read_only_voice_folder_is_a_clear_error(tmp_path, monkeypatch):
    """(Tests run as root here, where chmod cannot make a folder read-only: the system's answer is planted.)"""
    import errno

    from omnivoice_demo import atomic
    from omnivoice_demo.studio import VoiceLibrary

    def read_only(*args, **kwargs):
        raise OSError(errno.EROFS, "Read-only file system")
    monkeypatch.setattr(atomic.tempfile, "mkstemp", read_only)
    with pytest.raises(InvalidInput, match="read-only") as caught:
        VoiceLibrary(tmp_path / "voices").save(a_voice(), "Bob")
    assert str(tmp_path) not in str(caught.value)


def test_the_start_up_sweep_quarantines_unreadable_voices(tmp_path):
    from omnivoice_demo.studio import VoiceLibrary

    library = VoiceLibrary(tmp_path / "voices", private=True)
    library.save(a_voice(), "Good", session="api")
    folder = library.folder("api")
    (folder / "Empty.npz").write_bytes(b"")                       # kill -9 during a write in place
    (folder / "Cut.npz").write_bytes(library.path("Good", "api").read_bytes()[:4096][:200])  # a full disk
    (folder / ".Good-abc123.part").write_bytes(b"unfinished")
    assert set(library.names("api")) == {"Good", "Empty", "Cut"}
    moved = library.sweep()
    assert sorted(p.name.split(".npz")[0] for p in moved) == ["Cut", "Empty"]
    assert library.names("api") == ["Good"] and not list(folder.glob("*.part"))
    assert all(p.is_relative_to(tmp_path / "voices" / "quarantine") for p in moved)
    library.save(a_voice(), "Empty", session="api", overwrite=False)  # the name is free again
    assert library.load("Empty", "api").transcript == "Hello there."
