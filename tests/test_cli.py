"""The command line: synth and codec on the tiny model folder."""

from __future__ import annotations

import subprocess
import sys

import soundfile

from tests.support.signals import speech_like


def run_cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "omnivoice_demo", *args], capture_output=True, text=True,
                          cwd=cwd, timeout=300)


def test_synth_writes_speech_with_progress(tiny_fp32_folder, tmp_path):
    out = tmp_path / "out.wav"
    done = run_cli("synth", "--model", str(tiny_fp32_folder), "--text", "Hello from the command line.",
                   "--steps", "4", "--seed", "7", "--output", str(out))
    assert done.returncode == 0, done.stderr
    audio, sr = soundfile.read(out)
    assert sr == 24000 and len(audio) > 2400
    assert "seed 7" in done.stdout
    assert "4/4" in done.stderr  # the progress bar reached the last step


def test_synth_clone_and_codec_round_trip(tiny_fp32_folder, tmp_path):
    ref = tmp_path / "ref.wav"
    soundfile.write(ref, speech_like(2.0, 44100, seed=3, channels=2).T, 44100)
    out = tmp_path / "clone.wav"
    done = run_cli("synth", "--model", str(tiny_fp32_folder), "--text", "A cloned voice.", "--ref-audio",
                   str(ref), "--ref-text", "the reference words", "--steps", "2", "--output", str(out))
    assert done.returncode == 0, done.stderr
    assert out.is_file()
    rt = tmp_path / "rt.wav"
    done = run_cli("codec", "--model", str(tiny_fp32_folder), "--input", str(ref), "--output", str(rt))
    assert done.returncode == 0, done.stderr
    audio, sr = soundfile.read(rt)
    assert sr == 24000 and len(audio) == (2 * 24000) // 960 * 960
    assert "50 frames x 8 codebooks" in done.stdout


def test_bad_input_is_one_clear_line(tiny_fp32_folder, tmp_path):
    done = run_cli("synth", "--model", str(tiny_fp32_folder), "--text", "Hi.", "--language", "Klingonish",
                   "--output", str(tmp_path / "x.wav"))
    assert done.returncode == 2
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("error:") and "Klingonish" in last
    assert "Traceback" not in done.stderr
    done = run_cli("synth", "--model", str(tmp_path / "missing"), "--text", "Hi.")
    assert done.returncode == 2 and "Traceback" not in done.stderr
