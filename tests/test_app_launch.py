"""The app's launch survives a busy machine: Gradio's "is localhost accessible" check and its 5 s start window.

Gradio probes its own page after the start (``gradio.networking.url_ok``: HEAD requests with a 3 s
timeout) and aborts the launch when that fails, which a busy machine made happen.  Here the check is made
to fail every time (a ``sitecustomize`` on PYTHONPATH replaces it, and says so in the log): the app still
starts, serves its page, the HTTP API and the Gradio API.  Likewise when its server takes 8 s to start
(uvicorn's start delayed the same way; Gradio gave it 5 s, then reported "Cannot find empty port").
"""

from __future__ import annotations

import os

import httpx
from gradio_client import Client

import pytest

from benchmarks.hardening_probe import FAILING_LOCALHOST_CHECK, SLOW_SERVER_START
from tests.support.app_server import ROOT, AppProcess
from tests.test_http_api import wait_model_loaded


@pytest.mark.parametrize("fault, logged", [(FAILING_LOCALHOST_CHECK, "url_ok fails"),
                                           (SLOW_SERVER_START, "uvicorn starts 8 s late")],
                         ids=["localhost-check-fails", "server-starts-late"])
def test_the_app_starts_and_serves_on_a_busy_machine(tiny_fp32_folder, tmp_path, fault, logged):
    patch = tmp_path / "patch"
    patch.mkdir()
    (patch / "sitecustomize.py").write_text(fault)
    app = AppProcess(["--model", str(tiny_fp32_folder), "--precision", "fp32"], tmp_path,
                     env={"PYTHONPATH": f"{patch}{os.pathsep}{ROOT}"})
    try:
        wait_model_loaded(app, timeout=300)   # generous: a loaded machine is slow
        assert logged in app.log_text()   # the fault was planted in that process
        speech = httpx.post(app.url + "v1/audio/speech", timeout=120, json={
            "model": "omnivoice", "input": "Hello.", "voice": "auto", "steps": 1, "response_format": "wav"})
        assert speech.status_code == 200 and speech.content[:4] == b"RIFF"
        assert Client(app.url, verbose=False).predict(api_name="/models")["state"] == "ready"
    finally:
        app.stop()


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")  # the bind error, in its thread
def test_a_taken_port_still_fails_at_once():
    """Waiting for a slow start must not turn a port that is really taken into a long hang: uvicorn's bind
    error ends the server's thread, and the launch fails then (Gradio's own error, its own message)."""
    import socket
    import time

    import uvicorn
    from gradio import http_server

    from omnivoice_demo.ui.server_start import PatientServer

    async def app(scope, receive, send):
        pass

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        server = PatientServer(uvicorn.Config(app, host="127.0.0.1", port=taken.getsockname()[1],
                                              log_level="critical", lifespan="off"))
        start = time.monotonic()
        with pytest.raises(http_server.ServerFailedToStartError):
            server.run_in_thread()
        assert time.monotonic() - start < 60   # not the START_SECONDS (180 s) wait
