"""The installable package: every package folder is listed in pyproject.toml, and the wheel holds the assets."""

from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys
import tomllib

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_every_package_folder_is_listed():
    listed = set(_pyproject()["tool"]["setuptools"]["packages"])
    found = {".".join(p.parent.relative_to(ROOT).parts) for top in ("omnivoice_demo", "convert")
             for p in (ROOT / top).rglob("__init__.py")}
    assert found - listed == set(), "add these packages to [tool.setuptools] packages in pyproject.toml"
    assert "omnivoice_demo.assets" in listed


def test_console_scripts_point_at_functions():
    import importlib

    for name, target in _pyproject()["project"]["scripts"].items():
        module, function = target.split(":")
        assert callable(getattr(importlib.import_module(module), function)), name


def _names(lines) -> set[str]:
    """Distribution names of requirement lines (comments and ``-r`` includes left out)."""
    return {re.split(r"[<>=!~\[ ;]", line.strip(), maxsplit=1)[0].lower().replace("_", "-")
            for line in lines if line.strip() and not line.strip().startswith(("#", "-r"))}


def test_runtime_dependencies_match_requirements_txt():
    """requirements.txt (pinned, for Spaces) names the same runtime packages as pyproject.toml."""
    declared = _names(_pyproject()["project"]["dependencies"])
    pinned = _names((ROOT / "requirements.txt").read_text().splitlines())
    assert declared == pinned


def test_dev_extras_match_requirements_dev_txt():
    """requirements-dev.txt (what scripts/setup_dev.sh installs) names the packages of the extras
    ``convert`` and ``dev``, so ``pip install ".[dev]"`` and the script give the same tools."""
    extras = _pyproject()["project"]["optional-dependencies"]
    declared = _names(extras["convert"] + extras["dev"]) - {"omnivoice-onnx-studio"}
    listed = _names((ROOT / "requirements-dev.txt").read_text().splitlines())
    assert declared == listed


@pytest.mark.slow
def test_wheel_holds_assets_and_scripts(tmp_path):
    target = tmp_path / "site"
    built = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
                            "--target", str(target), str(ROOT)], check=True, capture_output=True, text=True,
                           timeout=600)
    # issue 19: setup_dev.sh printed about 80 lines of setuptools warnings (the licence table, a data folder
    # missing from the package list)
    said = [line for line in (built.stdout + built.stderr).splitlines()
            if "is ignored: it is neither" not in line]  # this machine's pip configuration, not the build
    assert not [line for line in said if "Warning" in line], "\n".join(said)
    assert (target / "omnivoice_demo" / "assets" / "studio.css").is_file()
    assert (target / "omnivoice_demo" / "data" / "languages.json").is_file()
    assert (target / "omnivoice_demo" / "data" / "eval_items.jsonl").is_file()  # omnivoice eval's built-in set
    assert {"omnivoice", "omnivoice-studio", "omnivoice-convert"} <= {p.name for p in (target / "bin").iterdir()}
    # the installed app finds its assets without a checkout beside it
    probe = "from omnivoice_demo.ui import assets; print(assets.__file__); assert '.ov-progress' in assets.css()"
    shown = subprocess.run([sys.executable, "-c", probe], check=True, capture_output=True, text=True, cwd=tmp_path,
                           env=dict(os.environ, PYTHONPATH=str(target)), timeout=120).stdout
    assert shown.startswith(str(target))
