"""The server under test: ``python app.py`` of a checkout in a subprocess, and its memory while a block runs."""

from __future__ import annotations

import contextlib
import os
import pathlib
import re
import signal
import subprocess
import tempfile
import threading
import time
from typing import Optional

import httpx
import psutil

from tests.support.app_server import free_port, stop_process

#: the checkout the probe runs from (its convert builds the tiny model; its tests/support stops processes)
HERE = pathlib.Path(__file__).resolve().parents[2]
KEY = "probe-key"
MB = 2**20

#: seconds a server may take to load its model (--start-timeout: a loaded machine starves the niced servers)
START_TIMEOUT = 180.0


def environment(repo: pathlib.Path, work: pathlib.Path) -> dict:
    env = dict(os.environ, PYTHONPATH=str(repo), HF_HUB_OFFLINE="1", GRADIO_ANALYTICS_ENABLED="False",
               OMNIVOICE_DATA=str(work / "data"), OMNIVOICE_CACHE=str(work / "cache"), HF_HOME=str(work / "hf"),
               GRADIO_TEMP_DIR=str(work / "gradio"), TOKENIZERS_PARALLELISM="false", OMP_NUM_THREADS="2")
    for name in ("SPACE_ID", "OMNIVOICE_API_KEY", "GRADIO_SERVER_NAME", "GRADIO_SERVER_PORT"):
        env.pop(name, None)
    return env


def supported_flags(repo: pathlib.Path, python: str, wanted: list[str]) -> tuple[list[str], list[str]]:
    """The flags of ``wanted`` that this checkout's ``app.py --help`` lists, and those it lacks."""
    text = subprocess.run([python, str(repo / "app.py"), "--help"], capture_output=True, text=True, cwd=repo,
                          env=environment(repo, pathlib.Path(tempfile.gettempdir())), timeout=120).stdout
    have = [flag for flag in wanted if re.search(re.escape(flag) + r"(?![\w-])", text)]
    return have, [flag for flag in wanted if flag not in have]


class Server:
    """``python app.py`` of ``repo`` on 127.0.0.1, its log in ``work``; the model loads in the background."""

    def __init__(self, repo: pathlib.Path, python: str, work: pathlib.Path, args: list[str], name: str,
                 env: Optional[dict] = None):
        self.repo, self.python, self.work, self.args, self.name = repo, python, work, args, name
        self.env = env or {}
        work.mkdir(parents=True, exist_ok=True)
        self.process: Optional[subprocess.Popen] = None
        self.log_path = work / f"{name}.log"
        self.starts = 0

    def start(self, timeout: Optional[float] = None) -> float:
        timeout = timeout or START_TIMEOUT
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/"
        self.log = open(self.log_path, "a")
        self.log.write(f"\n--- start {self.starts}\n")
        self.log.flush()
        started = time.monotonic()
        self.process = subprocess.Popen(["nice", "-n", "19", self.python, str(self.repo / "app.py"),
                                         "--host", "127.0.0.1", "--port", str(self.port), *self.args],
                                        cwd=self.work, env={**environment(self.repo, self.work), **self.env},
                                        stdout=self.log, stderr=subprocess.STDOUT)
        self.starts += 1
        while time.monotonic() - started < timeout:
            if not self.alive():
                raise RuntimeError(f"{self.name} exited with {self.process.returncode}:\n{self.log_tail()}")
            with contextlib.suppress(OSError, httpx.HTTPError, ValueError):
                health = httpx.get(self.url + "health", timeout=5).json()
                if health.get("model_loaded"):
                    return time.monotonic() - started
            time.sleep(0.3)
        raise TimeoutError(f"{self.name} did not load its model within {timeout} s:\n{self.log_tail()}")

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def rss(self) -> int:
        return psutil.Process(self.process.pid).memory_info().rss

    def log_tail(self, chars: int = 3000) -> str:
        return self.log_path.read_text(errors="replace")[-chars:]

    def kill9(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()
        self.log.close()

    def stop(self) -> None:
        if self.process is None:
            return
        stop_process(self.process, timeout=15)
        self.log.close()

    def http(self, key: bool = True, timeout: float = 120) -> httpx.Client:
        headers = {"Authorization": f"Bearer {KEY}"} if key else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=timeout)


class PeakRSS:
    """The server's resident memory before, at its peak during, and after a block (sampled every 20 ms)."""

    def __init__(self, server: Server):
        self.server, self.before, self.peak, self.after = server, 0, 0, 0

    def __enter__(self) -> "PeakRSS":
        self.before = self.peak = self.server.rss()
        self.started = time.monotonic()
        self.running = True
        self.thread = threading.Thread(target=self._sample, daemon=True)
        self.thread.start()
        return self

    def _sample(self) -> None:
        while self.running:
            with contextlib.suppress(psutil.Error):
                self.peak = max(self.peak, self.server.rss())
            time.sleep(0.02)

    def __exit__(self, *exc) -> None:
        self.running = False
        self.thread.join()
        self.seconds = time.monotonic() - self.started
        with contextlib.suppress(psutil.Error):
            self.after = self.server.rss()
            self.peak = max(self.peak, self.after)

    @property
    def grew_mb(self) -> float:
        return (self.peak - self.before) / MB

    def __str__(self) -> str:
        return f"RSS {self.before / MB:.0f} MB, peak +{self.grew_mb:.0f} MB, after {self.after / MB:.0f} MB, " \
               f"{self.seconds:.1f} s"


def build_model(work: pathlib.Path, python: str, profile: str = "cpu_fp32") -> pathlib.Path:
    """The tiny folder (fp32 by default) as the tests build it (random weights, seed 0), with this checkout's convert."""
    target = work / {"cpu_fp32": "tiny-fp32", "cpu": "tiny-int4"}.get(profile, f"tiny-{profile}")
    script = ("import pathlib, sys\nfrom convert.random_checkpoint import build\n"
              "from convert.pipeline import convert_checkpoint\nroot = pathlib.Path(sys.argv[1])\n"
              "checkpoint = build('tiny', root / 'checkpoint', seed=0)\n"
              f"convert_checkpoint(checkpoint, root / {target.name!r}, profile={profile!r}, progress=lambda line: None)\n")
    subprocess.run(["nice", "-n", "19", python, "-c", script, str(work)], check=True, cwd=HERE,
                   env=dict(os.environ, PYTHONPATH=str(HERE)), timeout=900)
    return target
