"""The lint and type gate (scripts/lint.sh: ruff, then mypy, with pyproject.toml's rules), which scripts/test.sh
runs before pytest, so CI fails on a lint or type error: a clean module passes, a planted error of each kind fails."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent


def gate(path: pathlib.Path) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "scripts/lint.sh", str(path)], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "PYTHON": sys.executable}, timeout=600)


def test_the_gate_passes_a_clean_module(tmp_path):
    clean = tmp_path / "clean.py"
    clean.write_text("import os\n\n\ndef home() -> str:\n    return os.path.expanduser('~')\n")
    done = gate(clean)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_gate_fails_on_a_lint_error(tmp_path):
    planted = tmp_path / "planted_lint.py"
    planted.write_text("def speak():\n    return undefined_name\n")
    done = gate(planted)
    assert done.returncode != 0
    assert "F821" in done.stdout + done.stderr


def test_the_gate_fails_on_a_type_error(tmp_path):
    """Lint-clean, but it calls a function the module does not have: mypy's attr-defined, which the gate checks."""
    planted = tmp_path / "planted_type.py"
    planted.write_text("import os\n\n\ndef home() -> str:\n    return os.path.no_such_function('~')\n")
    done = gate(planted)
    assert done.returncode != 0
    assert "attr-defined" in done.stdout + done.stderr and "F821" not in done.stdout


def test_the_test_command_runs_the_gate_before_pytest():
    script = (ROOT / "scripts" / "test.sh").read_text()
    assert script.index("bash scripts/lint.sh") < script.index("-m pytest")
