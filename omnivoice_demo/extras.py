"""What the build route needs beyond the runtime (the convert extra), and the one line that says how to install it.

Its own module, importing nothing of the package, so that both the runtime's build
route (``hub.build``) and ``convert``'s command lines import it without a circle
(``convert`` imports ``omnivoice_demo``; the runtime imports ``convert`` only inside
the build route).
"""

from __future__ import annotations

import importlib.util

#: import name -> pip name of what ``convert`` needs beyond the runtime
BUILD_MODULES = {"torch": "torch", "omnivoice": "omnivoice", "onnxruntime_genai": "onnxruntime-genai",
                 "olive": "olive-ai"}
#: how to install them: the package's extra, in an environment of its own (torch; the app's .venv stays without),
#: or the checkout's development environment
INSTALL_HINT = ("pip install 'omnivoice-onnx-studio[convert]' in an environment of its own, since it brings torch "
                "(in a checkout: bash scripts/setup_dev.sh makes .venv-dev with it; run .venv-dev/bin/python app.py)")


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
