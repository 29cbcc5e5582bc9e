"""The suite on two workers (scripts/test.sh: pytest-xdist, ``-n 2 --dist loadfile``): a module's tests run on one
worker, and the modules that start a local Ray cluster take turns on a lock of the machine's test runs
(tests/conftest.py ``one_ray_module_at_a_time``), since Ray joins any cluster it finds running."""

from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys
import tempfile
import threading
import time
import types

from tests.conftest import RAY_MODULES, one_ray_module_at_a_time

TESTS = pathlib.Path(__file__).resolve().parent

#: what starts or joins a local Ray cluster in a test module: ray.init, the CLI's --ray, serve --replicas
STARTS_RAY = re.compile(r"ray\.init\(|[\"']--ray[\"']|[\"']--replicas[\"']")


def test_every_module_that_starts_ray_takes_turns():
    starting = {f"tests.{path.stem}" for path in TESTS.glob("test_*.py")
                if path.name != pathlib.Path(__file__).name and STARTS_RAY.search(path.read_text())}
    assert starting, "no module starts Ray: the pattern no longer finds them"
    assert starting <= RAY_MODULES, sorted(starting - RAY_MODULES)


def _entered(module: str) -> tuple[threading.Event, threading.Event]:
    """Run the fixture for ``module`` on a thread: (set once inside it, set to leave it)."""
    inside, leave = threading.Event(), threading.Event()

    def run() -> None:
        fixture = one_ray_module_at_a_time.__wrapped__(types.SimpleNamespace(module=types.SimpleNamespace(
            __name__=module)))
        next(fixture)
        inside.set()
        leave.wait(30)
        next(fixture, None)

    threading.Thread(target=run, daemon=True).start()
    return inside, leave


def test_a_ray_module_waits_while_another_run_holds_the_ray_lock_and_others_do_not():
    lock = os.path.join(tempfile.gettempdir(), f"omnivoice-tests-ray-{os.getuid()}.lock")
    holder = subprocess.Popen([sys.executable, "-c", (
        "import sys, time; from filelock import FileLock\n"
        f"with FileLock({lock!r}):\n    print('held', flush=True); time.sleep(3)")],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        other, other_leave = _entered("tests.test_engine")
        ray, ray_leave = _entered(sorted(RAY_MODULES)[0])
        assert other.wait(2), "a module without Ray waited for the Ray lock"
        started = time.monotonic()
        assert not ray.wait(1), "a Ray module ran while another process held the Ray lock"
        assert ray.wait(10) and time.monotonic() - started > 1.0
        other_leave.set()
        ray_leave.set()
    finally:
        holder.kill()
        holder.wait()


def test_the_test_script_runs_two_workers_by_module():
    script = (TESTS.parent / "scripts" / "test.sh").read_text()
    assert '-n "$workers" --dist loadfile' in script and "OMNIVOICE_TEST_WORKERS:-2" in script
