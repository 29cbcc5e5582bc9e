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


def run_cli_env(*args, data, stdin=None):
    import os

    return subprocess.run([sys.executable, "-m", "omnivoice_demo", *args], capture_output=True, text=True,
                          input=stdin, timeout=300, env=dict(os.environ, OMNIVOICE_DATA=str(data), HF_HUB_OFFLINE="1"))


def test_voices_are_listed_imported_renamed_exported_and_deleted(tmp_path):
    from omnivoice_demo.studio import VoiceLibrary
    from tests.test_vocabulary import a_voice

    data = tmp_path / "data"
    a_voice(transcript="What Anna says.").save(tmp_path / "anna.npz")
    done = run_cli_env("voices", "list", data=data)
    assert done.returncode == 0 and "no saved voices" in done.stdout
    assert run_cli_env("voices", "import", str(tmp_path / "anna.npz"), "--name", "Anna", data=data).returncode == 0
    assert run_cli_env("voices", "rename", "Anna", "Anne", data=data).returncode == 0
    listed = run_cli_env("voices", "list", data=data).stdout.splitlines()
    assert len(listed) == 1 and listed[0].startswith("Anne\t") and "What Anna says." in listed[0]
    out = tmp_path / "out"
    out.mkdir()
    assert run_cli_env("voices", "export", "Anne", str(out), data=data).returncode == 0
    assert (out / "Anne.npz").is_file() and (out / "Anne.json").is_file()
    assert run_cli_env("voices", "delete", "Anne", data=data).returncode == 0
    assert VoiceLibrary(data / "voices").names() == []
    missing = run_cli_env("voices", "delete", "Anne", data=data)
    assert missing.returncode == 2 and missing.stderr.startswith("error: There is no saved voice named 'Anne'")
    assert len(missing.stderr.strip().splitlines()) == 1


def test_languages_are_listed(tmp_path):
    done = run_cli_env("languages", data=tmp_path)
    assert done.returncode == 0
    lines = done.stdout.splitlines()
    assert "en\tEnglish" in lines and len(lines) > 600


def test_synth_reads_stdin_and_takes_a_voice_saved_in_the_app(tiny_fp32_folder, tmp_path):
    from omnivoice_demo.studio import VoiceLibrary
    from tests.test_vocabulary import a_voice

    VoiceLibrary(tmp_path / "data" / "voices").save(a_voice(20), "Anna")
    out = tmp_path / "out.wav"
    done = run_cli_env("synth", "--model", str(tiny_fp32_folder), "--text", "-", "--voice", "anna", "--steps", "2",
                       "--seed", "3", "--output", str(out), data=tmp_path / "data", stdin="Read from the pipe.\n")
    assert done.returncode == 0, done.stderr
    assert out.is_file()
    empty = run_cli_env("synth", "--model", str(tiny_fp32_folder), "--text", "-", "--output", str(out),
                        data=tmp_path / "data", stdin="")
    assert empty.returncode == 2 and "read no text from standard input" in empty.stderr
    unknown = run_cli_env("synth", "--model", str(tiny_fp32_folder), "--text", "Hi.", "--voice", "nobody",
                          "--output", str(out), data=tmp_path / "data")
    assert unknown.returncode == 2 and "'nobody'" in unknown.stderr and "omnivoice voices list" in unknown.stderr
    assert "Anna" not in unknown.stderr   # the voice asked for is named, not every saved voice (issue 57)


def test_a_port_in_use_is_one_line_not_a_traceback(tmp_path):
    """Issue 19: starting the app (or serve) on a taken port printed the web server's traceback."""
    import os
    import socket

    from tests.support.app_server import ROOT

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = str(taken.getsockname()[1])
        env = dict(os.environ, HF_HUB_OFFLINE="1", OMNIVOICE_DATA=str(tmp_path))
        for command in ([str(ROOT / "app.py"), "--port", port],
                        ["-m", "omnivoice_demo", "serve", "--port", port, "--model", str(tmp_path / "none")]):
            done = subprocess.run([sys.executable, *command], capture_output=True, text=True, timeout=120,
                                  cwd=ROOT, env=env)
            assert done.returncode == 2, done.stderr[-2000:]
            assert "Traceback" not in done.stderr
            assert done.stderr.strip().splitlines()[-1].startswith(f"error: port {port} on 127.0.0.1 is in use")


def test_a_description_is_applied_and_what_it_ignored_is_one_line_on_stderr(tiny_fp32_folder, tmp_path):
    out = tmp_path / "described.wav"
    done = run_cli("synth", "--model", str(tiny_fp32_folder), "--text", "Hello.", "--instruct",
                   "a deep, cheerful British man", "--steps", "1", "--output", str(out))
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.startswith("voice description:")]
    assert len(lines) == 1, done.stderr
    assert "applied 'low pitch, british accent, male'" in lines[0] and "'cheerful': tone and emotion" in lines[0]
    assert soundfile.read(out)[1] == 24000
    strict = run_cli("synth", "--model", str(tiny_fp32_folder), "--text", "Hello.", "--instruct",
                     "a deep, cheerful British man", "--strict-instruct", "--output", str(tmp_path / "no.wav"))
    assert strict.returncode == 2 and not (tmp_path / "no.wav").exists()
    last = strict.stderr.strip().splitlines()[-1]
    assert last.startswith("error:") and "cheerful" in last and "Known items" in last
    assert "Traceback" not in strict.stderr
    for bad, words in (("<speak>male</speak>", "markup"), ("male\x01", "control character"),
                       ("word " * 10_000, "max_description_words")):
        refused = run_cli("synth", "--model", str(tiny_fp32_folder), "--text", "Hi.", "--instruct", bad,
                          "--output", str(tmp_path / "no.wav"))
        assert refused.returncode == 2 and words in refused.stderr.strip().splitlines()[-1], refused.stderr
