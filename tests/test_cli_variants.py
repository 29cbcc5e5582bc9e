"""``omnivoice voices variant add|list|delete`` and ``synth --instruct`` picking a style variant, through the real
command line (a subprocess, the app's voice folder under ``$OMNIVOICE_DATA``): variants are added from a voice
file, listed, carried by export and import, chosen by a word of ``--instruct`` (the same audio as
``--voice "Anna (cheerful)"``, not the main clip's), and mistakes are one ``error:`` line with status 2."""

from __future__ import annotations

import json

import numpy as np
import soundfile as sf

from omnivoice_demo.storage.voice_file import Voice
from omnivoice_demo.studio import VoiceLibrary
from tests.test_cli import run_cli_env
from tests.test_vocabulary import a_voice


def styled_clip(path, frames: int = 15, transcript: str = "Such a happy day.") -> str:
    codes = (np.arange(8 * frames, dtype=np.int64).reshape(8, frames) * 7 + 3) % 1024
    Voice(codes=codes, transcript=transcript, rms=0.2).save(path)
    return str(path)


def failed(done, *words) -> bool:
    lines = done.stderr.strip().splitlines()
    return (done.returncode == 2 and len(lines) == 1 and lines[0].startswith("error: ")
            and all(word in lines[0] for word in words))


def test_variants_are_added_listed_exported_imported_and_deleted(tmp_path):
    data = tmp_path / "data"
    VoiceLibrary(data / "voices").save(a_voice(20, "What Anna says."), "Anna")
    cheer = styled_clip(tmp_path / "cheer.npz")
    added = run_cli_env("voices", "variant", "add", "anna", "cheerful", cheer, data=data)
    assert added.returncode == 0, added.stderr
    assert "--voice 'Anna (cheerful)'" in added.stdout
    listed = run_cli_env("voices", "variant", "list", "Anna", data=data).stdout.splitlines()
    assert listed == ["cheerful\t0.6 s\tSuch a happy day."]
    assert run_cli_env("voices", "list", data=data).stdout.strip().endswith("\tstyles: cheerful")
    out = tmp_path / "out"
    assert run_cli_env("voices", "export", "Anna", str(out), data=data).returncode == 0
    assert [v["tag"] for v in json.loads((out / "Anna.json").read_text())["variants"]] == ["cheerful"]
    assert run_cli_env("voices", "import", str(out / "Anna.npz"), "--name", "Anne", data=data).returncode == 0
    assert run_cli_env("voices", "variant", "list", "Anne", data=data).stdout.startswith("cheerful\t")
    assert run_cli_env("voices", "variant", "delete", "Anne", "CHEERFUL", data=data).returncode == 0
    assert "has no style variants" in run_cli_env("voices", "variant", "list", "Anne", data=data).stdout
    assert VoiceLibrary(data / "voices").tags("Anna") == ["cheerful"]   # the other voice kept its own


def test_variant_mistakes_are_one_error_line(tmp_path):
    data = tmp_path / "data"
    VoiceLibrary(data / "voices").save(a_voice(20), "Anna")
    cheer = styled_clip(tmp_path / "cheer.npz")
    clip = tmp_path / "clip.wav"
    sf.write(clip, np.zeros(24000, dtype=np.float32), 24000)
    assert run_cli_env("voices", "variant", "add", "Anna", "cheerful", cheer, data=data).returncode == 0
    cases = [
        (("Nobody", "sad", cheer), ("no saved voice named 'Nobody'",)),
        (("Anna", "two words", cheer), ("is not one word",)),
        (("Anna", "Cheerful", cheer), ("has a style 'cheerful' already",)),
        (("Anna", "sad", cheer, "--max-voice-variants", "1"), ("max_voice_variants",)),
        (("Anna", "sad", str(clip)), ("--consent",)),                 # a clip to clone needs consent (no model)
        (("Anna", "sad", str(tmp_path / "missing.npz")), ("missing.npz",)),
    ]
    for arguments, words in cases:
        done = run_cli_env("voices", "variant", "add", *arguments, data=data)
        assert failed(done, *words), (arguments, done.stderr)
    assert failed(run_cli_env("voices", "variant", "delete", "Anna", "sad", data=data), "no style 'sad'")
    assert VoiceLibrary(data / "voices").tags("Anna") == ["cheerful"]


def test_synth_speaks_with_the_variant_an_instruct_word_names(tiny_fp32_folder, tmp_path):
    data = tmp_path / "data"
    VoiceLibrary(data / "voices").save(a_voice(20, "What Anna says."), "Anna")
    assert run_cli_env("voices", "variant", "add", "Anna", "cheerful", styled_clip(tmp_path / "c.npz"),
                       data=data).returncode == 0

    def synth(name: str, *extra):
        out = tmp_path / f"{name}.wav"
        done = run_cli_env("synth", "--model", str(tiny_fp32_folder), "--text", "Hello in a style.", "--steps", "2",
                           "--seed", "3", "--output", str(out), *extra, data=data)
        assert done.returncode == 0, done.stderr
        return sf.read(out)[0], done.stderr

    by_word, said = synth("word", "--voice", "Anna", "--instruct", "cheerful")
    by_name, _ = synth("name", "--voice", "Anna (cheerful)")
    main, _ = synth("main", "--voice", "Anna")
    assert np.array_equal(by_word, by_name) and not np.array_equal(by_word, main)
    assert "spoke with the voice's 'cheerful' clip" in said
    _, unmatched = synth("angry", "--voice", "Anna", "--instruct", "angry")
    assert "'angry'" in unmatched and "has the styles cheerful" in unmatched
