"""The checks that keep inputs bounded (issue 12), one unit at a time, without a model where possible.

Resampling of any rate (equal to torchaudio where torchaudio is affordable),
audio headers, ``.npz`` members, saved voices, chunking of unpunctuated text,
the manifest's file list, Hub specs, the CLI's early checks, the output folder.
"""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import time
import tracemalloc

import numpy as np
import pytest
import soundfile as sf

from tests.support import bombs
from omnivoice_demo.audio import processing as audio, resample as resample_module
from omnivoice_demo.errors import InvalidInput, ModelFolderError, OmniVoiceError
from omnivoice_demo.audio.resample import resample, resampled_length
from omnivoice_demo.storage.voice_file import Voice

ROOT = pathlib.Path(__file__).resolve().parent.parent


def peak_mb(function, *args, **kwargs):
    """(result or exception, peak MB of Python/NumPy allocations while ``function`` ran)."""
    tracemalloc.start()
    try:
        try:
            result = function(*args, **kwargs)
        except Exception as exc:  # the caller asserts on it
            result = exc
        return result, tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


# --- resampling ----------------------------------------------------------------------------------

@pytest.mark.parametrize("orig_freq,new_freq", [(1009, 24000), (24000, 1009), (7919, 16000)])
def test_banded_resampling_of_odd_rates_equals_torchaudio(orig_freq, new_freq):
    torch = pytest.importorskip("torch")
    torchaudio = pytest.importorskip("torchaudio")
    x = np.stack([bombs.tone(0.7, orig_freq, seed=1), bombs.tone(0.7, orig_freq, seed=2)])
    got = resample(x, orig_freq, new_freq)
    want = torchaudio.functional.resample(torch.from_numpy(x), orig_freq, new_freq).numpy()
    assert got.shape == want.shape and got.shape[-1] == resampled_length(x.shape[-1], orig_freq, new_freq)
    assert np.abs(got - want).max() <= 1e-5


@pytest.mark.parametrize("orig_freq,new_freq", [(44100, 24000), (16000, 24000), (24000, 16000), (48000, 24000)])
def test_banded_path_equals_torchaudio_at_the_common_rates(monkeypatch, orig_freq, new_freq):
    torch = pytest.importorskip("torch")
    torchaudio = pytest.importorskip("torchaudio")
    monkeypatch.setattr(resample_module, "DENSE_KERNEL_LIMIT", 0)  # every pair through the banded path
    monkeypatch.setattr(resample_module, "BLOCK_FLOATS", 4096)     # and through many blocks
    x = bombs.tone(0.5, orig_freq, seed=3)[None, :]
    got = resample(x, orig_freq, new_freq)
    want = torchaudio.functional.resample(torch.from_numpy(x), orig_freq, new_freq).numpy()
    assert got.shape == want.shape
    assert np.abs(got - want).max() <= 1e-5


def test_resampling_a_coprime_rate_is_bounded():
    """12001 Hz -> 24 kHz built a 24000 x 12015 bank (1.15 GB, 4.8 GB peak); now a few MB."""
    x = bombs.tone(2.0, 12001)
    out, peak = peak_mb(resample, x, 12001, 24000)
    assert out.shape == (resampled_length(len(x), 12001, 24000),)
    assert resampled_length(24000, 12001, 24000) == 47996  # torchaudio's float32 ceil
    assert peak < 100, peak


def test_absurd_rates_are_refused():
    with pytest.raises(InvalidInput, match="not supported"):
        resample(np.zeros(100, np.float32), 2147483647, 24000)
    for rate in (0, 1009, 3999, 192001, 2147483647, 16000.5, True):
        with pytest.raises(InvalidInput, match="sample rate"):
            audio.check_sample_rate(rate)
    assert audio.check_sample_rate(44100.0) == 44100


# --- audio files -----------------------------------------------------------------------------------

def test_audio_header_is_checked_before_decoding(tmp_path):
    claimed = bombs.wav_claiming_rate(tmp_path / "claimed.wav", 2147483647)
    with pytest.raises(InvalidInput, match="2147483647 Hz.*supported rates"):
        audio.load_audio_file(claimed)
    hour = bombs.flac_of_silence(tmp_path / "hour.flac")
    assert hour.stat().st_size < 2 * 2**20
    error, peak = peak_mb(audio.load_audio_file, hour, max_seconds=60)
    assert isinstance(error, InvalidInput) and "3600.0 s long; the limit is 60 s" in str(error)
    assert peak < 20, peak  # refused from the header: nothing decoded
    many = tmp_path / "channels.wav"
    sf.write(many, np.zeros((48000, 32), dtype=np.float32), 48000)
    with pytest.raises(InvalidInput, match="32 channels"):
        audio.load_audio_file(many, max_seconds=1.0)  # 1 s, but 32 x 48000 samples
    big = bombs.wav_at(tmp_path / "big.wav", 3.0, 16000)
    with pytest.raises(InvalidInput, match="limit is 0 MB|limit is"):
        audio.load_audio_file(big, max_bytes=1000)
    data, rate = audio.load_audio_file(big, max_seconds=3.0)
    assert rate == 16000 and data.shape == (1, 48000)


def test_messages_name_the_file_not_its_folder(tmp_path):
    hour = bombs.flac_of_silence(tmp_path / "hour.flac", seconds=120)
    with pytest.raises(InvalidInput) as caught:
        audio.load_audio_file(hour, max_seconds=60)
    assert "hour.flac" in str(caught.value) and str(tmp_path) not in str(caught.value)


# --- saved voices and npz members ------------------------------------------------------------------

@pytest.mark.parametrize("name,match", [
    ("voice_rms_nan", "rms nan"), ("voice_rms_negative", "rms -5.0"), ("voice_float_codes", "type float64"),
    ("voice_bool_codes", "type bool"), ("voice_meta_list", "meta is a list"), ("voice_no_transcript", "no transcript"),
])
def test_voice_load_checks_every_field(tmp_path, name, match):
    files = {"voice_rms_nan": lambda p: bombs.voice_with(p, rms=float("nan")),
             "voice_rms_negative": lambda p: bombs.voice_with(p, rms=-5.0),
             "voice_float_codes": lambda p: bombs.voice_with(p, codes=np.zeros((8, 50)) + 0.5),
             "voice_bool_codes": lambda p: bombs.voice_with(p, codes=np.ones((8, 50), dtype=bool)),
             "voice_meta_list": lambda p: bombs.voice_with(p, meta=[1, 2]),
             "voice_no_transcript": lambda p: bombs.voice_with(p, transcript=None)}
    path = files[name](tmp_path / f"{name}.npz")
    with pytest.raises(InvalidInput, match=match) as caught:
        Voice.load(path)
    assert str(tmp_path) not in str(caught.value)


def test_voice_load_accepts_a_good_voice_and_refuses_out_of_range_codes(tmp_path):
    good = Voice.load(bombs.voice_with(tmp_path / "good.npz"))
    assert good.codes.shape == (8, 50) and good.rms == 0.05 and good.transcript == "hello there."
    with pytest.raises(InvalidInput, match="outside 0..1023"):
        Voice.load(bombs.voice_with(tmp_path / "range.npz", codes=np.full((8, 5), 1024)))
    with pytest.raises(InvalidInput, match=r"shape \[4, 5\]"):
        Voice.load(bombs.voice_with(tmp_path / "shape.npz", codes=np.zeros((4, 5), dtype=np.int64)))
    with pytest.raises(InvalidInput, match=r"shape \[8, 50\] \(400 values\); this server.s limit is 320 values"):
        Voice.load(bombs.voice_with(tmp_path / "long.npz"), max_frames=40)


def test_an_npz_bomb_is_refused_before_it_inflates(tmp_path):
    bomb = bombs.npz_bomb_voice(tmp_path / "bomb.npz", frames=4 * 1024 * 1024)  # 256 MB inflated
    assert bomb.stat().st_size < 2**20
    error, peak = peak_mb(Voice.load, bomb)
    assert isinstance(error, InvalidInput) and "this server's limit is" in str(error)
    assert peak < 20, peak


def test_npz_members_of_object_type_are_refused(tmp_path):
    from omnivoice_demo.storage.npz_check import Member, read_npz

    path = tmp_path / "objects.npz"
    np.savez(path, codes=np.array([{"a": 1}], dtype=object))
    with pytest.raises(InvalidInput, match="type object"):
        read_npz(path, {"codes": Member("iu", 100)}, "codes file", 2**20)
    (tmp_path / "text.npz").write_text("not a zip")
    with pytest.raises(InvalidInput, match="not a codes file"):
        read_npz(tmp_path / "text.npz", {"codes": Member("iu", 100)}, "codes file", 2**20)


# --- chunking --------------------------------------------------------------------------------------

def test_text_without_punctuation_is_chunked_and_punctuated_text_is_the_references():
    from omnivoice_demo.engine import duration
    from omnivoice_demo.text.prompt import chunk_text_punctuation

    for text in ("a" * 4000, " ".join(["word"] * 1500), "字" * 1500):
        target, _ = duration.plan_target_frames(text, None, None, 1.0, None)
        chunks = duration.chunk_for_generation(text, target)
        chunk_len = int(15 * 25 / (target / len(text)))
        assert len(chunks) > 1 and max(map(len, chunks)) <= max(chunk_len, 50)
        assert "".join(chunks).replace(" ", "") == text.replace(" ", "")
    punctuated = "Mr. Smith said hello. It was a long day, and everyone was tired! " * 40
    target, _ = duration.plan_target_frames(punctuated, None, None, 1.0, None)
    chunk_len = int(15 * 25 / (target / len(punctuated)))
    assert duration.chunk_for_generation(punctuated, target) == chunk_text_punctuation(punctuated, chunk_len, 3)


# --- limits ------------------------------------------------------------------------------------------

def test_limit_presets_and_flags():
    import argparse

    from omnivoice_demo.settings.limits import Limits, add_limit_arguments, limits_from_arguments

    parser = argparse.ArgumentParser()
    add_limit_arguments(parser)
    assert limits_from_arguments(parser.parse_args([])) == Limits()
    local = limits_from_arguments(parser.parse_args(["--limits", "local", "--max-text-chars", "123"]))
    assert local.max_text_chars == 123 and local.max_audio_seconds == Limits.local().max_audio_seconds
    with pytest.raises(SystemExit):
        parser.parse_args(["--max-steps", "-1"])
    assert Limits().max_reference_frames == 60 * 25


# --- the manifest and Hub specs ----------------------------------------------------------------------

@pytest.fixture
def own_folder(tmp_path):
    from omnivoice_demo.storage.manifest import write_manifest

    folder = tmp_path / "model"
    folder.mkdir()
    for name in ("audio_embeddings_encoder.onnx", "llm_decoder.onnx", "audio_heads_decoder.onnx",
                 "genai_config.json", "tokenizer.json"):
        (folder / name).write_text(name)
    write_manifest(folder, {"backbone_attention": "bidirectional"})
    return folder


def _edit_manifest(folder, change):
    from omnivoice_demo.storage.manifest import MANIFEST_NAME

    path = folder / MANIFEST_NAME
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


def test_manifest_must_list_every_loaded_file_inside_the_folder(own_folder):
    from omnivoice_demo.storage.manifest import load_manifest, verify_files

    verify_files(own_folder, load_manifest(own_folder))
    _edit_manifest(own_folder, lambda d: d.update(files={}))
    with pytest.raises(ModelFolderError, match="lists no files"):
        load_manifest(own_folder)
    for bad in ("../outside.txt", "/etc/hostname", "a/../../b", "C:\\x"):
        _edit_manifest(own_folder, lambda d: d.update(files={bad: {"size": 1, "sha256": "0" * 64}}))
        with pytest.raises(ModelFolderError, match="not a path inside the model folder"):
            load_manifest(own_folder)


def test_an_unlisted_or_changed_file_fails(own_folder):
    from omnivoice_demo.storage.manifest import load_manifest, verify_files

    (own_folder / "llm_decoder.onnx.data").write_bytes(b"new weights")
    with pytest.raises(ModelFolderError, match="llm_decoder.onnx.data .*not listed"):
        verify_files(own_folder, load_manifest(own_folder), checksums=False)
    (own_folder / "llm_decoder.onnx.data").unlink()
    _edit_manifest(own_folder, lambda d: d["files"].pop("tokenizer.json"))
    with pytest.raises(ModelFolderError, match="tokenizer.json .*not listed"):
        verify_files(own_folder, load_manifest(own_folder), checksums=False)


def test_a_corrupt_manifest_is_an_error_naming_it_and_the_folder_is_not_rewritten(own_folder, tmp_path):
    from omnivoice_demo.hub import resolve_model
    from omnivoice_demo.storage.manifest import MANIFEST_NAME

    (own_folder / MANIFEST_NAME).write_text('{"format": "omnivoice-onnx", "files": {')
    with pytest.raises(ModelFolderError, match=MANIFEST_NAME + ".*not valid JSON"):
        resolve_model(own_folder, precision="fp32", cache_dir=tmp_path / "cache", offline=True)
    assert not (tmp_path / "cache" / "local").exists() or not any((tmp_path / "cache" / "local").iterdir())


@pytest.mark.parametrize("spec", ["someone/ours@../../x", "someone/ours@/etc", "someone/ours@a/../../b",
                                  "someone/ours@.hidden", "a--b/c@main"])
def test_hub_specs_are_validated_before_any_path(spec, tmp_path):
    from omnivoice_demo.hub import resolve_model

    with pytest.raises(OmniVoiceError, match="refused|not a valid Hub repo id|neither"):
        resolve_model(spec, cache_dir=tmp_path / "cache", offline=True)
    assert not (tmp_path / "cache" / "hub").exists()


def test_good_revisions_pass():
    from omnivoice_demo.storage.specs import check_revision

    for revision in ("main", "v1.2", "refs/pr/3", "0123456789abcdef0123456789abcdef01234567", None):
        assert check_revision(revision) == revision


# --- the CLI --------------------------------------------------------------------------------------

def run_cli(*args):
    env = dict(os.environ, PYTHONPATH=str(ROOT), HF_HUB_OFFLINE="1")
    return subprocess.run([sys.executable, "-m", "omnivoice_demo", *args], capture_output=True, cwd=ROOT, env=env,
                          timeout=120)


@pytest.mark.parametrize("args,message", [
    (["--output", "/nonexistent/x.wav"], b"folder /nonexistent of --output does not exist"),
    (["--output", "x.xyz"], b"'.xyz' is not an audio format"),
    (["--threads", "-3"], b"--threads must be between 1"),
    (["--max-text-chars", "0"], b"max_text_chars must be a positive number"),
    (["--no-such-flag"], b"unrecognized arguments"),
    (["--text", b"caf\xe9".decode("utf-8", "surrogateescape")], b"is not valid UTF-8"),
])
def test_cli_refuses_before_any_work_with_one_line(tmp_path, args, message):
    base = ["synth", "--model", str(tmp_path / "no-model"), "--text", "Hello."]
    done = run_cli(*base, *args)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(b"error:") and message in lines[0], done.stderr


# --- the output folder ----------------------------------------------------------------------------

def test_output_folder_is_capped_oldest_first_and_shared_by_starts(tmp_path):
    from omnivoice_demo.storage.outputs import OutputFolder

    folder = OutputFolder(tmp_path / "outputs", max_bytes=3000)
    paths = []
    for index in range(5):
        path = folder.path(f"out-{index}", ".wav")
        path.write_bytes(b"x" * 1000)
        os.utime(path, (time.time() - 100 + index, time.time() - 100 + index))
        paths.append(path)
    folder.prune()
    assert [p.exists() for p in paths] == [False, False, True, True, True]
    assert folder.total_bytes() <= 3000
    again = OutputFolder(tmp_path / "outputs")
    assert again.path("x", ".wav").parent == paths[0].parent
    assert folder.path("../escape", ".wav").parent == folder.root


def test_output_files_are_removed_on_sigterm(tmp_path):
    code = ("import sys, time; sys.path.insert(0, %r)\n"
            "from omnivoice_demo.storage.outputs import OutputFolder\n"
            "f = OutputFolder(%r); f.install_cleanup(); f.path('a', '.wav').write_bytes(b'x')\n"
            "print('ready', flush=True); time.sleep(60)\n") % (str(ROOT), str(tmp_path / "outputs"))
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert child.stdout.readline().strip() == "ready"
    assert len(list((tmp_path / "outputs").glob("a-*.wav"))) == 1   # a-<random token>.wav
    child.send_signal(signal.SIGTERM)
    assert child.wait(timeout=30) == -signal.SIGTERM
    assert not list((tmp_path / "outputs").glob("a-*.wav"))
    shutil.rmtree(tmp_path / "outputs")


def test_codes_files_are_sized_before_they_inflate(tmp_path):
    from omnivoice_demo.storage.codes_file import load_codes, save_codes

    zeros = bombs.npz_of_zero_codes(tmp_path / "zeros.npz", frames=30000)
    assert zeros.stat().st_size < 4096
    with pytest.raises(InvalidInput, match=r"shape \[8, 30000\].*max_decode_frames: 4500 frames"):
        load_codes(zeros, max_frames=4500)
    ok = save_codes(tmp_path / "ok.npz", np.zeros((8, 40), dtype=np.int64))
    assert load_codes(ok, max_frames=40).shape == (8, 40)
    with pytest.raises(InvalidInput, match="whole numbers"):
        load_codes(bombs.voice_with(tmp_path / "floats.npz", codes=np.zeros((8, 4)) + 0.5))
