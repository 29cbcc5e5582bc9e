"""Issue 21, round two's rest: model files changed under a running server, Gradio uploads in shared mode,
the Wyoming server's declared lengths, and the soak test (slow).

Each test here failed before its fix (see the commits on branch harden2)."""

from __future__ import annotations

import pathlib
import shutil
import time

import httpx
import pytest

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


def _upload(app, visitor: str, size: int):
    return httpx.post(app.url + "gradio_api/upload", files={"files": ("clip.wav", b"\0" * size)},
                      headers={"X-Forwarded-For": visitor}, timeout=60)


def test_gradio_uploads_in_shared_mode_are_bounded_per_visitor_in_total_and_in_time(tmp_path):
    kb = 1024
    app = AppProcess(["--offline", "--shared", "--upload-quota-mb", "1", "--upload-total-mb", "1.5",
                      "--upload-keep-minutes", "0.05"], tmp_path)  # kept 3 s, swept every second
    try:
        app.wait_serving(timeout=180)
        first = _upload(app, "10.0.0.1", 600 * kb)
        assert first.status_code == 200, first.text
        kept = pathlib.Path(first.json()[0])
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


def _soak_requests(wav: bytes):
    """200 requests of the kinds a server meets, in a fixed order (about 1 in 10 at the longest text allowed)."""
    long_text = " ".join(f"Sentence {n} of the longest text this server takes." for n in range(60))[:2000]
    kinds = [
        ("POST", "v1/audio/speech", {"json": {"input": "Soak test.", "voice": "auto", "steps": 1}}, 200),
        ("GET", "health", {}, 200),
        ("POST", "v1/audio/speech", {"json": {"input": "A designed voice.", "voice": "auto", "steps": 2,
                                              "instructions": "female, low pitch", "response_format": "pcm"}}, 200),
        ("GET", "v1/models", {}, 200),
        ("POST", "v1/audio/speech", {"content": b"{not json", "headers": {"Content-Type": "application/json"}}, 400),
        ("POST", "v1/audio/voices", {"data": {"name": "Soak", "transcript": "Hello there.", "consent": "true"},
                                     "files": {"file": ("clip.wav", wav, "audio/wav")}}, 201),
        ("GET", "v1/audio/voices", {}, 200),
        ("DELETE", "v1/audio/voices/Soak", {}, 200),
        ("POST", "v1/audio/speech", {"json": {"input": long_text, "voice": "auto", "steps": 1}}, 200),
        ("POST", "v1/audio/speech", {"json": {"input": "x" * 2001, "voice": "auto"}}, 413),
    ]
    return [kinds[n % len(kinds)] for n in range(200)]


@pytest.mark.slow
def test_soak_two_hundred_mixed_requests_grow_the_server_by_less_than_150_mb(tiny_fp32_folder, tmp_path):
    import io

    import psutil
    import soundfile

    from tests.support.signals import speech_like

    buffer = io.BytesIO()
    soundfile.write(buffer, speech_like(2.0)[0], 24000, format="WAV")
    requests = _soak_requests(buffer.getvalue())
    app = AppProcess(["--model", str(tiny_fp32_folder), "--precision", "fp32"], tmp_path)
    try:
        wait_model_loaded(app)
        server = psutil.Process(app.process.pid)
        rss = []
        with httpx.Client(base_url=app.url, timeout=120) as client:
            for index, (method, path, kwargs, status) in enumerate(requests):
                if index == 20:  # after warm-up: every kind has run twice
                    rss.append(server.memory_info().rss)
                response = client.request(method, path, **kwargs)
                assert response.status_code == status, (index, path, response.text[:300])
        assert app.process.poll() is None
        rss.append(server.memory_info().rss)
        growth_mb = (rss[-1] - rss[0]) / 2**20
        print(f"soak: RSS after warm-up {rss[0] / 2**20:.0f} MB, after 200 requests {rss[-1] / 2**20:.0f} MB, "
              f"growth {growth_mb:.0f} MB")
        assert growth_mb < 150, growth_mb
    finally:
        app.stop()


@pytest.fixture
def wyoming_port(tmp_path):
    from omnivoice_demo.studio import ModelManager, VoiceLibrary
    from omnivoice_demo.studio.service import EngineService
    from omnivoice_demo.wyoming.server import WyomingServer, make_context
    from tests.support.app_server import free_port

    port = free_port()
    context = make_context(ModelManager(cache_dir=tmp_path / "cache", offline=True), VoiceLibrary(tmp_path / "voices"),
                           EngineService(max_running=1, max_waiting=1))
    running = WyomingServer(f"tcp://127.0.0.1:{port}", context).start_in_thread()
    yield port
    running.stop_thread()


@pytest.mark.parametrize("field", ["data_length", "payload_length"])
def test_a_wyoming_event_declaring_a_huge_length_is_refused_before_it_is_read(wyoming_port, field, caplog):
    import json
    import socket

    with socket.create_connection(("127.0.0.1", wyoming_port), timeout=10) as client:
        client.sendall(json.dumps({"type": "synthesize", field: 2**40}).encode() + b"\n")
        refused, sent = False, 0
        client.settimeout(5)
        try:
            for _ in range(64):  # up to 64 MiB while the server should have hung up at once
                client.sendall(b"\0" * 2**20)
                sent += 2**20
            refused = client.recv(1) == b""
        except (ConnectionResetError, BrokenPipeError):
            refused = True
        except socket.timeout:  # before: still reading, buffering every byte towards the 1 TiB declared
            refused = False
    assert refused, f"the server kept the connection after {sent} bytes of a 1 TiB event"
    assert f"declares {2**40} bytes" in caplog.text, caplog.text  # said in the log, the bytes never read


def test_one_long_request_leaves_no_memory_plateau(tiny_fp32_folder):
    """Issue 21 item 10: before, the CPU arena and glibc's heap kept a long request's buffers (+96 MB here)."""
    import psutil

    from omnivoice_demo.engine.config import Limits
    from omnivoice_demo.engine.loop import OmniVoiceEngine
    from omnivoice_demo.studio.service import EngineService

    engine = OmniVoiceEngine(tiny_fp32_folder, verify="none", limits=Limits.local(), calibrate=False, backbone="int4")
    service = EngineService(max_running=1, max_waiting=1)

    def request(text: str) -> float:
        job = service.submit(lambda: engine.stream(text, num_step=1, seed=0))
        assert job.wait(300) and job.state == "finished", job.state
        del job  # the audio goes to the client; the server forgets it
        return psutil.Process().memory_info().rss / 2**20

    request("Hello there.")
    before = request("Hello there.")
    request(" ".join(f"This is sentence number {n} of one long request that fills the prompt." for n in range(60)))
    after = request("Hello there.")
    assert after - before < 40, f"RSS {before:.0f} MB -> {after:.0f} MB after one long request"
