"""Saved voices through the HTTP API's routes (in process, no model needed): list, rename (PATCH) and delete
(DELETE) with OpenAI-style errors, and who may change them on a shared server."""

from __future__ import annotations

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from omnivoice_demo.api.routes import ApiContext, build_router
from omnivoice_demo.studio import EngineService, ModelManager, VoiceLibrary
from tests.test_vocabulary import a_voice


def client_of(library: VoiceLibrary, shared: bool = False, api_key=None) -> TestClient:
    app = FastAPI()
    app.include_router(build_router(ApiContext(models=ModelManager(), voices=library, service=EngineService(),
                                               shared=shared, api_key=api_key)))
    return TestClient(app)


def saved(client, headers=None) -> list[str]:
    listed = client.get("/v1/audio/voices", headers=headers).json()["data"]
    return [item["id"] for item in listed if item["type"] == "saved"]


@pytest.fixture
def library(tmp_path):
    library = VoiceLibrary(tmp_path / "voices")
    library.save(a_voice(), "Anna")
    library.save(a_voice(), "Bob")
    return library


def test_a_saved_voice_is_renamed_and_deleted(library):
    client = client_of(library)
    renamed = client.patch("/v1/audio/voices/Anna", json={"name": "Anne"})
    assert renamed.status_code == 200 and renamed.json()["id"] == "Anne"
    assert saved(client) == ["Anne", "Bob"]
    gone = client.delete("/v1/audio/voices/Bob")
    assert gone.status_code == 200 and gone.json() == {"id": "Bob", "object": "audio.voice", "deleted": True}
    assert saved(client) == ["Anne"] and library.names() == ["Anne"]


@pytest.mark.parametrize("method, path, body, status, param", [
    ("delete", "/v1/audio/voices/Nobody", None, 404, "voice_id"),
    ("delete", "/v1/audio/voices/alloy", None, 404, "voice_id"),      # a named design is not a saved voice
    ("patch", "/v1/audio/voices/Anna", {"name": "Bob"}, 400, "name"),  # taken
    ("patch", "/v1/audio/voices/Anna", {"name": ""}, 400, "name"),
    ("patch", "/v1/audio/voices/Anna", ["Bob"], 400, "name"),
])
def test_mistakes_are_openai_style_4xx(library, method, path, body, status, param):
    client = client_of(library)
    answer = getattr(client, method)(path, **({"json": body} if body is not None else {}))
    assert answer.status_code == status, answer.text
    error = answer.json()["error"]
    assert error["param"] == param and error["message"] and "Traceback" not in error["message"]
    assert library.names() == ["Anna", "Bob"]


def test_a_shared_server_changes_voices_only_with_its_key(library):
    open_server = client_of(library, shared=True)
    assert open_server.delete("/v1/audio/voices/Anna").status_code == 403
    keyed = client_of(library, shared=True, api_key="k")
    assert keyed.delete("/v1/audio/voices/Anna").status_code == 401
    assert library.names() == ["Anna", "Bob"]
    assert keyed.delete("/v1/audio/voices/Anna", headers={"Authorization": "Bearer k"}).status_code == 200
    assert library.names() == ["Bob"]


def test_a_failed_load_is_explained_by_health_the_log_and_no_model_is_listed(tmp_path, caplog):
    """Issue 19: ``--model no-such-folder`` printed nothing about the model, /health said "error" without a
    reason and /v1/models still listed "omnivoice"."""
    import logging

    manager = ModelManager(cache_dir=tmp_path / "cache", offline=True)
    with caplog.at_level(logging.WARNING, logger="omnivoice_demo.studio.models"):
        manager.start_load(str(tmp_path / "no-such-folder"), by_operator=True)
        manager.wait(60)
    assert manager.status.state == "error"
    assert any("the model was not loaded" in r.getMessage() and "no-such-folder" in r.getMessage()
               for r in caplog.records)
    app = FastAPI()
    app.include_router(build_router(ApiContext(models=manager, voices=VoiceLibrary(tmp_path / "v"),
                                               service=EngineService())))
    client = TestClient(app)
    health = client.get("/health").json()
    assert health["status"] == "error" and "no-such-folder" in health["message"]
    assert client.get("/v1/models").json()["data"] == []


@pytest.mark.parametrize("code, status, words", [("EROFS", 403, "is read-only (EROFS)"),
                                                 ("EACCES", 403, "is not writable (EACCES)"),
                                                 ("ENOSPC", 507, "is full (ENOSPC)")])
def test_deleting_from_a_folder_that_cannot_be_written_says_so_and_keeps_the_voice(library, monkeypatch, code,
                                                                                   status, words):
    """Issue 49: DELETE on a read-only voices folder was a 500 and the voice stayed.  At the place it starts
    (the folder store's write step) and through the route: a 403 (read-only) or 507 (full) that says what to do,
    no server path, and the voice still listed.  (The tests run as root, whom chmod does not stop: the folder's
    refusal is the error the system gives.)"""
    import errno
    import re
    import pathlib

    from omnivoice_demo.errors import StorageNotWritable

    def refused(self, *args, **kwargs):
        raise OSError(getattr(errno, code), "refused", str(self))

    monkeypatch.setattr(pathlib.Path, "unlink", refused)
    with pytest.raises(StorageNotWritable, match=re.escape(words)) as caught:
        library.delete("Bob")
    assert caught.value.full == (code == "ENOSPC")
    answer = client_of(library).delete("/v1/audio/voices/Bob")
    assert answer.status_code == status, answer.text
    message = answer.json()["error"]["message"]
    assert words in message and "operator must free some space or make the folder writable" in message
    assert str(library.root) not in message and "Bob" in library.names()
