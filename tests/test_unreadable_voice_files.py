"""A voice file that cannot be read never stops the app, a listing or an export: its meta is read bounded in
depth and size, a lone surrogate in it is refused, the start-up sweep moves aside whatever fails, and an
export writes both of its files or neither.  Through the engine's loader, the library, the app's start-up,
the Clone tab's panel and the command line."""

from __future__ import annotations

import errno
import json
import subprocess
import sys

import numpy as np
import pytest

from omnivoice_demo.storage.voice_file import MAX_META_CHARS, Voice
from omnivoice_demo.errors import InvalidInput
from omnivoice_demo.studio import ModelManager, Studio, VoiceLibrary
from omnivoice_demo.studio import voices as voices_module
from omnivoice_demo.ui.tabs import saved_voices
from tests.test_vocabulary import a_voice

DEEP = "[" * 30000 + "]" * 30000          # within MAX_META_CHARS; the JSON parser's recursion gives out first
LONE = json.dumps({"format_version": 1, "transcript": "Hi \ud800 there.", "rms": 0.1, "name": "Lone"})


def voice_file(path, meta: str, frames: int = 10):
    """A voice file as ``Voice.save`` writes one, with ``meta`` as given (what an older version or a stranger
    could have written)."""
    assert len(meta) <= MAX_META_CHARS
    codes = np.arange(8 * frames, dtype=np.int64).reshape(8, frames) % 1024
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as handle:
        np.savez(handle, codes=codes, meta=np.array(meta))
    return path


@pytest.mark.parametrize("meta, words", [(DEEP, "nests 30000 deep"), ('{"a": ' * 5 + "1" + "}" * 5, "nests 5 deep"),
                                         (LONE, "lone surrogate")])
def test_unreadable_meta_is_a_clear_invalid_input(tmp_path, meta, words):
    with pytest.raises(InvalidInput, match=words):
        Voice.load(voice_file(tmp_path / "bad.npz", meta))


def test_brackets_inside_the_transcript_are_no_nesting(tmp_path):
    meta = json.dumps({"format_version": 1, "transcript": "[[[[[[{{{{ \\\" ]]", "rms": 0.1})
    assert Voice.load(voice_file(tmp_path / "ok.npz", meta)).transcript == "[[[[[[{{{{ \\\" ]]"


def test_the_sweep_moves_aside_whatever_cannot_be_read(tmp_path, monkeypatch):
    library = VoiceLibrary(tmp_path / "voices")
    library.save(a_voice(), "Good")
    voice_file(tmp_path / "voices" / "Deep.npz", DEEP)
    voice_file(tmp_path / "voices" / "Lone.npz", LONE)
    library.save(a_voice(), "Odd")
    real_load = Voice.load

    def load(path, *args, **kwargs):  # a failure no one foresaw: still moved aside, not raised
        if str(path).endswith("Odd.npz"):
            raise RuntimeError("unforeseen")
        return real_load(path, *args, **kwargs)
    monkeypatch.setattr(voices_module.Voice, "load", load)
    moved = library.sweep()
    assert sorted(p.name.split(".npz")[0] for p in moved) == ["Deep", "Lone", "Odd"]
    assert library.names() == ["Good"]


def test_the_app_starts_with_an_unreadable_voice_in_its_folder(tmp_path, monkeypatch):
    from omnivoice_demo import app

    monkeypatch.setenv("OMNIVOICE_DATA", str(tmp_path))
    voice_file(tmp_path / "voices" / "Deep.npz", DEEP)
    voice_file(tmp_path / "voices" / "Lone.npz", LONE)
    a_voice().save(tmp_path / "voices" / "Good.npz")
    studio = app.make_studio(app.parse_args(["--offline"]))
    assert studio.voices.names() == ["Good"]
    assert len(list((tmp_path / "voices" / "quarantine").iterdir())) == 2


def test_import_refuses_a_lone_surrogate_and_export_writes_both_files_or_neither(tmp_path, monkeypatch):
    library = VoiceLibrary(tmp_path / "voices")
    with pytest.raises(InvalidInput, match="lone surrogate"):
        library.import_file(voice_file(tmp_path / "lone.npz", LONE))
    assert library.names() == []
    library.save(a_voice(), "Good")
    out = tmp_path / "out"
    out.mkdir()

    def full(*args, **kwargs):
        raise InvalidInput("The voice's description could not be saved: its folder on the server is full (ENOSPC).")
    monkeypatch.setattr(voices_module, "write_atomically", full)
    with pytest.raises(InvalidInput, match="full"):
        library.export("Good", out)
    assert list(out.iterdir()) == []  # no .npz without its .json
    monkeypatch.undo()
    assert sorted(p.name for p in library.export("Good", out)) == ["Good.json", "Good.npz"]


def test_the_panel_lists_and_exports_beside_a_bad_voice(tmp_path):
    local = Studio(models=ModelManager(), voices=VoiceLibrary(tmp_path / "voices"), out_dir=tmp_path / "out")
    local.voices.save(a_voice(), "Good")
    voice_file(tmp_path / "voices" / "Lone.npz", LONE)
    bad = saved_voices.kept_on_error(saved_voices.manage_voice, local, "export", "Lone")
    assert bad["message"].startswith("**Not done:**") and "lone surrogate" in bad["message"]
    assert not (tmp_path / "out").exists() or list((tmp_path / "out").iterdir()) == []
    good = saved_voices.manage_voice(local, "export", "Good")
    assert len(good["files"]) == 2 and "Lone" in good["voices"]


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "omnivoice_demo", *args], capture_output=True, text=True, timeout=300)


def test_cli_import_and_synth_refuse_deep_meta_in_one_line(tmp_path, tiny_fp32_folder):
    deep = voice_file(tmp_path / "deep.npz", DEEP)
    imported = run_cli("voices", "--folder", str(tmp_path / "voices"), "import", str(deep))
    assert imported.returncode == 2 and "nests 30000 deep" in imported.stderr, imported.stderr
    assert "internal error" not in imported.stderr and not list((tmp_path / "voices").glob("*.npz"))
    spoken = run_cli("synth", "--model", str(tiny_fp32_folder), "--precision", "fp32", "--voice", str(deep),
                     "--text", "Hello.", "--num-step", "1", "--output", str(tmp_path / "x.wav"))
    assert spoken.returncode == 2 and "nests 30000 deep" in spoken.stderr, spoken.stderr
    assert len(spoken.stderr.strip().splitlines()) == 1 and not (tmp_path / "x.wav").exists()


def test_cli_lists_and_exports_beside_a_bad_voice(tmp_path):
    folder = tmp_path / "voices"
    a_voice(transcript="Good speaking.").save(folder / "Good.npz")
    voice_file(folder / "Lone.npz", LONE)  # as a version that accepted it left it
    imported = run_cli("voices", "--folder", str(folder), "import", str(voice_file(tmp_path / "x.npz", LONE)),
                       "--name", "Other")
    assert imported.returncode == 2 and "lone surrogate" in imported.stderr, imported.stderr
    listed = run_cli("voices", "--folder", str(folder), "list")
    assert listed.returncode == 0 and "Good speaking." in listed.stdout, listed.stderr
    assert "Lone\t(unreadable:" in listed.stdout
    out = tmp_path / "out"
    out.mkdir()
    exported = run_cli("voices", "--folder", str(folder), "export", "Lone", str(out))
    assert exported.returncode == 2 and "internal error" not in exported.stderr and list(out.iterdir()) == []
    good = run_cli("voices", "--folder", str(folder), "export", "Good", str(out))
    assert good.returncode == 0 and sorted(p.name for p in out.iterdir()) == ["Good.json", "Good.npz"]


def test_a_storage_error_in_export_is_named(tmp_path, monkeypatch):
    from omnivoice_demo.storage import atomic

    library = VoiceLibrary(tmp_path / "voices")
    library.save(a_voice(), "Good")
    (tmp_path / "out").mkdir()
    real = atomic.os.fsync
    calls = []

    def fsync(descriptor):  # the .npz goes through; the disk is full when the .json is written
        calls.append(descriptor)
        if len(calls) > 1:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(descriptor)
    monkeypatch.setattr(atomic.os, "fsync", fsync)
    with pytest.raises(InvalidInput, match="is full"):
        library.export("Good", tmp_path / "out")
    assert list((tmp_path / "out").iterdir()) == []
