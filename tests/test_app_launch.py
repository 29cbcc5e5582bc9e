"""The app's launch does not hang on Gradio's "is localhost accessible" check.

Gradio probes its own page after the start (``gradio.networking.url_ok``: HEAD requests with a 3 s
timeout) and aborts the launch when that fails, which a busy machine made happen.  Here the check is made
to fail every time (a ``sitecustomize`` on PYTHONPATH replaces it, and says so in the log): the app still
starts, serves its page, the HTTP API and the Gradio API.
"""

from __future__ import annotations

import os

import httpx
from gradio_client import Client

from benchmarks.hardening_probe import FAILING_LOCALHOST_CHECK
from tests.support.app_server import ROOT, AppProcess
from tests.test_http_api import wait_model_loaded


def test_the_app_starts_and_serves_when_gradios_localhost_check_fails(tiny_fp32_folder, tmp_path):
    patch = tmp_path / "patch"
    patch.mkdir()
    (patch / "sitecustomize.py").write_text(FAILING_LOCALHOST_CHECK)
    app = AppProcess(["--model", str(tiny_fp32_folder), "--precision", "fp32"], tmp_path,
                     env={"PYTHONPATH": f"{patch}{os.pathsep}{ROOT}"})
    try:
        wait_model_loaded(app, timeout=300)   # generous: a loaded machine is slow
        assert "url_ok fails" in app.log_text()   # the check was replaced in that process
        speech = httpx.post(app.url + "v1/audio/speech", timeout=120, json={
            "model": "omnivoice", "input": "Hello.", "voice": "auto", "steps": 1, "response_format": "wav"})
        assert speech.status_code == 200 and speech.content[:4] == b"RIFF"
        assert Client(app.url, verbose=False).predict(api_name="/models")["state"] == "ready"
    finally:
        app.stop()
