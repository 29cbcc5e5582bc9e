"""The CLI checks its output path before any synthesis: a link to a device or an extension that is no
audio format is a usage error (exit 2) naming the problem, with no model loaded."""

from __future__ import annotations

import pathlib

import pytest


def _run_cli(*args):
    import os
    import subprocess
    import sys

    root = pathlib.Path(__file__).resolve().parent.parent
    env = dict(os.environ, PYTHONPATH=str(root), HF_HUB_OFFLINE="1")
    return subprocess.run([sys.executable, "-m", "omnivoice_demo", *args], capture_output=True, cwd=root, env=env,
                          timeout=120)


@pytest.mark.parametrize("target,message", [("link", b"not a regular file"), ("x.raw", b"'.raw' is not an audio")])
def test_the_cli_checks_its_output_before_synthesis(tmp_path, target, message):
    if target == "link":
        (tmp_path / "out.wav").symlink_to("/dev/full")
        target = "out.wav"
    done = _run_cli("synth", "--model", str(tmp_path / "no-model"), "--text", "Hello.",
                    "--output", str(tmp_path / target))
    assert done.returncode == 2 and message in done.stderr, done.stderr
