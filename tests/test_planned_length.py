"""A text's length is planned from what is read: a run of spaces, tabs and line breaks counts as the one character
the reference reads it as, so 1,000 line breaks and "Hi." no longer plan 71 s of audio.  What the reference
reads (its own ``_combine_text``) is unchanged by that, and ordinary text (no two whitespace characters in a
row) keeps the reference's plan exactly.  Through the engine and the HTTP API (in process)."""

from __future__ import annotations

import warnings

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from omnivoice.models import omnivoice as ref

from omnivoice_demo import OmniVoiceEngine
from omnivoice_demo.api.routes import ApiContext, build_router
from omnivoice_demo.constants import FRAME_RATE
from omnivoice_demo.engine import duration
from omnivoice_demo.text.prompt import collapse_whitespace_runs
from omnivoice_demo.studio import EngineService, ModelManager, VoiceLibrary

RUNS = ["\n" * 1000 + "Hi.", "Hello  world.", "One.\n\nTwo.", "a \n\t b", "Tabs\t\tand\r\n\r\nbreaks", "你  好",
        "  padded  ", "Ｆｕｌｌ　　width", "mixed \u3000 spaces"]
ORDINARY = ["Hello world, this is a test.", "Line one.\nLine two.", "Tab\tseparated", "Windows\r\nline",
            "你好，世界。", " Leading and trailing. "]


@pytest.mark.parametrize("text", RUNS + ORDINARY)
@pytest.mark.parametrize("ref_text", [None, "This is the reference."])
def test_the_reference_reads_a_collapsed_text_as_it_reads_the_raw_one(text, ref_text):
    assert ref._combine_text(collapse_whitespace_runs(text), ref_text) == ref._combine_text(text, ref_text)


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_text_is_left_as_it_is(text):
    assert collapse_whitespace_runs(text) == text


@pytest.fixture(scope="module")
def engine(tiny_fp32_folder):
    return OmniVoiceEngine(tiny_fp32_folder)


def test_whitespace_runs_do_not_lengthen_the_plan(engine):
    plan = engine.prepare("\n" * 1000 + "Hi.")
    assert plan.target_frames == engine.prepare("\nHi.").target_frames < 5 * FRAME_RATE
    assert duration.estimate_target_frames("\n" * 1000 + "Hi.") > 60 * FRAME_RATE  # the raw text's plan
    assert engine.prepare("Hello   there,\n\n\n  friend.").target_frames == \
        engine.prepare("Hello there, friend.").target_frames
    assert engine.prepare("One.\n\n\n\nTwo.").target_frames == engine.prepare("One.\nTwo.").target_frames


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_text_keeps_the_reference_plan(engine, text):
    assert engine.prepare(text).target_frames == duration.estimate_target_frames(text)


def test_http_speech_of_line_breaks_is_short(tiny_fp32_folder, tmp_path):
    manager = ModelManager(cache_dir=tmp_path / "cache", offline=True)
    manager.load(str(tiny_fp32_folder), "fp32")
    app = FastAPI()
    app.include_router(build_router(ApiContext(models=manager, voices=VoiceLibrary(tmp_path / "voices"),
                                               service=EngineService())))
    answer = TestClient(app).post("/v1/audio/speech", json={"model": "omnivoice", "input": "\n" * 1000 + "Hi.",
                                                            "voice": "auto", "steps": 1, "response_format": "wav",
                                                            "stream": False})
    assert answer.status_code == 200, answer.text
    assert float(answer.headers["X-OmniVoice-Duration"]) < 5
