"""Saved voice files: written whole or not at all, swept aside at start-up when unreadable, refused when
they cannot be read, capped per owner, and the HTTP API's own out of a Gradio session's reach.

A save that fails midway (a full disk, a kill) leaves the old file; a read-only folder is a clear error;
the start-up sweep moves unreadable voices to ``quarantine/`` and removes unfinished ``.part`` files; an
``.npz`` that zipfile cannot open, or a path that is no regular file, is ``InvalidInput``.
"""

from __future__ import annotations

import pathlib

import numpy as np
import pytest

from omnivoice_demo.errors import InvalidInput, ResourceLimitExceeded
from omnivoice_demo.storage.voice_file import Voice
from tests.test_vocabulary import a_voice


# --- written whole or not at all; unreadable ones are swept aside at start-up -----------------------------

def _fail_midway(error):
    """An ``np.savez`` that writes some bytes and then fails (a kill or a full disk in the middle)."""
    def savez(handle, **arrays):
        handle.write(b"PK\x03\x04 half a voice")
        raise error
    return savez


@pytest.mark.parametrize("error", [OSError(28, "No space left on device"), KeyboardInterrupt()])
def test_a_voice_save_that_fails_midway_leaves_the_old_file(tmp_path, monkeypatch, error):
    from omnivoice_demo.studio import VoiceLibrary

    library = VoiceLibrary(tmp_path / "voices")
    library.save(a_voice(transcript="The first one."), "Anna")
    before = library.path("Anna").read_bytes()
    monkeypatch.setattr(np, "savez", _fail_midway(error))
    expected = (InvalidInput, "full") if isinstance(error, OSError) else (KeyboardInterrupt, None)
    with pytest.raises(expected[0], match=expected[1]):
        library.save(a_voice(transcript="The second one."), "Anna", overwrite=True)
    with pytest.raises(expected[0]):
        a_voice().save(tmp_path / "voices" / "Carl.npz")
    monkeypatch.undo()
    assert library.path("Anna").read_bytes() == before
    assert library.names() == ["Anna"] and sorted(p.name for p in (tmp_path / "voices").iterdir()) == ["Anna.npz"]


def test_a_read_only_voice_folder_is_a_clear_error(tmp_path, monkeypatch):
    """(Tests run as root here, where chmod cannot make a folder read-only: the system's answer is planted.)"""
    import errno

    from omnivoice_demo.storage import atomic
    from omnivoice_demo.studio import VoiceLibrary

    def read_only(*args, **kwargs):
        raise OSError(errno.EROFS, "Read-only file system")
    monkeypatch.setattr(atomic.tempfile, "mkstemp", read_only)
    with pytest.raises(InvalidInput, match="read-only") as caught:
        VoiceLibrary(tmp_path / "voices").save(a_voice(), "Bob")
    assert str(tmp_path) not in str(caught.value)


def test_the_start_up_sweep_quarantines_unreadable_voices(tmp_path):
    from omnivoice_demo.studio import VoiceLibrary

    library = VoiceLibrary(tmp_path / "voices", private=True)
    library.save(a_voice(), "Good", session="api")
    folder = library.folder("api")
    (folder / "Empty.npz").write_bytes(b"")                       # kill -9 during a write in place
    (folder / "Cut.npz").write_bytes(library.path("Good", "api").read_bytes()[:4096][:200])  # a full disk
    (folder / ".Good-abc123.part").write_bytes(b"unfinished")
    assert set(library.names("api")) == {"Good", "Empty", "Cut"}
    moved = library.sweep()
    assert sorted(p.name.split(".npz")[0] for p in moved) == ["Cut", "Empty"]
    assert library.names("api") == ["Good"] and not list(folder.glob("*.part"))
    assert all(p.is_relative_to(tmp_path / "voices" / "quarantine") for p in moved)
    library.save(a_voice(), "Empty", session="api", overwrite=False)  # the name is free again
    assert library.load("Empty", "api").transcript == "Hello there."


# --- voices per owner: capped, and the HTTP API's out of a Gradio session's reach -------------------------

def test_voices_per_owner_are_capped(tmp_path):
    from omnivoice_demo.studio import VoiceLibrary

    library = VoiceLibrary(tmp_path / "voices", private=True, max_voices=3)
    for name in ("A", "B", "C"):
        library.save(a_voice(), name, session="api")
    with pytest.raises(ResourceLimitExceeded, match="3 saved voices") as caught:
        library.save(a_voice(), "D", session="api")
    assert caught.value.param == "max_voices"
    library.save(a_voice(transcript="Replaced."), "C", session="api", overwrite=True)  # replacing one is no new voice
    library.save(a_voice(), "D", session="other")                        # another owner has room
    library.delete("A", session="api")
    library.save(a_voice(), "D", session="api")


def test_a_gradio_session_named_api_does_not_list_the_http_apis_voices(tmp_path):
    import types

    from omnivoice_demo.api.routes import API_VOICE_SESSION
    from omnivoice_demo.studio import VoiceLibrary, session_of

    library = VoiceLibrary(tmp_path / "voices", private=True)
    library.save(a_voice(), "Made with the key", session=API_VOICE_SESSION)
    visitor = session_of(types.SimpleNamespace(session_hash=API_VOICE_SESSION))
    assert library.names(visitor) == [] and library.names(API_VOICE_SESSION) == ["Made with the key"]
    assert session_of(None) is None


# --- a voice file that cannot be read is invalid input ----------------------------------------------------

def _patched_npz(tmp_path, change) -> pathlib.Path:
    """A good voice file with ``change(bytearray, offset_of_local_header, offset_of_central_entry)`` applied."""
    path = a_voice().save(tmp_path / "patched.npz")
    data = bytearray(path.read_bytes())
    local, central = data.find(b"PK\x03\x04"), data.find(b"PK\x01\x02")
    change(data, local, central)
    path.write_bytes(bytes(data))
    return path


def _encrypted(data, local, central):
    data[local + 6] |= 1      # general purpose flag: bit 0, encrypted
    data[central + 8] |= 1


def _method_99(data, local, central):
    data[local + 8:local + 10] = (99).to_bytes(2, "little")     # compression method 99 (AES)
    data[central + 10:central + 12] = (99).to_bytes(2, "little")


@pytest.mark.parametrize("change", [_encrypted, _method_99], ids=["encrypted", "compression-99"])
def test_an_npz_that_zipfile_cannot_open_is_invalid_input(tmp_path, change):
    with pytest.raises(InvalidInput, match="cannot be read"):
        Voice.load(_patched_npz(tmp_path, change))


@pytest.mark.parametrize("voice", ["/proc/self/mem", "/dev/zero"])
def test_a_voice_path_that_is_no_file_is_invalid_input(voice):
    with pytest.raises(InvalidInput, match="not a regular file|cannot be read|does not exist"):
        Voice.load(voice)


# --- every file we keep: one mode -----------------------------------------------------------------------------

def test_every_kept_file_gets_the_usual_mode_whatever_mkstemp_made(tmp_path):
    """The temporary file of ``storage.atomic`` (0600 from ``mkstemp``) becomes 0644 before its rename, for a file
    written through a handle and one written by name (batch audio, a voice)."""
    import stat

    from omnivoice_demo.storage.atomic import FILE_MODE, replacing_path, write_atomically

    assert FILE_MODE == 0o644
    written = write_atomically(tmp_path / "a.bin", b"abc")
    with replacing_path(tmp_path / "b.wav") as temporary:
        assert stat.S_IMODE(temporary.stat().st_mode) == 0o644
        temporary.write_bytes(b"xyz")
    for path in (written, tmp_path / "b.wav"):
        assert stat.S_IMODE(path.stat().st_mode) == 0o644, path
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.bin", "b.wav"]
