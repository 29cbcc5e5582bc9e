"""Memory of a long-running server: 200 mixed requests grow it by less than 150 MB (the soak test, slow),
and one long request leaves no plateau behind."""

from __future__ import annotations

import httpx
import pytest

from tests.support.app_server import AppProcess
from tests.test_http_api import wait_model_loaded


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


def test_one_long_request_leaves_no_memory_plateau(tiny_fp32_folder):
    """Before, the CPU arena and glibc's heap kept a long request's buffers (+96 MB here)."""
    import psutil

    from omnivoice_demo.settings.limits import Limits
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
