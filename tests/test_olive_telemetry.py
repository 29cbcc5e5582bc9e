"""Our builds send nothing to Olive's telemetry: Olive 0.13 queues a heartbeat before it reads
OLIVE_DISABLE_TELEMETRY, so ``convert.olive_runs.olive_telemetry_off`` makes its singleton inert first."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest

pytest.importorskip("olive")

ROOT = pathlib.Path(__file__).resolve().parents[1]
CI_VARIABLES = ("CI", "TF_BUILD", "GITHUB_ACTIONS", "JENKINS_URL", "CODEBUILD_BUILD_ID", "BUILDKITE",
                "SYSTEM_TEAMFOUNDATIONCOLLECTIONURI")
PROBE = """
from convert.olive_runs import olive_telemetry_off
olive_telemetry_off()
from olive.telemetry.telemetry import Telemetry
instance = Telemetry()
print("logger", instance._logger is not None)
"""


def probe() -> str:
    """Our builds' set-up, then Olive's telemetry, in a process with no CI variable (which Olive obeys)."""
    env = {k: v for k, v in os.environ.items() if k not in CI_VARIABLES and k != "OLIVE_DISABLE_TELEMETRY"}
    env["PYTHONPATH"] = str(ROOT)
    done = subprocess.run([sys.executable, "-c", PROBE], env=env, cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip().splitlines()[-1]


def test_our_builds_leave_olive_with_no_telemetry_logger():
    # Olive by itself makes one here (and queues its heartbeat); a no-op olive_telemetry_off fails this.
    # The plain-Olive side is not run: its exit waits ~10 s on network retries.
    assert probe() == "logger False"
