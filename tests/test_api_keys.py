"""``--api-key-scope all`` on a real ``app.py`` process: what asks for the key, the login's wait, /v1's CORS.

* Every route asks for the key (a login's cookie) but the login page and what it loads,
  ``/health`` and ``/v1`` (which asks for the Bearer key itself): the routes Gradio's own auth left open
  (the hardening probe's table, family 17) answer 401 without it and answer with it.
* Wrong passwords in a row are slowed down: each failed login says in Retry-After how long the next one
  waits, and that grows with the failures (counted, not timed); the right key still logs in, with
  ``gradio_client`` too, and a success clears the count.
* ``/v1`` answers any origin without credentials, whatever Host it was reached by (Gradio's CORS reflects
  the origin with ``Access-Control-Allow-Credentials: true``).
"""

from __future__ import annotations

import re

import httpx
import pytest
from gradio_client import Client

from benchmarks.hardening_probe import KEYED_ROUTES
from omnivoice_demo.ui.key_gate import LoginThrottle
from tests.support.app_server import AppProcess
from tests.test_http_api import wait_model_loaded

KEY = "scope-all-key"
EVIL = "https://evil.example"


@pytest.fixture(scope="module")
def server(tiny_fp32_folder, tmp_path_factory):
    app = AppProcess(["--model", str(tiny_fp32_folder), "--precision", "fp32", "--api-key", KEY,
                      "--api-key-scope", "all"], tmp_path_factory.mktemp("api-keys"))
    try:
        wait_model_loaded(app, timeout=300)   # generous: a loaded machine is slow
        yield app
    finally:
        app.stop()


def login(server, password: str, client: httpx.Client | None = None) -> httpx.Response:
    return (client or httpx).post(server.url + "login", data={"username": "anyone", "password": password},
                                  timeout=60)


@pytest.mark.parametrize("method, path, body", KEYED_ROUTES, ids=[f"{m} {p}" for m, p, _ in KEYED_ROUTES])
def test_each_route_asks_for_the_key(server, method, path, body):
    without = httpx.request(method, server.url + path, json=body, timeout=60)
    assert without.status_code == 401, (without.status_code, without.text[:300])
    assert "API key" in without.json()["detail"]
    bearer = httpx.request(method, server.url + path, json=body, timeout=60, headers={"Authorization": f"Bearer {KEY}"})
    assert bearer.status_code == 401   # Gradio's routes take the login, not the HTTP API's header
    with httpx.Client(timeout=60) as browser:
        assert login(server, KEY, browser).status_code == 200
        with browser.stream(method, server.url + path, json=body) as logged_in:   # the heartbeat is endless
            assert logged_in.status_code != 401


def test_a_login_cookie_opens_the_routes_and_the_login_page_needs_no_key(server):
    page = httpx.get(server.url, timeout=60)
    assert page.status_code == 200 and '"auth_required":true' in page.text.replace(" ", "")
    assets = re.findall(r'(?:src|href)="\./(assets/[^"]+)"', page.text)
    assert assets and all(httpx.get(server.url + a, timeout=60).status_code == 200 for a in assets[:5])
    assert httpx.get(server.url + "health", timeout=60).status_code == 200
    v1 = httpx.get(server.url + "v1/models", timeout=60)     # /v1's own answer: the Bearer key
    assert v1.status_code == 401 and v1.json()["error"]["code"] == "invalid_api_key"
    with httpx.Client(timeout=60) as browser:
        assert login(server, KEY, browser).status_code == 200
        assert browser.get(server.url + "gradio_api/app_id").status_code == 200
        assert browser.get(server.url + "config").status_code == 200


def test_wrong_passwords_are_slowed_down_and_the_key_still_logs_in(server):
    waits = []
    for attempt in range(5):
        failed = login(server, f"guess-{attempt}")
        assert failed.status_code == 400
        waits.append(int(failed.headers["retry-after"]))
    assert waits == sorted(waits) and waits[0] == 0 and waits[-1] >= 2, waits
    assert login(server, KEY).status_code == 200           # the key, after its wait
    assert login(server, "guess-again").headers["retry-after"] == "0"   # the success cleared the count
    models = Client(server.url, verbose=False, auth=("anyone", KEY)).predict(api_name="/models")
    assert models["state"] == "ready"


@pytest.mark.parametrize("origin, host", [(EVIL, "studio.example"), ("http://localhost:3000", None)])
def test_v1_cors_answers_any_origin_without_credentials(server, origin, host):
    headers = {"Origin": origin, **({"Host": host} if host else {})}
    preflight = httpx.options(server.url + "v1/audio/speech", timeout=60, headers={
        **headers, "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "authorization"})
    assert preflight.status_code == 200
    assert "authorization" in preflight.headers["access-control-allow-headers"].lower()
    simple = httpx.get(server.url + "v1/models", timeout=60, headers={**headers, "Authorization": f"Bearer {KEY}"})
    assert simple.status_code == 200
    for answer in (preflight, simple):
        assert answer.headers["access-control-allow-origin"] == "*"
        assert "access-control-allow-credentials" not in answer.headers


def test_the_login_throttle_is_per_client_capped_bounded_and_forgets():
    now = [0.0]
    throttle = LoginThrottle(free=2, base=0.5, cap=4.0, clients=3, forget_after=60.0, clock=lambda: now[0])
    assert [throttle.attempt("a") for _ in range(7)] == [0, 0, 0.5, 1, 2, 4, 4]
    assert throttle.attempt("b") == 0                      # another client has its own count
    throttle.succeeded("a")
    assert throttle.failures("a") == 0
    for client in ("c", "d", "e", "f"):
        throttle.attempt(client)
    assert len(throttle._failures) == 3                    # the longest quiet is forgotten first
    throttle.attempt("f")
    now[0] += 61
    assert throttle.failures("f") == 0                     # a quiet minute clears the count
