"""A WAV whose header tells the truth: the README's OpenAI Python example, run as written (only its client
pointed at the in-process router), writes a WAV whose RIFF and data sizes are the file's; a WAV is streamed (its
sizes "unknown", 0xFFFFFFFF) only when the client asks for streaming; pcm, mp3 and opus stay streamed."""

from __future__ import annotations

import pathlib
import re
import struct
import wave

import openai
import pytest
import soundfile as sf

from omnivoice_demo.api import encoding
from omnivoice_demo.studio import VoiceLibrary
from tests.support.api_client import router_client

ROOT = pathlib.Path(__file__).resolve().parents[1]


def readme_python_example() -> str:
    """The README's first ``openai`` block, as a reader copies it."""
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    example = next(block for block in blocks if "from openai import OpenAI" in block)
    assert 'response_format="wav"' in example and "write_to_file" in example
    return example


@pytest.fixture
def api(engine, tmp_path):
    return router_client(engine, VoiceLibrary(tmp_path / "voices"))


def test_the_readmes_openai_example_writes_a_wav_with_its_true_length(api, tmp_path, monkeypatch):
    real = openai.OpenAI
    monkeypatch.setattr(openai, "OpenAI", lambda **kw: real(**dict(kw, base_url="http://testserver/v1",
                                                                     http_client=api, max_retries=0)))
    monkeypatch.chdir(tmp_path)
    exec(compile(readme_python_example(), "README.md", "exec"), {})
    data = (tmp_path / "hello.wav").read_bytes()
    riff, = struct.unpack("<I", data[4:8])
    assert riff == len(data) - 8, "the RIFF size is the file's"
    with wave.open(str(tmp_path / "hello.wav")) as handle:
        frames, rate = handle.getnframes(), handle.getframerate()
    assert rate == 24000 and 0 < frames == (len(data) - 44) // 2
    info = sf.info(str(tmp_path / "hello.wav"))
    assert info.frames == frames and abs(info.duration - frames / 24000) < 1e-9


def speech(api, **body):
    return api.post("/v1/audio/speech", json={"input": "Hello there.", "voice": "alloy", "steps": 4, "seed": 7,
                                              **body})


def test_a_wav_is_streamed_only_when_asked(api):
    whole = speech(api, response_format="wav")
    assert whole.status_code == 200 and "x-omnivoice-codes-sha256" in whole.headers
    assert struct.unpack("<I", whole.content[4:8])[0] == len(whole.content) - 8
    # "stream": true alone is OpenAI's default stream_format, audio: a WAV, never SSE text (issue 51: the docs said
    # a streamed WAV, the answer was text/event-stream, and a client that saved the body had no audio)
    for asked in ({"stream_format": "audio"}, {"stream": True, "stream_format": "audio"}, {"stream": True}):
        streamed = speech(api, response_format="wav", **asked)
        assert streamed.status_code == 200 and "x-omnivoice-codes-sha256" not in streamed.headers
        assert streamed.headers["content-type"].startswith("audio/") and streamed.content[:4] == b"RIFF"
        assert streamed.content[4:8] == b"\xff\xff\xff\xff"
        with sf.SoundFile(__import__("io").BytesIO(streamed.content)) as handle:
            assert handle.samplerate == 24000


@pytest.mark.parametrize("name", ["pcm", "mp3", "opus"])
def test_pcm_mp3_and_opus_stay_streamed_by_default(api, name):
    if name not in encoding.formats():
        pytest.skip(f"this libsndfile cannot write {name}")
    assert encoding.streamed_by_default(name) and not encoding.streamed_by_default("wav")
    response = speech(api, response_format=name)
    assert response.status_code == 200 and "x-omnivoice-codes-sha256" not in response.headers
