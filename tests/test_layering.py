"""Dependencies go one way: ``convert`` (the build tool) may import ``omnivoice_demo``; the runtime
imports ``convert`` only inside the build route, and without the convert extra every entry point
says in one line what to install."""

from __future__ import annotations

import ast
import json
import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
#: what an installation of the runtime only (``pip install .``) lacks
BUILD_ONLY = ("convert", "torch", "torchaudio", "transformers", "omnivoice", "olive", "onnxruntime_genai", "onnxscript")
INSTALL_LINE = "pip install 'omnivoice-onnx-studio[convert]'"


def run_without_build_tools(code: str, *args: str, timeout: int = 120) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh interpreter where the build-only packages cannot be imported
    (``sys.modules[name] = None`` makes both ``import`` and ``importlib.util.find_spec`` fail)."""
    prelude = f"import sys\nfor name in {BUILD_ONLY!r}:\n    sys.modules[name] = None\n"
    return subprocess.run([sys.executable, "-c", prelude + code, *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout, env={**os.environ, "HF_HUB_OFFLINE": "1"})


def module_level_imports(path: pathlib.Path) -> set[str]:
    """Top-level package names imported at module level (not inside a function) by ``path``."""
    names = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        stack = [node]
        while stack:
            item = stack.pop()
            if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                continue
            if isinstance(item, ast.Import):
                names.update(alias.name.split(".")[0] for alias in item.names)
            elif isinstance(item, ast.ImportFrom) and item.level == 0 and item.module:
                names.add(item.module.split(".")[0])
            stack.extend(ast.iter_child_nodes(item))
    return names


def test_no_runtime_module_imports_the_build_tool_at_module_level():
    offenders = {path.relative_to(ROOT).as_posix(): sorted(module_level_imports(path) & set(BUILD_ONLY))
                 for path in (ROOT / "omnivoice_demo").rglob("*.py")}
    assert {k: v for k, v in offenders.items() if v} == {}


def test_every_runtime_module_imports_without_the_build_tools():
    code = (
        "import importlib, json, pkgutil, omnivoice_demo\n"
        "names = [m.name for m in pkgutil.walk_packages(omnivoice_demo.__path__, 'omnivoice_demo.')]\n"
        "for name in names:\n"
        "    importlib.import_module(name)\n"
        "print(json.dumps(names))\n"
    )
    done = run_without_build_tools(code, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    names = json.loads(done.stdout.strip().splitlines()[-1])
    assert {"omnivoice_demo.engine", "omnivoice_demo.hub.build", "omnivoice_demo.hub.resolve",
            "omnivoice_demo.__main__"} <= set(names)


def test_convert_command_without_its_extra_says_what_to_install(tmp_path):
    for module in ("convert", "convert.random_checkpoint"):
        code = (f"import runpy\nsys.modules.pop({module.split('.')[0]!r})\nsys.argv[0] = {module!r}\n"
                f"runpy.run_module({module!r}, run_name='__main__', alter_sys=True)\n")
        done = run_without_build_tools(code, "--model", str(tmp_path), "--output", str(tmp_path / "out"))
        assert done.returncode == 2, done.stderr[-3000:]
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: ") and "torch" in lines[0], done.stderr
        assert INSTALL_LINE in lines[0] and "requirements-dev.txt" in lines[0]
        assert not (tmp_path / "out").exists()


def test_build_route_without_its_extra_says_what_to_install(tmp_path):
    code = (
        "from omnivoice_demo.errors import ModelNotAvailable\n"
        "from omnivoice_demo.hub import resolve_model\n"
        "try:\n"
        "    resolve_model('k2-fsa/OmniVoice', build=True, cache_dir=sys.argv[1])\n"
        "except ModelNotAvailable as exc:\n"
        "    print(exc)\n"
    )
    done = run_without_build_tools(code, str(tmp_path))
    assert done.returncode == 0, done.stderr[-3000:]
    [line] = done.stdout.strip().splitlines()
    assert "torch" in line and INSTALL_LINE in line and "leave out --build" in line


def test_command_line_build_without_its_extra_is_one_error_line(tmp_path):
    code = ("import runpy\nsys.argv[0] = 'omnivoice'\n"
            "runpy.run_module('omnivoice_demo', run_name='__main__', alter_sys=True)\n")
    done = run_without_build_tools(code, "synth", "--build", "--text", "Hello", "--model-cache", str(tmp_path))
    assert done.returncode == 2, done.stderr[-3000:]
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("error: ") and INSTALL_LINE in line and "leave out --build" in line
