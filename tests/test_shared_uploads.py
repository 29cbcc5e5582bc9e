"""Gradio uploads on a shared server (a subprocess, no model): bounded per visitor, in total and in time,
chunked bodies without a length included."""

from __future__ import annotations

import time

import httpx

from tests.support.app_server import AppProcess


def _upload(app, visitor: str, size: int):
    return httpx.post(app.url + "gradio_api/upload", files={"files": ("clip.wav", b"\0" * size)},
                      headers={"X-Forwarded-For": visitor}, timeout=60)


def test_gradio_uploads_in_shared_mode_are_bounded_per_visitor_in_total_and_in_time(tmp_path):
    kb = 1024
    # the test client stands for a proxy on this machine: its X-Forwarded-For names the visitors (issue 49)
    app = AppProcess(["--offline", "--shared", "--forwarded-allow-ips", "127.0.0.1", "--upload-quota-mb", "1",
                      "--upload-total-mb", "1.5",
                      "--upload-keep-minutes", "0.05"], tmp_path,  # kept 3 s, swept every second
                     env={"GRADIO_TEMP_DIR": str(tmp_path / "gradio")})
    try:
        app.wait_serving(timeout=180)
        first = _upload(app, "10.0.0.1", 600 * kb)
        assert first.status_code == 200, first.text
        shown = first.json()[0]   # Gradio's cache by its alias: no server path in shared mode (issue 49)
        assert shown.startswith("/gradio-cache/") and str(tmp_path) not in first.text
        kept = tmp_path / "gradio" / shown.removeprefix("/gradio-cache/")
        assert kept.is_file()
        again = _upload(app, "10.0.0.1", 600 * kb)  # before: 200, as often as anyone liked
        assert again.status_code == 413 and "1 MB" in again.text, again.text
        assert _upload(app, "10.0.0.2", 600 * kb).status_code == 200
        third = _upload(app, "10.0.0.3", 600 * kb)  # the server's total
        assert third.status_code == 413 and "1.5 MB" in third.text, third.text
        head = b'--x\r\nContent-Disposition: form-data; name="files"; filename="c.wav"\r\n\r\n'
        body = [head] + [b"\0" * (64 * kb)] * 64 + [b"\r\n--x--\r\n"]
        chunked = httpx.post(app.url + "gradio_api/upload", content=iter(body),
                             headers={"Content-Type": "multipart/form-data; boundary=x",
                                      "X-Forwarded-For": "10.0.0.4"}, timeout=60)
        assert chunked.status_code == 413, chunked.text  # no Content-Length: cut off at the budget
        deadline = time.monotonic() + 30
        while kept.exists() and time.monotonic() < deadline:  # Gradio's delete_cache: 3 s old, every second
            time.sleep(0.5)
        assert not kept.exists()
        while (status := _upload(app, "10.0.0.1", 600 * kb).status_code) == 413 and time.monotonic() < deadline:
            time.sleep(0.5)  # the charges are forgotten a sweep after the files go
        assert status == 200
        assert app.process.poll() is None
    finally:
        app.stop()
