"""The command line's refusals: early (before a model is loaded) and naming the flag or the command to use.

Most run against a model folder that does not exist: a refusal that names the flag, not the missing model,
proves the input was checked before any model was looked for."""

from __future__ import annotations

import os
import stat
import subprocess
import sys

import soundfile

from tests.support.signals import speech_like


def cli(*args, tmp_path, **env):
    environment = dict(os.environ, OMNIVOICE_DATA=str(tmp_path / "data"), HF_HUB_OFFLINE="1", **env)
    return subprocess.run([sys.executable, "-m", "omnivoice_demo", *args], capture_output=True, text=True,
                          timeout=300, env=environment)


def one_error(done) -> str:
    assert done.returncode == 2, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    return lines[0]


def synth(tmp_path, *args):
    return cli("synth", "--model", str(tmp_path / "no-such-model"), "--output", str(tmp_path / "x.wav"), *args,
               tmp_path=tmp_path)


def test_synth_refuses_bad_inputs_before_the_model_naming_the_flag(tmp_path):
    line = one_error(synth(tmp_path, "--text", "Hello.", "--ref-audio", str(tmp_path / "missing.wav")))
    assert line.startswith("error: --ref-audio:") and "missing.wav" in line and "no-such-model" not in line
    line = one_error(synth(tmp_path, "--text", ""))
    assert line.startswith("error: --text:") and "empty" in line
    line = one_error(synth(tmp_path, "--text", "   "))
    assert line.startswith("error: --text:")
    line = one_error(synth(tmp_path, "--text", "Hello.", "--language", "klingon"))
    assert line.startswith("error: --language:") and "'omnivoice languages'" in line
    assert "language_choices" not in line


def test_synth_clones_from_a_reference_read_before_the_model(tiny_fp32_folder, tmp_path):
    ref = tmp_path / "ref.wav"
    soundfile.write(ref, speech_like(2.0, 16000, seed=5)[0], 16000)
    out = tmp_path / "clone.wav"
    done = cli("synth", "--model", str(tiny_fp32_folder), "--text", "A cloned voice.", "--ref-audio", str(ref),
               "--ref-text", "the reference words", "--steps", "2", "--output", str(out), tmp_path=tmp_path)
    assert done.returncode == 0, done.stderr
    audio, rate = soundfile.read(out)
    assert rate == 24000 and len(audio) > 0
    assert stat.S_IMODE(out.stat().st_mode) == 0o644  # as batch writes, readable by others


def test_voices_import_twice_names_the_name_flag_and_export_creates_the_folder(tmp_path):
    from tests.test_vocabulary import a_voice

    a_voice(transcript="What Anna says.").save(tmp_path / "anna.npz")
    assert cli("voices", "import", str(tmp_path / "anna.npz"), tmp_path=tmp_path).returncode == 0
    line = one_error(cli("voices", "import", str(tmp_path / "anna.npz"), tmp_path=tmp_path))
    assert "exists already" in line and "--name" in line
    assert cli("voices", "import", str(tmp_path / "anna.npz"), "--name", "Anna 2", tmp_path=tmp_path).returncode == 0
    target = tmp_path / "not" / "yet"
    done = cli("voices", "export", "Anna 2", str(target), tmp_path=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (target / "Anna 2.npz").is_file() and (target / "Anna 2.json").is_file()
    for written in (target / "Anna 2.npz", target / "Anna 2.json"):
        assert stat.S_IMODE(written.stat().st_mode) == 0o644


def test_eval_names_the_candidate_flag_and_the_recogniser_choices(tiny_fp32_folder, tmp_path):
    line = one_error(cli("eval", "--model", str(tmp_path / "no-such-model"), "--output", str(tmp_path / "out"),
                         "--candidate", "preset=turbo", tmp_path=tmp_path))
    assert line.startswith("error: --candidate 'preset=turbo':") and "turbo" in line and "fast" in line
    empty_cache = {"OMNIVOICE_CACHE": str(tmp_path / "cache"), "HF_HOME": str(tmp_path / "hf"),
                   "OMNIVOICE_ASR_MODEL": ""}
    line = one_error(cli("eval", "--model", str(tiny_fp32_folder), "--output", str(tmp_path / "out"), "--offline",
                         "--candidate", "preset=fast", tmp_path=tmp_path, **empty_cache))
    assert "--asr-model DIR" in line and "--asr-model none" in line
