"""A voice uploaded over HTTP without a transcript: a long clip is cut to its best part of up to 10 s before it
is recognised (as the Clone tab's "Keep the best 10 s"), and the voice is cloned from that part, so clip and
transcript match; a short clip is recognised whole."""

from __future__ import annotations

import io

import numpy as np
import pytest
import soundfile as sf

from omnivoice_demo.studio import VoiceLibrary
from tests.support.api_client import router_client
from tests.support.signals import speech_like


def clip(seconds: float) -> bytes:
    """Speech-like sound with a long silence in the middle: the best part is not the clip's first 10 s."""
    rate = 24000
    first = speech_like(3.0, rate, seed=1)[0]
    silence = np.zeros(int((seconds - 3.0 - 8.0) * rate), dtype=np.float32)
    last = speech_like(8.0, rate, seed=2)[0]
    data = io.BytesIO()
    sf.write(data, np.concatenate([first, silence, last]), rate, format="WAV")
    return data.getvalue()


@pytest.fixture
def heard():
    return []


@pytest.fixture
def api(engine, tmp_path, heard):
    def transcribe(audio, rate):
        heard.append(audio.shape[-1] / rate)
        return "Words the recogniser heard."
    return router_client(engine, VoiceLibrary(tmp_path / "voices"), transcribe=transcribe)


def upload(api, data: bytes, name: str):
    return api.post("/v1/audio/voices", files={"file": ("clip.wav", data, "audio/wav")},
                    data={"name": name, "consent": "true"})


def test_a_long_clip_without_a_transcript_is_cut_to_its_best_part_before_it_is_recognised(api, heard):
    answer = upload(api, clip(25.0), "Long")
    assert answer.status_code == 201, answer.text
    assert len(heard) == 1 and 8.0 <= heard[0] <= 10.0 + 1e-6, heard
    assert answer.json()["seconds"] <= 10.05 and answer.json()["transcript"] == "Words the recogniser heard."


def test_a_short_clip_is_recognised_whole(api, heard):
    data = io.BytesIO()
    sf.write(data, speech_like(4.0, 24000, seed=3)[0], 24000, format="WAV")
    assert upload(api, data.getvalue(), "Short").status_code == 201
    assert heard == [pytest.approx(4.0, abs=0.01)]
