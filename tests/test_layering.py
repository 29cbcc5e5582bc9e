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
    assert {"omnivoice_demo.engine.loop", "omnivoice_demo.hub.build", "omnivoice_demo.hub.resolve",
            "omnivoice_demo.cli.main"} <= set(names)


def test_convert_command_without_its_extra_says_what_to_install(tmp_path):
    for module in ("convert", "convert.random_checkpoint"):
        code = (f"import runpy\nsys.modules.pop({module.split('.')[0]!r})\nsys.argv[0] = {module!r}\n"
                f"runpy.run_module({module!r}, run_name='__main__', alter_sys=True)\n")
        done = run_without_build_tools(code, "--model", str(tmp_path), "--output", str(tmp_path / "out"))
        assert done.returncode == 2, done.stderr[-3000:]
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: ") and "torch" in lines[0], done.stderr
        assert INSTALL_LINE in lines[0] and "scripts/setup_dev.sh" in lines[0] and ".venv/bin/pip" not in lines[0]
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


# --- the front ends over one studio core ----------------------------------------------------------------------------

PACKAGES = ("omnivoice_demo", "convert")


def module_name(path: pathlib.Path, root: pathlib.Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(root: pathlib.Path = ROOT, packages=PACKAGES, module_level_only: bool = False) -> dict[str, set[str]]:
    """module -> the modules of ``packages`` it imports (relative imports resolved; ``from pkg import name``
    counts as ``pkg.name`` when that is a module).  ``module_level_only``: leave out imports inside functions."""
    files = {module_name(p, root): p for package in packages for p in (root / package).rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        is_package = path.name == "__init__.py"
        targets: set[str] = set()
        stack = list(ast.parse(path.read_text(encoding="utf-8")).body)
        while stack:
            node = stack.pop()
            if module_level_only and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                continue
            stack.extend(ast.iter_child_nodes(node))
            if isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = name.split(".") if is_package else name.split(".")[:-1]
                    base = base[:len(base) - node.level + 1]
                    module = ".".join(base + ([node.module] if node.module else []))
                else:
                    module = node.module
                for alias in node.names:
                    targets.add(f"{module}.{alias.name}" if f"{module}.{alias.name}" in files else module)
        graph[name] = {t for t in targets if t in files and t != name}
    return graph


def find_cycle(graph: dict[str, set[str]]):
    """One import circle of ``graph`` as a list of modules, or None."""
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(node):
        state[node] = 1
        path.append(node)
        for target in sorted(graph.get(node, ())):
            if state.get(target) == 1:
                return path[path.index(target):] + [target]
            if target not in state:
                found = visit(target)
                if found:
                    return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def imports_between(graph, importer: str, imported: str) -> list[str]:
    def inside(module, package):
        return module == package or module.startswith(package + ".")
    return sorted(f"{source} -> {target}" for source, targets in graph.items() if inside(source, importer)
                  for target in targets if inside(target, imported))


def test_the_import_walker_sees_a_circle_and_a_forbidden_import(tmp_path):
    """The checks below can fail: a planted circle (through a relative import inside a function) and a
    planted ui -> api import are found."""
    package = tmp_path / "pkg"
    for folder in (package, package / "ui", package / "api"):
        folder.mkdir()
        (folder / "__init__.py").write_text("")
    (package / "ui" / "page.py").write_text("def f():\n    from ..api import routes\n")
    (package / "api" / "routes.py").write_text("from ..ui.page import f\n")
    graph = import_graph(tmp_path, ("pkg",))
    assert imports_between(graph, "pkg.ui", "pkg.api") == ["pkg.ui.page -> pkg.api.routes"]
    assert find_cycle(graph) in (["pkg.api.routes", "pkg.ui.page", "pkg.api.routes"],
                                 ["pkg.ui.page", "pkg.api.routes", "pkg.ui.page"])
    assert find_cycle(import_graph(tmp_path, ("pkg",), module_level_only=True)) is None


def test_the_front_ends_never_import_each_other():
    """ui/ (the Gradio app and its API) and api/ (the HTTP API) use the studio core and never each other,
    not even inside a function; the core imports no front end."""
    graph = import_graph()
    assert imports_between(graph, "omnivoice_demo.ui", "omnivoice_demo.api") == []
    assert imports_between(graph, "omnivoice_demo.api", "omnivoice_demo.ui") == []
    for front_end in ("omnivoice_demo.ui", "omnivoice_demo.api", "omnivoice_demo.app", "omnivoice_demo.batch"):
        assert imports_between(graph, "omnivoice_demo.studio", front_end) == []
    # the state every front end shares lives in the core
    assert imports_between(graph, "omnivoice_demo.api", "omnivoice_demo.studio")
    assert imports_between(graph, "omnivoice_demo.ui", "omnivoice_demo.studio")


def test_no_import_circle():
    """No circle of imports among the modules, counting the imports inside functions too (the runtime
    imports ``convert`` only inside the build route; ``convert`` imports the extras line from
    ``omnivoice_demo.extras``, which imports nothing of the package)."""
    assert find_cycle(import_graph()) is None
    assert imports_between(import_graph(), "convert", "omnivoice_demo.hub") == []


# --- the floors: imports run only downward -------------------------------------------------------------------------

#: the package's floors, lowest first; each floor's folders (or root modules) side by side.  A module imports
#: modules of its own folder and of lower floors, never a higher floor nor another folder of its own floor.
FLOORS = [
    ("foundation", ["omnivoice_demo.errors", "omnivoice_demo.constants", "omnivoice_demo.extras"]),
    ("settings", ["omnivoice_demo.settings"]),
    ("files", ["omnivoice_demo.storage"]),
    ("process", ["omnivoice_demo.runtime"]),
    ("audio", ["omnivoice_demo.audio"]),
    ("backbone graphs", ["omnivoice_demo.backbones"]),
    ("model folders", ["omnivoice_demo.hub"]),
    ("recogniser", ["omnivoice_demo.asr"]),
    ("text", ["omnivoice_demo.text"]),
    ("engine", ["omnivoice_demo.engine"]),
    ("studio core", ["omnivoice_demo.studio"]),
    ("batch", ["omnivoice_demo.batch"]),
    ("book", ["omnivoice_demo.book"]),
    ("evaluation", ["omnivoice_demo.eval"]),
    ("front ends", ["omnivoice_demo.ui", "omnivoice_demo.api", "omnivoice_demo.wyoming"]),
    ("programs", ["omnivoice_demo.app", "omnivoice_demo.cli"]),
    ("entry points", ["omnivoice_demo", "omnivoice_demo.__main__"]),
    ("build tool", ["convert"]),
]
#: the one import that runs up: building a folder from a checkpoint (``hub.build``, inside a function, only
#: with the convert extra) runs the build tool's pipeline
UPWARD_EXCEPTIONS = {("omnivoice_demo.hub.build", "convert.pipeline")}


def unit_of(module: str, floors=FLOORS) -> tuple[int, str]:
    """(floor index, folder or root module) of ``module``: the longest listed name it lies in."""
    best = None
    for index, (_, units) in enumerate(floors):
        for unit in units:
            if module == unit or module.startswith(unit + ".") and unit != "omnivoice_demo":
                if best is None or len(unit) > len(best[1]):
                    best = (index, unit)
    if best is None:
        raise AssertionError(f"{module} lies on no floor of FLOORS: put it in a folder that does, or add one")
    return best


def wrong_way_imports(graph, floors=FLOORS, exceptions=UPWARD_EXCEPTIONS) -> list[str]:
    """Each import that goes to a higher floor or to another folder of the same floor, as 'a -> b (why)'."""
    found = []
    for source, targets in sorted(graph.items()):
        floor, unit = unit_of(source, floors)
        for target in sorted(targets):
            to_floor, to_unit = unit_of(target, floors)
            if (source, target) in exceptions or to_unit == unit:
                continue
            if to_floor > floor:
                found.append(f"{source} -> {target} (up from {floors[floor][0]} to {floors[to_floor][0]})")
            elif to_floor == floor:
                found.append(f"{source} -> {target} (sideways within {floors[floor][0]})")
    return found


def folder_graph(graph, floors=FLOORS, exceptions=UPWARD_EXCEPTIONS) -> dict[str, set[str]]:
    folders: dict[str, set[str]] = {}
    for source, targets in graph.items():
        unit = unit_of(source, floors)[1]
        folders.setdefault(unit, set()).update(unit_of(t, floors)[1] for t in targets if (source, t) not in exceptions)
        folders[unit].discard(unit)
    return folders


def test_every_module_lies_on_a_floor_and_imports_only_downward():
    """Counting imports inside functions too: no module imports a higher floor, nor a neighbour on its own
    floor (the front ends stand side by side over the studio core), except the one documented build import."""
    graph = import_graph()
    assert wrong_way_imports(graph) == []
    assert all((s, t) in {(a, b) for a, ts in graph.items() for b in ts} for s, t in UPWARD_EXCEPTIONS), \
        "an exception that no longer happens: remove it from UPWARD_EXCEPTIONS"


def test_no_folder_imports_a_folder_that_imports_it_back():
    assert find_cycle(folder_graph(import_graph())) is None


def test_the_package_root_holds_only_the_foundation_and_the_entry_points():
    loose = sorted(p.name for p in (ROOT / "omnivoice_demo").glob("*.py"))
    assert loose == ["__init__.py", "__main__.py", "app.py", "constants.py", "errors.py", "extras.py"]


def test_the_floor_check_sees_an_upward_a_sideways_and_a_circular_import(tmp_path):
    """The floor check can fail: a planted engine -> studio import (inside a function), a ui -> api import and
    a circle between two folders are each reported; an allowed exception is not."""
    package = tmp_path / "pkg"
    for folder in ("", "engine", "studio", "ui", "api", "audio"):
        (package / folder).mkdir(exist_ok=True)
        (package / folder / "__init__.py").write_text("")
    (package / "studio" / "core.py").write_text("from ..engine import loop\n")
    (package / "engine" / "loop.py").write_text("def f():\n    from ..studio import core\n")
    (package / "ui" / "page.py").write_text("from ..api import routes\nfrom ..studio import core\n")
    (package / "api" / "routes.py").write_text("from ..studio import core\n")
    (package / "audio" / "io.py").write_text("def g():\n    from ..studio import core\n")
    floors = [("audio", ["pkg.audio"]), ("engine", ["pkg.engine"]), ("studio", ["pkg.studio"]),
              ("front ends", ["pkg.ui", "pkg.api"]), ("root", ["pkg"])]
    graph = import_graph(tmp_path, ("pkg",))
    assert wrong_way_imports(graph, floors, {("pkg.audio.io", "pkg.studio.core")}) == [
        "pkg.engine.loop -> pkg.studio.core (up from engine to studio)",
        "pkg.ui.page -> pkg.api.routes (sideways within front ends)",
    ]
    assert find_cycle(folder_graph(graph, floors, set())) is not None
    (package / "engine" / "loop.py").write_text("")
    assert find_cycle(folder_graph(graph := import_graph(tmp_path, ("pkg",)), floors, set())) is None
    assert wrong_way_imports(graph, floors, set()) == [
        "pkg.audio.io -> pkg.studio.core (up from audio to studio)",
        "pkg.ui.page -> pkg.api.routes (sideways within front ends)",
    ]
