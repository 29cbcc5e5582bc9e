"""A model file changed on disk under a running server (a subprocess on a copy of the tiny fp32 folder):
the server neither dies nor keeps quiet about it."""

from __future__ import annotations

import shutil

import httpx

from tests.support.app_server import AppProcess
from tests.test_http_api import wait_model_loaded


def test_a_model_file_truncated_under_a_running_server_neither_kills_it_nor_goes_unsaid(tiny_fp32_folder, tmp_path):
    folder = tmp_path / "model"
    shutil.copytree(tiny_fp32_folder, folder)
    data = folder / "llm_decoder.onnx.data"
    assert data.is_file()
    app = AppProcess(["--model", str(folder), "--precision", "fp32"], tmp_path / "app")
    try:
        wait_model_loaded(app)
        body = {"model": "omnivoice", "input": "Hello.", "voice": "auto", "steps": 2, "response_format": "wav"}
        assert httpx.post(app.url + "v1/audio/speech", json=body, timeout=120).status_code == 200
        with open(data, "r+b") as handle:  # in place: the same inode, as a careless copy or a full disk does
            handle.truncate(data.stat().st_size // 2)
        response = httpx.post(app.url + "v1/audio/speech", json=body, timeout=120)
        assert app.process.poll() is None, app.log_text()  # before the fix: SIGBUS, exit 135, nothing logged
        assert response.status_code == 200, response.text  # the weights the server read stay in memory
        assert httpx.get(app.url + "health", timeout=30).json()["model_loaded"]
        log = app.log_text()
        assert "llm_decoder.onnx.data" in log and "changed on disk" in log, log
    finally:
        app.stop()
