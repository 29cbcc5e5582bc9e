"""Style variants of a saved voice over the HTTP API, in process on the tiny model, driven by the ``openai``
client where OpenAI has the call: a variant is added from a clip (with consent) and listed, ``instructions``
naming its tag speaks with its clip (the codes of ``voice="Anna (cheerful)"``, not of Anna's main clip), a
word that is no tag is reported as ignored, the variant survives export and import, and mistakes are 4xx."""

from __future__ import annotations

import io

import openai
import pytest
import soundfile as sf
from fastapi.testclient import TestClient

from omnivoice_demo.studio import VoiceLibrary
from tests.support.api_client import router_client
from tests.support.signals import speech_like

TEXT = "A short sentence in a saved voice."
WHOLE = {"stream": False, "steps": 4, "seed": 7}


def wav(seed: int, seconds: float = 2.0) -> bytes:
    data = io.BytesIO()
    sf.write(data, speech_like(seconds, 24000, seed=seed)[0], 24000, format="WAV")
    return data.getvalue()


def upload(client: TestClient, path: str, seed: int, **fields):
    form = {"transcript": "Words of the clip.", "consent": "true", **fields}
    return client.post(path, files={"file": ("clip.wav", wav(seed), "audio/wav")}, data=form)


@pytest.fixture
def library(tmp_path):
    return VoiceLibrary(tmp_path / "voices", max_variants=2)


@pytest.fixture
def client(engine, library):
    client = router_client(engine, library)
    assert upload(client, "/v1/audio/voices", 1, name="Anna").status_code == 201
    added = upload(client, "/v1/audio/voices/anna/variants", 2, tag="cheerful", transcript="Such a happy day.")
    assert added.status_code == 201, added.text
    assert [(v["tag"], v["id"], v["transcript"]) for v in added.json()["variants"]] == [
        ("cheerful", "Anna (cheerful)", "Such a happy day.")]
    return client


def speech(client: TestClient, **request):
    """(codes digest, style header, ignored header) of a whole-file speech request made by OpenAI's client."""
    openai_client = openai.OpenAI(base_url="http://testserver/v1", api_key="unused", http_client=client,
                                  max_retries=0)
    raw = openai_client.audio.speech.with_raw_response.create(model="omnivoice", input=TEXT, response_format="wav",
                                                              extra_body=WHOLE, **request)
    assert raw.http_response.status_code == 200
    headers = raw.headers
    return headers["x-omnivoice-codes-sha256"], headers["x-omnivoice-style"], headers["x-omnivoice-ignored"]


def test_instructions_naming_a_tag_speak_with_that_clip(client):
    listed = client.get("/v1/audio/voices").json()["data"]
    assert next(v for v in listed if v["id"] == "Anna")["variants"] == [{"tag": "cheerful", "id": "Anna (cheerful)"}]
    main, style, ignored = speech(client, voice="Anna")
    variant, _, _ = speech(client, voice="Anna (cheerful)")
    chosen, style, ignored = speech(client, voice="Anna", instructions="cheerful")
    assert chosen == variant != main and style == "cheerful" and ignored == ""
    spoken, style, ignored = speech(client, voice="Anna", instructions="Speak in a Cheerful tone.")
    assert spoken == variant and style == "cheerful" and ignored == ""
    fallback, style, ignored = speech(client, voice="Anna", instructions="angry")
    assert fallback == main and style == "" and ignored == "angry"


def test_a_variant_survives_export_and_import_and_is_chosen_there(client, library, engine, tmp_path):
    before, _, _ = speech(client, voice="Anna", instructions="cheerful")
    files = library.export("Anna", tmp_path / "exported")
    other = VoiceLibrary(tmp_path / "other")
    other.import_file(files[0], "Anna")
    again = router_client(engine, other)
    assert again.get("/v1/audio/voices/Anna").json()["variants"][0]["tag"] == "cheerful"
    assert speech(again, voice="Anna", instructions="cheerful")[:2] == (before, "cheerful")


def test_a_variant_is_deleted_and_then_gone(client, library):
    gone = client.delete("/v1/audio/voices/ANNA/variants/Cheerful")
    assert gone.status_code == 200 and gone.json()["variants"] == [] and library.tags("Anna") == []
    again = client.delete("/v1/audio/voices/Anna/variants/cheerful")
    assert again.status_code == 404 and again.json()["error"]["code"] == "variant_not_found"
    asked = client.post("/v1/audio/speech", json=dict(WHOLE, input=TEXT, voice="Anna (cheerful)"))
    assert asked.status_code == 400 and "has no style 'cheerful'" in asked.json()["error"]["message"]


@pytest.mark.parametrize("path, fields, status, param", [
    ("/v1/audio/voices/Nobody/variants", {"tag": "sad"}, 404, "voice_id"),
    ("/v1/audio/voices/Anna/variants", {"tag": "two words"}, 400, "tag"),
    ("/v1/audio/voices/Anna/variants", {"tag": "x/y"}, 400, "tag"),
    ("/v1/audio/voices/Anna/variants", {"tag": ""}, 400, "tag"),
    ("/v1/audio/voices/Anna/variants", {"tag": "CHEERFUL"}, 400, "tag"),    # taken, case-folded
    ("/v1/audio/voices/Anna/variants", {"tag": "sad", "consent": "false"}, 400, "consent"),
])
def test_mistakes_are_4xx_naming_the_field_and_nothing_changes(client, library, path, fields, status, param):
    answer = upload(client, path, 3, **fields)
    assert answer.status_code == status, answer.text
    error = answer.json()["error"]
    assert error["param"] == param and "Traceback" not in error["message"]
    assert library.tags("Anna") == ["cheerful"]


def test_more_variants_than_the_limit_are_refused(client, library):
    assert upload(client, "/v1/audio/voices/Anna/variants", 4, tag="sad").status_code == 201
    third = upload(client, "/v1/audio/voices/Anna/variants", 5, tag="calm")
    assert third.status_code == 413 and third.json()["error"]["param"] == "max_voice_variants"
    assert library.tags("Anna") == ["cheerful", "sad"]
