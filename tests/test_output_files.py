"""Output files are written whole or not at all: a full or unwritable outputs folder is a clear message (not an
internal error) and leaves no partial file.  Through the Gradio API's /speak handler, the Speak tab, the codec
tab and the output folder itself."""

from __future__ import annotations

import asyncio
import errno

import gradio as gr
import pytest

from omnivoice_demo.errors import InvalidInput
from omnivoice_demo.storage import atomic
from omnivoice_demo.storage.codes_file import save_codes
from omnivoice_demo.storage.outputs import OutputFolder
from omnivoice_demo.ui.gradio_api import run_job
from omnivoice_demo.ui.tabs import speak as speak_tab
from tests.test_app_handlers import FAST, studio  # noqa: F401 (studio: the fixture, a loaded tiny model)


def full_disk(monkeypatch) -> None:
    """Every write fills the disk when it is flushed (as a write of a few MB on a full disk fails)."""
    def fsync(descriptor):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(atomic.os, "fsync", fsync)


def unwritable(monkeypatch) -> None:
    """No file can be made in the folder (a folder of another user, or one made immutable)."""
    def mkstemp(*args, **kwargs):
        raise PermissionError(errno.EACCES, "Permission denied")
    monkeypatch.setattr(atomic.tempfile, "mkstemp", mkstemp)


def files_in(studio) -> list[str]:
    return sorted(p.name for p in studio.out_dir.glob("*")) if studio.out_dir.exists() else []


@pytest.mark.parametrize("fault, words", [(full_disk, "is full"), (unwritable, "is not writable")])
def test_the_gradio_speak_handler_names_a_storage_fault_and_leaves_no_file(studio, monkeypatch, fault, words):
    before = files_in(studio)
    fault(monkeypatch)
    with pytest.raises(InvalidInput, match=words) as caught:
        asyncio.run(run_job(studio, "Hello there.", dict(FAST), None, "speak"))
    assert "audio file could not be saved" in str(caught.value) and str(studio.out_dir) not in str(caught.value)
    assert files_in(studio) == before  # no 0-byte .wav, no temporary file
    monkeypatch.undo()
    path, seed, _ = asyncio.run(run_job(studio, "Hello there.", dict(FAST), None, "speak"))
    assert seed == 11 and files_in(studio) == sorted(before + [path.rsplit("/", 1)[-1]])


def test_the_speak_tab_shows_a_full_disk_as_a_message(studio, monkeypatch):
    before = files_in(studio)
    full_disk(monkeypatch)
    with pytest.raises(gr.Error, match="audio file could not be saved: its folder on the server is full"):
        list(speak_tab.speak(studio, "Hello there.", dict(FAST), []))
    assert files_in(studio) == before


def test_a_folder_that_cannot_be_made_is_named(tmp_path, monkeypatch):
    import pathlib

    def mkdir(self, *args, **kwargs):
        raise PermissionError(errno.EACCES, "Permission denied")
    monkeypatch.setattr(pathlib.Path, "mkdir", mkdir)
    with pytest.raises(InvalidInput, match="output could not be saved: its folder on the server is not writable"):
        OutputFolder(tmp_path / "outputs").path("x", ".wav")


def test_a_codes_file_on_a_full_disk_leaves_nothing(tmp_path, monkeypatch):
    import numpy as np

    full_disk(monkeypatch)
    with pytest.raises(InvalidInput, match="codes file could not be saved"):
        save_codes(tmp_path / "x.codes.npz", np.zeros((8, 4), dtype=np.int64))
    assert list(tmp_path.iterdir()) == []
