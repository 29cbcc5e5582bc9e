"""The app's static files (CSS, the chunk player's and the read-along view's scripts, examples), from the checkout or the installed package.

In a checkout they are in ``assets/`` at the top; ``pip install`` puts the same
folder into the package ``omnivoice_demo.assets`` (see pyproject.toml).
"""

from __future__ import annotations

import functools
import importlib.resources
import json
import pathlib
from typing import Optional

_CHECKOUT = pathlib.Path(__file__).resolve().parents[2] / "assets"


@functools.lru_cache(maxsize=None)
def read_asset(name: str) -> Optional[str]:
    """The text of ``assets/<name>``: the checkout's copy first, then the installed package's; None if neither."""
    path = _CHECKOUT / name
    if path.is_file():
        return path.read_text(encoding="utf-8")
    try:
        resource = importlib.resources.files("omnivoice_demo.assets").joinpath(name)
        return resource.read_text(encoding="utf-8") if resource.is_file() else None
    except ModuleNotFoundError:  # a checkout without the assets folder and no installed copy
        return None


def css() -> str:
    return read_asset("studio.css") or ""


def chunk_player_js() -> str:
    return read_asset("chunk_player.js") or ""


def read_along_js() -> str:
    return read_asset("read_along.js") or ""


def examples(tab: str = "speak") -> list[list[str]]:
    """The example rows of a tab from ``examples.json`` ([] when there are none or the file is broken)."""
    try:
        return json.loads(read_asset("examples.json") or "{}").get(tab, [])
    except json.JSONDecodeError:
        return []
