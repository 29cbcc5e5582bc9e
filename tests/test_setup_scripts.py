"""The set-up: the app and the tests have their own environments, and every dependency is explained."""

from __future__ import annotations

import pathlib
import re
import subprocess
import tomllib

ROOT = pathlib.Path(__file__).resolve().parents[1]


def venvs_of(script: str) -> set[str]:
    """The virtual environments a script's commands name (creates, or runs python from); comments left out."""
    lines = [line for line in (ROOT / "scripts" / script).read_text().splitlines() if not line.lstrip().startswith("#")]
    return set(re.findall(r"\.venv[\w-]*", "\n".join(lines)))


def test_the_app_and_the_tests_have_separate_environments():
    assert venvs_of("run_app.sh") == {".venv"}  # the runtime only: no torch
    assert venvs_of("setup_dev.sh") == {".venv-dev"} and venvs_of("test.sh") == {".venv-dev"}
    assert not venvs_of("test-fast.sh") and "scripts/setup_dev.sh" in (ROOT / "scripts" / "test.sh").read_text()
    assert "scripts/test.sh" in (ROOT / ".ci" / "run").read_text()
    ignored = (ROOT / ".gitignore").read_text().split()
    assert ".venv/" in ignored and ".venv-dev/" in ignored
    for script in ("run_app.sh", "setup_dev.sh", "test.sh", "test-fast.sh"):
        assert subprocess.run(["bash", "-n", str(ROOT / "scripts" / script)]).returncode == 0


def test_every_dependency_is_in_the_dependencies_table():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    names = [re.split(r"[<>=!\[ ;]", spec, maxsplit=1)[0] for spec in project["dependencies"]]
    names += [re.split(r"[<>=!\[ ;]", spec, maxsplit=1)[0] for specs in project["optional-dependencies"].values()
              for spec in specs if not spec.startswith("omnivoice-onnx-studio")]
    table = (ROOT / "docs" / "dependencies.md").read_text().lower()
    cells = set(re.findall(r"^\| ([^|]+) \|", table, re.M))
    listed = {name.strip() for cell in cells for name in cell.split(",")}
    missing = sorted({name.lower() for name in names} - listed)
    assert not missing, f"docs/dependencies.md does not explain: {missing}"
    assert "librosa" in listed and "not used" in table
