"""What the build route needs beyond the runtime (the convert extra), and the one line that says how to install it;
``extra_install_hint``: the command that installs any of the package's extras where it runs (issue 58: the store
extra's hint named the package on an index, which does not work in a checkout).

Its own module, importing nothing of the package, so that both the runtime's build
route (``hub.build``) and ``convert``'s command lines import it without a circle
(``convert`` imports ``omnivoice_demo``; the runtime imports ``convert`` only inside
the build route).
"""

from __future__ import annotations

import importlib.util
import pathlib
import sys

#: import name -> pip name of what ``convert`` needs beyond the runtime
BUILD_MODULES = {"torch": "torch", "omnivoice": "omnivoice", "onnxruntime_genai": "onnxruntime-genai",
                 "olive": "olive-ai"}
#: how to install them: the package's extra, in an environment of its own (torch; the app's .venv stays without),
#: or the checkout's development environment
INSTALL_HINT = ("pip install 'omnivoice-onnx-studio[convert]' in an environment of its own, since it brings torch "
                "(in a checkout: bash scripts/setup_dev.sh makes .venv-dev with it; run .venv-dev/bin/python app.py)")


#: the package's name, as ``pip install 'NAME[extra]'`` installs it from an index
PACKAGE = "omnivoice-onnx-studio"
#: the checkout this package runs from, when it runs from one (an editable install, or run in its folder)
CHECKOUT = pathlib.Path(__file__).resolve().parent.parent


def running_from_checkout(root: pathlib.Path = CHECKOUT) -> bool:
    """Whether ``root`` is this project's checkout (its ``pyproject.toml`` names the package)."""
    try:
        return f'name = "{PACKAGE}"' in (root / "pyproject.toml").read_text(encoding="utf-8")
    except OSError:
        return False


def extra_install_hint(extra: str, root: pathlib.Path = CHECKOUT, prefix: str = sys.prefix) -> str:
    """The command that installs the extra ``extra`` where the program runs: in a checkout, the checkout itself
    with the extra (``pip install -e '.[store]'`` in its folder, with the pip of the running environment where that
    is one of the checkout's: ``.venv/bin/pip``); else the package by name from an index."""
    if not running_from_checkout(root):
        return f"pip install '{PACKAGE}[{extra}]'"
    environment = pathlib.Path(prefix)
    pip = f"{environment.name}/bin/pip" if environment.parent == root else "pip"
    return f"{pip} install -e '.[{extra}]' (in the checkout's folder)"


def missing_build_modules(modules: dict[str, str] | None = None) -> list[str]:
    """pip names of the convert extra's packages that are not importable."""
    modules = BUILD_MODULES if modules is None else modules
    return [pip for module, pip in modules.items() if importlib.util.find_spec(module) is None]


def extras_message(missing: list[str], purpose: str, instead: str = "") -> str:
    """One line: what ``purpose`` needs, and the command that installs it."""
    verb = "is" if len(missing) == 1 else "are"
    return (f"{purpose} needs {', '.join(missing)} (the convert extra), which {verb} not installed: "
            f"{INSTALL_HINT}{'; or ' + instead if instead else ''}.")


def missing_extras_error(command: str, modules: dict[str, str] | None = None) -> str | None:
    """The ``error: ...`` line for a command line of ``convert`` whose extra is missing, else None."""
    missing = missing_build_modules(modules)
    return f"error: {extras_message(missing, command)}" if missing else None
