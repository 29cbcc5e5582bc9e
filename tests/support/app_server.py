"""``python app.py`` in a subprocess on 127.0.0.1 and a free port, for the API and browser tests.

``shared_app(folder, ...)`` starts one server per test session (the API and the
browser tests use the same one) and stops it when pytest finishes.
"""

from __future__ import annotations

import os
import pathlib
import socket
import subprocess
import sys
import time
import urllib.request
from typing import Optional

ROOT = pathlib.Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def stop_process(process: Optional[subprocess.Popen], timeout: float = 15.0) -> None:
    """Stop ``process`` if it still runs: SIGTERM, ``timeout`` seconds to exit, then SIGKILL (waited for).

    The one way the tests and ``benchmarks/hardening_probe.py`` stop the servers they started."""
    if process is None or process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


class AppProcess:
    def __init__(self, args: list[str], workdir: pathlib.Path, env: Optional[dict] = None):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/"
        workdir.mkdir(parents=True, exist_ok=True)
        self.log_path = workdir / f"app-{self.port}.log"
        environment = dict(os.environ, HF_HUB_OFFLINE="1", GRADIO_ANALYTICS_ENABLED="False",
                           OMNIVOICE_DATA=str(workdir / "data"), OMNIVOICE_CACHE=str(workdir / "cache"),
                           HF_HOME=str(workdir / "hf"), TOKENIZERS_PARALLELISM="false", OMP_NUM_THREADS="2")
        environment.pop("SPACE_ID", None)
        environment.update(env or {})
        self.log = open(self.log_path, "w")
        self.started = time.monotonic()
        self.process = subprocess.Popen([sys.executable, str(ROOT / "app.py"), "--port", str(self.port), *args],
                                        cwd=ROOT, env=environment, stdout=self.log, stderr=subprocess.STDOUT)
        self.serving_after: Optional[float] = None

    def wait_serving(self, timeout: float = 60.0) -> float:
        """Seconds from start until the page answered."""
        if self.serving_after is not None and self.process.poll() is None:  # a later module of the same session
            return self.serving_after
        deadline = self.started + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"app.py exited with {self.process.returncode}:\n{self.log_text()}")
            try:
                with urllib.request.urlopen(self.url, timeout=2) as response:
                    if response.status == 200:
                        self.serving_after = time.monotonic() - self.started
                        return self.serving_after
            except OSError:
                time.sleep(0.2)
        raise TimeoutError(f"app.py did not serve {self.url} within {timeout} s:\n{self.log_text()}")

    def log_text(self) -> str:
        self.log.flush()
        return self.log_path.read_text(errors="replace")[-4000:]

    def __enter__(self) -> "AppProcess":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def stop(self) -> None:
        stop_process(self.process, timeout=10)
        self.log.close()


_SHARED: dict[str, AppProcess] = {}


def shared_app(folder: pathlib.Path, workdir: pathlib.Path, config, precision: str = "fp32") -> AppProcess:
    """One server on ``folder`` for the whole session (stopped at the end of the session)."""
    key = str(folder)
    if key not in _SHARED:
        app = AppProcess(["--model", str(folder), "--precision", precision], workdir)
        config.add_cleanup(app.stop)
        _SHARED[key] = app
    app = _SHARED[key]
    app.wait_serving()
    return app


def wait_model_ready(client, timeout: float = 60.0) -> None:
    """Call /speak until the model is loaded (the app loads it in the background)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            client.predict(text="Ready?", num_step=1, seed=0, api_name="/speak")
            return
        except Exception as exc:  # gradio_client.exceptions.AppError while loading
            if "loading" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.3)
