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


PLATEAU = """
import json, sys
import psutil
from omnivoice_demo.settings.limits import Limits
from omnivoice_demo.engine.loop import OmniVoiceEngine
from omnivoice_demo.studio.service import EngineService
from omnivoice_demo.runtime.memory import bound_heap

if sys.argv[2] == "bounded":
    bound_heap()  # as our own processes do (the app, the command line); the queue does not, it is library code
engine = OmniVoiceEngine(sys.argv[1], verify="none", limits=Limits.local(), calibrate=False, backbone="int4")
service = EngineService(max_running=1, max_waiting=1)

def request(text):
    job = service.submit(lambda: engine.stream(text, num_step=1, seed=0))
    assert job.wait(300) and job.state == "finished", job.state
    del job  # the audio goes to the client; the server forgets it
    return psutil.Process().memory_info().rss / 2**20

request("Hello there.")
before = request("Hello there.")
request(" ".join(f"This is sentence number {n} of one long request that fills the prompt." for n in range(60)))
after = request("Hello there.")
print(json.dumps([before, after]))
"""


def plateau_mb(folder, heap: str) -> tuple[float, float]:
    """RSS (MB) of a fresh server-like process before and after one long request (``heap``: "bounded" as our
    processes run, or "plain")."""
    import json
    import os
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", PLATEAU, str(folder), heap], capture_output=True, text=True,
                          timeout=600, env={**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "2"})
    assert done.returncode == 0, done.stderr[-2000:]
    before, after = json.loads(done.stdout.strip().splitlines()[-1])
    return before, after


def test_one_long_request_leaves_no_memory_plateau(tiny_fp32_folder):
    """Before, the CPU arena and glibc's heap kept a long request's buffers (+96 MB here).  Measured in a fresh
    process: inside pytest's (3 GB by then, other tests' threads still about) one run saw +89 MB that was not
    this request's."""
    before, after = plateau_mb(tiny_fp32_folder, "bounded")
    assert after - before < 40, f"RSS {before:.0f} MB -> {after:.0f} MB after one long request"


SPY = """
import ctypes, sys
asked = []
original = ctypes.CDLL.__getitem__
def spy(self, name):
    asked.append(name)
    return original(self, name)
ctypes.CDLL.__getitem__ = spy
"""


def run_spied(code: str) -> list[str]:
    """The C library functions looked up while ``code`` runs in a fresh interpreter (``ctypes.CDLL`` spied)."""
    import json
    import os
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", SPY + code + "\nprint(json.dumps(asked))"], capture_output=True,
                          text=True, timeout=300, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_importing_the_package_or_using_its_queue_leaves_the_allocator_alone():
    """``mallopt`` retunes the whole process's allocator: a host program that imports us keeps its own settings.
    Every module of the package is imported and the queue (which returns free pages, ``malloc_trim``) is used."""
    asked = run_spied("""
import json, importlib, pkgutil, omnivoice_demo
for module in pkgutil.walk_packages(omnivoice_demo.__path__, "omnivoice_demo."):
    try:
        importlib.import_module(module.name)
    except ImportError:  # an extra that is not installed
        pass
from omnivoice_demo.studio.service import EngineService
service = EngineService(max_running=1, max_waiting=1)
job = service.submit(lambda: iter([1, 2]))
assert job.wait(30) and job.state == "finished", job.state
import time
deadline = time.monotonic() + 30   # the worker gives the freed pages back once the job has ended
while "malloc_trim" not in asked and time.monotonic() < deadline:
    time.sleep(0.05)
""")
    assert "mallopt" not in asked
    assert "malloc_trim" in asked   # the queue did run: freed pages given back, no setting changed


def test_our_own_command_line_bounds_the_heap(tmp_path):
    """The command line is our own process: it sets the mmap threshold (``bound_heap``) before it runs a command."""
    asked = run_spied(f"""
import json
from omnivoice_demo.cli.main import main
code = main(["synth", "--model", {str(tmp_path / "no-such-folder")!r}, "--text", "Hi.", "--output",
             {str(tmp_path / "out.wav")!r}, "--offline"])
assert code == 2, code
""")
    assert "mallopt" in asked
