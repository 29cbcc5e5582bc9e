"""A studio over a model folder, as the app's handlers see it: what the tests' ``studio`` fixtures build."""

from __future__ import annotations

import pathlib

from omnivoice_demo.studio.models import ModelManager
from omnivoice_demo.studio.state import Studio
from omnivoice_demo.studio.voices import VoiceLibrary


def folder_studio(folder, root: pathlib.Path, **options) -> Studio:
    """A ``Studio`` with ``folder`` loaded at fp32, its cache, voices and outputs under ``root`` (offline; no
    pause between progress updates); ``options``: further ``Studio`` fields (``lexicon``, ...)."""
    manager = ModelManager(cache_dir=root / "cache", offline=True)
    manager.load(str(folder), "fp32")
    return Studio(models=manager, voices=VoiceLibrary(root / "voices"), out_dir=root / "out", min_update_interval=0.0,
                  **options)
