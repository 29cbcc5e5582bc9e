"""The HTTP API's request models (api/schemas.py): /openapi.json describes every body, the models' constraints
agree with the checks behind them, and a body a model refuses is answered by that check (OpenAI's error shape,
the field named), on any route that takes the model, not only the one it was written for."""

from __future__ import annotations

import json

import pytest
from fastapi import APIRouter, FastAPI
from fastapi.testclient import TestClient

from omnivoice_demo.api import schemas
from omnivoice_demo.api.context import ApiContext, Context
from omnivoice_demo.api.openai_route import OpenAIRoute
from omnivoice_demo.api.routes import build_router
from omnivoice_demo.api.server import mount
from omnivoice_demo.settings.generation import GenerationConfig
from omnivoice_demo.errors import InvalidInput
from omnivoice_demo.studio import EngineService, ModelManager, VoiceLibrary
from tests.test_vocabulary import a_voice


def context_of(tmp_path, **fields) -> ApiContext:
    return ApiContext(models=ModelManager(), voices=VoiceLibrary(tmp_path / "voices"), service=EngineService(),
                      **fields)


def served(context: ApiContext) -> TestClient:
    """``omnivoice serve``'s app (its title, no docs pages) over ``context``."""
    app = FastAPI(title="OmniVoice ONNX Studio API", docs_url=None, redoc_url=None)
    mount(app, context)
    return TestClient(app, raise_server_exceptions=False)


def resolved(spec: dict, schema: dict) -> dict:
    if "$ref" in schema:
        return spec["components"]["schemas"][schema["$ref"].rsplit("/", 1)[-1]]
    return schema


def test_openapi_describes_a_request_schema_for_every_post_and_patch(tmp_path):
    spec = served(context_of(tmp_path)).get("/openapi.json").json()
    bodies = {}
    for path, operations in spec["paths"].items():
        for method, operation in operations.items():
            if method in ("post", "patch", "put"):
                ((media, content),) = operation["requestBody"]["content"].items()
                bodies[method.upper(), path] = (media, resolved(spec, content["schema"]))
    assert set(bodies) == {("POST", "/v1/audio/speech"), ("POST", "/dev/captioned_speech"), ("POST", "/v1/audio/voices"),
                           ("PATCH", "/v1/audio/voices/{voice_id}"), ("POST", "/v1/audio/voices/{voice_id}/variants")}
    media, speech = bodies["POST", "/v1/audio/speech"]
    assert media == "application/json" and speech["required"] == ["input"]
    assert {"input", "voice", "response_format", "speed", "stream_format", "instructions", "guidance_scale",
            "num_step", "seed", "pronunciations", "script", "speakers"} <= set(speech["properties"])
    assert bodies["PATCH", "/v1/audio/voices/{voice_id}"][1]["required"] == ["name"]
    for key, label in ((("POST", "/v1/audio/voices"), "name"), (("POST", "/v1/audio/voices/{voice_id}/variants"), "tag")):
        media, form = bodies[key]
        assert media == "multipart/form-data" and form["required"] == ["file", label, "consent"]
        assert form["properties"]["file"]["format"] == "binary"
    # the bodiless routes declare none
    assert "requestBody" not in spec["paths"]["/v1/audio/voices/{voice_id}"]["delete"]


def _bounds(schema: dict) -> tuple:
    (number, _null) = schema["anyOf"]
    return number.get("minimum"), number.get("maximum"), number["type"]


def test_the_schemas_ranges_are_the_checks_ranges():
    speech = schemas.SpeechBody.model_json_schema()["properties"]
    assert _bounds(speech["speed"])[:2] == schemas.OPENAI_SPEED
    assert speech["stream_format"]["enum"] == list(schemas.STREAM_FORMATS)
    for name in GenerationConfig.names():
        if name == "speed":   # OpenAI's speed here, clamped to the model's
            continue
        setting, kind = GenerationConfig.setting(name), GenerationConfig.kind(name)
        low, high, json_type = _bounds(speech[name])
        assert json_type == {bool: "boolean", int: "integer"}.get(kind, "number"), name
        assert (low, high) == ((None, None) if kind is bool else (setting.low, setting.high)), name
    assert _bounds(speech["steps"])[:2] == (GenerationConfig.setting("num_step").low,
                                            GenerationConfig.setting("num_step").high)


@pytest.mark.parametrize("speed, allowed", [(0.25, True), (4, True), (0.2499, False), (4.01, False)])
def test_the_speed_constraint_and_its_check_agree_at_the_bounds(speed, allowed):
    body = {"input": "Hello.", "speed": speed}
    if allowed:
        assert schemas.SpeechBody.checked(body).request().settings["speed"] in (0.5, 2.0)   # clamped to the model's
    else:
        with pytest.raises(InvalidInput, match=r"speed must be a number from 0\.25 to 4 \(OpenAI's range\)") as caught:
            schemas.SpeechBody.checked(body)
        assert caught.value.param == "speed"


@pytest.mark.parametrize("body, param, words", [
    ({}, "input", "input is required"),
    ({"input": 3}, "input", "input must be a string, got int"),
    ({"input": "Hi.", "stream": "yes"}, "stream", "stream must be true or false"),
    ({"input": "Hi.", "stream": False, "stream_format": "sse"}, "stream", "stream is false but stream_format"),
    ({"input": "Hi.", "strict": None}, "strict", "strict must be true or false, got None"),
    ({"input": "Hi.", "speakers": {"A": "alloy"}}, "speakers", "send \"script\": true"),
    ({"input": "Hi.", "preset": "turbo"}, "preset", "Unknown preset 'turbo'"),
    ({"input": "Hi.", "loudness": -16}, "loudness", "loudness normalises the whole file"),
])
def test_a_refused_speech_body_raises_the_checks_own_error(body, param, words):
    with pytest.raises(InvalidInput) as caught:
        schemas.SpeechBody.checked(body)
    assert caught.value.param == param and words in str(caught.value)


def test_the_speech_model_serves_another_route_with_the_same_errors(tmp_path):
    """A route of its own taking ``SpeechBody`` (as the captioned-speech route will) refuses a body exactly as
    /v1/audio/speech does: status, message, param and code."""
    context = context_of(tmp_path, api_key="k")
    extra = APIRouter(route_class=OpenAIRoute.serving(context))

    @extra.post("/v1/audio/speech/other")
    async def other(body: schemas.SpeechBody, context: Context):
        return {"text": body.request().text}

    app = FastAPI()
    app.include_router(build_router(context))
    app.include_router(extra)
    client = TestClient(app, raise_server_exceptions=False)
    client.headers["Authorization"] = "Bearer k"
    bodies = [b"", b"{", b"null", b"[1]", json.dumps({"input": 3}), json.dumps({"input": "Hi.", "speed": 9}),
              json.dumps({"input": "Hi.", "response_format": "aac"}), json.dumps({"voice": "alloy"}),
              json.dumps({"input": "Hi.", "loudness": -16}),   # refused by the model as a whole, not by a field
              "[" * 100_000 + "]" * 100_000]
    for raw in bodies:
        answers = [client.post(path, content=raw, headers={"Content-Type": "application/json"})
                   for path in ("/v1/audio/speech", "/v1/audio/speech/other")]
        assert answers[0].status_code == answers[1].status_code in (400, 413), (raw[:20], answers[0].text)
        assert answers[0].json() == answers[1].json()
    loud = client.post("/v1/audio/speech/other", json={"input": "Hi.", "loudness": -16}).json()["error"]
    assert loud["param"] == "loudness" and "send \"stream\": false" in loud["message"]
    assert client.post("/v1/audio/speech/other", json={"input": "Hello."}).json() == {"text": "Hello."}
    assert client.post("/v1/audio/speech/other", json={"input": "Hello."}, headers={"Authorization": ""}
                       ).status_code == 401


def test_a_body_that_is_json_but_not_an_object_names_what_to_send(tmp_path):
    context = context_of(tmp_path)
    context.voices.save(a_voice(), "Anna")
    client = served(context)
    for raw in (b"null", b"[1, 2]", b"\"Anne\""):
        error = client.post("/v1/audio/speech", content=raw, headers={"Content-Type": "application/json"}).json()
        assert error["error"]["message"] == "The request body must be a JSON object.", raw
        error = client.patch("/v1/audio/voices/Anna", content=raw, headers={"Content-Type": "application/json"})
        assert error.status_code == 400 and error.json()["error"]["param"] == "name"
        assert "Send the new name as" in error.json()["error"]["message"]


@pytest.mark.parametrize("content_type", [None, "application/x-www-form-urlencoded", "text/plain"])
def test_json_sent_under_another_content_type_is_read_as_json(tmp_path, content_type):
    """curl -d sends JSON as application/x-www-form-urlencoded; the server reads it as JSON, as it always did."""
    context = context_of(tmp_path)
    context.voices.save(a_voice(), "Anna")
    client = served(context)
    headers = {"Content-Type": content_type} if content_type else {}
    answer = client.post("/v1/audio/speech", content=json.dumps({"input": "Hi.", "speed": 9}), headers=headers)
    assert answer.status_code == 400 and answer.json()["error"]["param"] == "speed", answer.text
    renamed = client.patch("/v1/audio/voices/Anna", content=json.dumps({"name": "Anne"}), headers=headers)
    assert renamed.status_code == 200 and renamed.json()["id"] == "Anne", renamed.text


def test_an_upload_form_is_checked_in_the_order_a_client_fills_it():
    clip = type("Upload", (), {"read": lambda self, n=-1: b"", "filename": "a.wav"})()
    with pytest.raises(InvalidInput, match="file field 'file'"):
        schemas.VoiceUpload.checked({"name": "", "consent": "no"})
    with pytest.raises(InvalidInput, match="Give the style a tag") as caught:
        schemas.VariantUpload.checked({"file": clip, "consent": "no"})
    assert caught.value.param == "tag"
    with pytest.raises(InvalidInput, match="consent=true"):
        schemas.VoiceUpload.checked({"audio_sample": clip, "name": "Me", "consent": "no"})
    upload = schemas.VoiceUpload.checked({"audio_sample": clip, "name": " Me ", "consent": "Yes", "transcript": " "})
    assert upload.clip is clip and upload.value == "Me" and upload.transcript is None
