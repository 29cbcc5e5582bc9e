"""Whom the server believes about a client's address (issue 49, item 9): ``X-Forwarded-For`` only from the proxies
of ``--forwarded-allow-ips`` (``settings.network``), none by default.

Uvicorn believed the header from 127.0.0.1 by default, so six wrong keys, each with a new ``X-Forwarded-For``, were
six first attempts: none waited.  Here the app's server class (``ui.server_start.PatientServer``, as the launch
uses it) runs the HTTP API's routes with a key on a real uvicorn, without a model."""

from __future__ import annotations

import argparse

import httpx
import pytest
from fastapi import Request

from omnivoice_demo.settings.network import ForwardedTrust, add_forwarded_argument, forwarded_from_arguments


def test_the_setting_is_none_by_default_and_refuses_what_is_not_an_address(monkeypatch):
    monkeypatch.delenv("OMNIVOICE_FORWARDED_ALLOW_IPS", raising=False)
    parser = argparse.ArgumentParser()
    add_forwarded_argument(parser)
    trust = forwarded_from_arguments(parser.parse_args([]))
    assert trust == ForwardedTrust() and trust.uvicorn_options() == {"proxy_headers": False,
                                                                      "forwarded_allow_ips": []}
    named = forwarded_from_arguments(parser.parse_args(["--forwarded-allow-ips", "10.0.0.1, 10.1.0.0/16"]))
    assert named.uvicorn_options() == {"proxy_headers": True, "forwarded_allow_ips": ["10.0.0.1", "10.1.0.0/16"]}
    with pytest.raises(SystemExit):
        parser.parse_args(["--forwarded-allow-ips", "example.com"])
    with pytest.raises(ValueError, match="'\\*' is not an IP address"):
        ForwardedTrust.parse("*")


def serve(trust: ForwardedTrust, tmp_path):
    """The HTTP API with a key on the app's uvicorn server class; returns (its base URL, the server)."""
    import uvicorn
    from fastapi import FastAPI

    from omnivoice_demo.api.context import ApiContext
    from omnivoice_demo.api.routes import build_router
    from omnivoice_demo.studio import EngineService, ModelManager, VoiceLibrary
    from omnivoice_demo.ui.server_start import patient_server_start
    from tests.support.app_server import free_port

    from gradio import http_server

    app = FastAPI()
    app.include_router(build_router(ApiContext(models=ModelManager(), voices=VoiceLibrary(tmp_path / "voices"),
                                               service=EngineService(), api_key="right")))

    @app.get("/whoami")
    async def whoami(request: Request):
        return {"client": request.client.host}

    patient_server_start(trust)
    port = free_port()
    server = http_server.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="critical"))
    server.run_in_thread()
    return f"http://127.0.0.1:{port}/", server


@pytest.mark.parametrize("trust, seen", [(ForwardedTrust(), "127.0.0.1"),
                                         (ForwardedTrust(("127.0.0.1",)), "203.0.113.9")])
def test_the_client_is_the_peer_unless_the_peer_is_a_named_proxy(tmp_path, trust, seen):
    url, server = serve(trust, tmp_path)
    try:
        answer = httpx.get(url + "whoami", headers={"X-Forwarded-For": "203.0.113.9"}, timeout=30)
        assert answer.json()["client"] == seen
    finally:
        server.close()


def test_wrong_keys_with_a_new_forwarded_address_each_still_wait_longer(tmp_path):
    """The probe's case: six wrong keys, each with a new X-Forwarded-For.  The fourth on waits (the throttle's
    three free attempts), and says so in Retry-After."""
    url, server = serve(ForwardedTrust(), tmp_path)
    try:
        retries = []
        for attempt in range(6):
            answer = httpx.get(url + "v1/models", timeout=60, headers={
                "Authorization": "Bearer wrong", "X-Forwarded-For": f"198.51.100.{attempt + 1}"})
            assert answer.status_code == 401
            retries.append(int(answer.headers.get("retry-after", 0)))
        assert retries[:2] == [0, 0] and all(r >= 1 for r in retries[2:]) and retries[-1] > retries[2], retries
    finally:
        server.close()
