"""What API clients get: voice objects in OpenAI's shape, presets on the Gradio API, and a default-streamed FLAC
that soundfile reads."""

from __future__ import annotations

import io
import time

import numpy as np
import openai
import pytest
import soundfile as sf

from omnivoice_demo.api import encoding
from omnivoice_demo.studio import VoiceLibrary
from tests.test_vocabulary import a_voice
from tests.test_app_api import app, client  # noqa: F401 - the running app and its gradio_client
from tests.test_voice_routes import client_of


def test_voice_objects_are_audio_voices_with_a_creation_time(tmp_path):
    library = VoiceLibrary(tmp_path / "voices")
    before = int(time.time())
    library.save(a_voice(), "Anna")
    client = client_of(library)
    listed = client.get("/v1/audio/voices").json()["data"]
    assert {item["object"] for item in listed} == {"audio.voice"}
    assert all(isinstance(item["created_at"], int) and item["created_at"] > 1_600_000_000 for item in listed)
    (anna,) = [item for item in listed if item["type"] == "saved"]
    assert anna["id"] == "Anna" and before - 1 <= anna["created_at"] <= int(time.time()) + 1
    renamed = client.patch("/v1/audio/voices/Anna", json={"name": "Anne"}).json()
    assert renamed["object"] == "audio.voice" and isinstance(renamed["created_at"], int)
    assert client.delete("/v1/audio/voices/Anne").json()["object"] == "audio.voice"


def test_a_streamed_flac_is_the_whole_file_that_soundfile_reads():
    audio = [np.sin(np.arange(2400 * (i + 1)) / 7).astype(np.float32) * 0.3 for i in range(3)]
    encoder = encoding.StreamEncoder("flac")
    sent = b"".join(encoder.add(chunk) for chunk in audio) + encoder.finish()
    read, rate = sf.read(io.BytesIO(sent), dtype="float32")  # "array is too big" with a length-unknown header
    assert rate == 24000 and len(read) == sum(len(chunk) for chunk in audio)
    np.testing.assert_allclose(read, np.concatenate(audio), atol=1 / 16384)
    wav = encoding.StreamEncoder("wav")
    assert wav.add(audio[0])  # the other formats still stream: bytes after the first chunk


# --- against the running app (the HTTP API and the Gradio API on one server) ------------------------------

@pytest.mark.slow
def test_default_streamed_flac_from_the_openai_sdk_is_read_by_soundfile(app, client):
    sdk = openai.OpenAI(base_url=app.url + "v1", api_key="none", max_retries=0, timeout=120)
    streamed = sdk.audio.speech.create(model="omnivoice", voice="alloy", input="Two sentences. Streamed by default.",
                                       response_format="flac", extra_body={"steps": 2, "seed": 4})
    audio, rate = sf.read(io.BytesIO(streamed.read()))
    whole = sdk.audio.speech.create(model="omnivoice", voice="alloy", input="Two sentences. Streamed by default.",
                                    response_format="flac", extra_body={"steps": 2, "seed": 4, "stream": False})
    assert rate == 24000 and len(audio) > 0
    assert abs(len(audio) - len(sf.read(io.BytesIO(whole.read()))[0])) < rate  # the same speech, chunked


@pytest.mark.slow
def test_the_gradio_api_takes_a_preset_by_name_or_alias(client, tmp_path):
    from gradio_client import handle_file
    from gradio_client.exceptions import AppError

    from tests.support.signals import speech_like

    _, _, fast = client.predict(text="A preset.", preset="fast", seed=1, api_name="/speak")
    assert fast["settings"]["num_step"] == 8 and fast["settings"]["guidance_every"] == 2
    _, _, hd = client.predict(text="A preset.", preset="HD", num_step=32, seed=1, api_name="/speak")
    assert hd["settings"]["num_step"] == 32 and hd["settings"]["guidance_every"] == 1
    _, _, own = client.predict(text="A preset.", preset="fast", num_step=4, seed=1, api_name="/speak")
    assert own["settings"]["num_step"] == 4 and own["settings"]["guidance_every"] == 2  # a given setting wins
    with pytest.raises(AppError, match="Unknown preset 'turbo'.*reference, balanced, fast"):
        client.predict(text="A preset.", preset="turbo", api_name="/speak")
    reference = tmp_path / "reference.wav"
    sf.write(reference, speech_like(2.0, 16000, seed=2)[0], 16000)
    _, _, cloned = client.predict(reference=handle_file(str(reference)), transcript="One two three.",
                                  text="A cloned preset.", consent=True, preset="balanced", api_name="/clone")
    assert cloned["settings"]["num_step"] == 16
