"""An error message repeats a visitor's input only as a short excerpt (``errors.excerpt``): a 100,000-character
name does not come back as a 100 KB message.  Through the HTTP API (in process), the Gradio /speak handler's
voice choice, the Clone tab's panel and the command line."""

from __future__ import annotations

import subprocess
import sys

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from omnivoice_demo.api.routes import ApiContext, build_router
from omnivoice_demo.errors import InvalidInput, excerpt
from omnivoice_demo.studio import EngineService, ModelManager, Studio, VoiceLibrary
from omnivoice_demo.ui.tabs import saved_voices
from omnivoice_demo.ui.tabs import speak as speak_tab
from tests.test_vocabulary import a_voice

LONG = "N" * 100_000


def test_an_excerpt_is_short_and_says_how_long_the_input_was():
    assert excerpt("Anna") == "'Anna'" and excerpt(3) == "3"
    cut = excerpt(LONG)
    assert len(cut) < 100 and cut.startswith("'NNN") and "100,000 characters" in cut
    assert len(excerpt(list(range(100_000)))) < 100


@pytest.fixture(scope="module")
def client(tiny_fp32_folder, tmp_path_factory):
    root = tmp_path_factory.mktemp("echo")
    manager = ModelManager(cache_dir=root / "cache", offline=True)
    manager.load(str(tiny_fp32_folder), "fp32")
    library = VoiceLibrary(root / "voices")
    library.save(a_voice(), "Anna")
    app = FastAPI()
    app.include_router(build_router(ApiContext(models=manager, voices=library, service=EngineService())))
    return TestClient(app)


SPEECH = {"model": "omnivoice", "input": "Hello.", "voice": "auto", "steps": 1}


@pytest.mark.parametrize("field", ["voice", "model", "speed", "preset", "response_format", "language", "steps",
                                   "stream_format"])
def test_http_speech_errors_quote_an_excerpt(client, field):
    answer = client.post("/v1/audio/speech", json=dict(SPEECH, **{field: LONG, "stream": field == "stream_format"}))
    assert 400 <= answer.status_code < 500, answer.text[:300]
    assert len(answer.content) < 2000, (field, len(answer.content))


def test_http_voice_routes_quote_an_excerpt(client):
    missing = client.delete(f"/v1/audio/voices/{LONG[:20_000]}")  # the longest address the client sends
    assert missing.status_code == 404 and len(missing.content) < 2000 and "20,000 characters" in missing.text
    renamed = client.patch("/v1/audio/voices/Anna", json={"name": "/" * 100_000})
    assert renamed.status_code == 400 and len(renamed.content) < 2000


def test_the_gradio_voice_choice_quotes_an_excerpt(tmp_path):
    studio = Studio(models=ModelManager(), voices=VoiceLibrary(tmp_path / "voices"), out_dir=tmp_path / "out")
    with pytest.raises(InvalidInput) as caught:
        speak_tab.chosen_voice(studio, "female, " + LONG, None)
    assert len(str(caught.value)) < 1000 and "100,008 characters" in str(caught.value)
    missing = saved_voices.kept_on_error(saved_voices.manage_voice, studio, "delete", LONG)
    assert missing["message"].startswith("**Not done:**") and len(missing["message"]) < 1000


def test_the_command_line_quotes_an_excerpt(tmp_path):
    done = subprocess.run([sys.executable, "-m", "omnivoice_demo", "voices", "--folder", str(tmp_path), "delete", LONG],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 2 and len(done.stderr) < 1000 and "100,000 characters" in done.stderr
