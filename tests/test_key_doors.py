"""The key closes every door (issue 43 item 7): wrong keys on /v1 are slowed down per client by the throttle the
app's login uses, so a client guessing on either door waits on both; a right key clears the count.
(The default scope, ``all`` with ``--api-key``, is tested on a real app in test_http_api.py.)"""

from __future__ import annotations

import argparse

from omnivoice_demo.api.server import gradio_auth
from omnivoice_demo.studio.throttle import LoginThrottle
from tests.support.api_client import router_client

KEY = "door-key"


def test_wrong_keys_on_v1_count_in_the_logins_throttle(engine, tmp_path, monkeypatch):
    from omnivoice_demo.studio import VoiceLibrary

    now = [0.0]
    throttle = LoginThrottle(free=2, base=0.5, cap=4.0, clock=lambda: now[0])
    slept = []

    async def no_sleep(seconds):
        slept.append(seconds)
    monkeypatch.setattr("omnivoice_demo.api.auth.asyncio.sleep", no_sleep)
    api = router_client(engine, VoiceLibrary(tmp_path / "voices"), api_key=KEY, throttle=throttle)
    wrong = {"Authorization": "Bearer guess"}
    answers = [api.get("/v1/models", headers=wrong) for _ in range(4)]
    assert [a.status_code for a in answers] == [401] * 4
    assert [a.headers.get("retry-after") for a in answers] == [None, "1", "1", "2"]
    assert slept == [0.5, 1.0]                         # the third and fourth waited before their check
    client = "testclient"                              # starlette's TestClient peer
    assert throttle.failures(client) == 4              # the same count the login reads
    throttle.attempt(client)                           # a wrong password on the login adds to it ...
    api.get("/v1/models", headers=wrong)
    assert slept[-1] == 4.0                            # ... and /v1 waits for it (the cap)
    assert api.get("/v1/models", headers={"Authorization": f"Bearer {KEY}"}).status_code == 200
    assert throttle.failures(client) == 0              # a right key clears it


def test_the_default_scope_of_a_key_is_all_and_v1_is_an_opt_in():
    assert gradio_auth(argparse.Namespace(api_key=KEY, api_key_scope=None))("any", KEY) is True
    assert gradio_auth(argparse.Namespace(api_key=KEY, api_key_scope="v1")) is None
    assert gradio_auth(argparse.Namespace(api_key=None, api_key_scope=None)) is None
