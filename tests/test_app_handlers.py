"""The app's handlers on the tiny model, without a server or a browser."""

from __future__ import annotations

import io
import json
import pathlib

import gradio as gr
import numpy as np
import pytest
import soundfile as sf
from PIL import Image

from omnivoice_demo.ui import handlers as h
from omnivoice_demo.ui import pictures
from omnivoice_demo.ui.metrics import log_mel_distance, snr_db
from omnivoice_demo.ui.models import ModelManager
from omnivoice_demo.ui.voices import VoiceLibrary, clean_name, data_dir

from signals import speech_like

FAST = dict(num_step=4, randomize=False, seed=11)


@pytest.fixture(scope="module")
def studio(tiny_fp32_folder, tmp_path_factory):
    root = tmp_path_factory.mktemp("studio")
    manager = ModelManager(cache_dir=root / "cache", offline=True)
    manager.load(str(tiny_fp32_folder), "fp32")
    return h.Studio(models=manager, voices=VoiceLibrary(root / "voices"), out_dir=root / "out",
                    min_update_interval=0.0)


@pytest.fixture(scope="module")
def reference_wav(tmp_path_factory) -> str:
    """4 s of speech-like stereo audio at 44.1 kHz (resampled and mixed down by the app)."""
    path = tmp_path_factory.mktemp("refs") / "reference.wav"
    sf.write(path, speech_like(4.0, 44100, seed=3, channels=2).T, 44100)
    return str(path)


def _run(generator) -> list[dict]:
    return list(generator)


def _png(image: Image.Image) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def _error(excinfo) -> str:
    return str(excinfo.value.message)


# --- pictures and metrics -------------------------------------------------------------------

def test_code_grid_colours_cells_by_state():
    codes = np.full((8, 10), 1024)
    codes[:, :4] = np.arange(4) * 200
    decided = np.zeros((8, 10), dtype=bool)
    decided[2, 3] = True
    image = np.asarray(pictures.code_grid(codes, decided, width=100, row_height=10, gap=0))
    assert image.shape == (80, 100, 3)
    assert tuple(image[5, 95]) == pictures.UNDECIDED            # undecided: dark
    assert tuple(image[25, 35]) == pictures.HIGHLIGHT           # decided this step: highlighted
    coloured = image[5, 5], image[5, 15]                       # decided earlier: coloured by value
    assert all(tuple(c) not in (pictures.UNDECIDED, pictures.HIGHLIGHT) for c in coloured)
    assert tuple(coloured[0]) != tuple(coloured[1])
    # chunks side by side keep the width
    two = pictures.code_grid([codes, codes], width=300)
    assert two.size[0] == 300


def test_bar_chart_and_metrics():
    chart = pictures.bar_chart(["backbone", "heads"], {"int4": [1.0, 0.5], "fp32": [2.0, float("nan")]})
    assert chart.size[0] == 900
    x = speech_like(1.0)[0]
    assert snr_db(x, x) == float("inf")
    assert log_mel_distance(x, x) == pytest.approx(0.0)
    noisy = x + 0.05 * np.random.default_rng(0).standard_normal(x.shape)
    assert 0 < snr_db(x, noisy) < 30
    assert log_mel_distance(x, noisy) > 0.01


# --- Speak ----------------------------------------------------------------------------------

def test_speak_streams_the_grid_and_returns_audio_files_seed_history(studio):
    updates = _run(h.speak(studio, "Hello there, this is the tiny model.", dict(FAST, num_step=8), []))
    first, final = updates[0], updates[-1]
    assert "Starting" in first["progress"] and first["seed"] == 11
    grids = [u["grid"] for u in updates if "grid" in u and "Step" in u.get("progress", "")]
    assert len(grids) == 8  # one picture per step (no throttling in this studio)
    assert len({_png(g) for g in grids}) == 8  # the grid changes at every step
    assert "Done" in final["progress"]
    audio, rate = sf.read(final["audio"])
    assert rate == 24000 and len(audio) > 2400
    wav, flac, npz = final["files"]
    assert wav.endswith(".wav") and flac.endswith(".flac") and npz.endswith(".codes.npz")
    assert sf.read(flac)[0].shape == audio.shape
    codes = h.load_codes(npz)
    assert codes.shape[0] == 8
    assert final["seed"] == 11 and "seed **11**" in final["info"] and "RTF" in final["info"]
    assert len(final["history"]) == 1 and final["history_table"][0][3] == 11
    # same seed, same audio
    again = _run(h.speak(studio, "Hello there, this is the tiny model.", dict(FAST, num_step=8), []))[-1]
    np.testing.assert_array_equal(sf.read(again["audio"])[0], audio)


def test_random_seed_is_written_back(studio):
    final = _run(h.speak(studio, "Another one.", dict(num_step=2, randomize=True, seed=5), []))[-1]
    meta = json.loads(str(np.load(final["files"][2])["meta"]))
    assert final["seed"] == meta["seed"] == meta["settings"]["seed"]
    assert f"seed **{final['seed']}**" in final["info"]


def test_long_text_plays_its_chunks_as_they_finish(studio):
    text = " ".join(f"Sentence number {n} of the long text goes on for a while here." for n in
                    ("one", "two", "three", "four", "five", "six", "seven", "eight"))  # ~30 s: 3 chunks
    updates = _run(h.speak(studio, text, dict(num_step=2, randomize=False, seed=1), []))
    chunk_updates = [u["chunks"] for u in updates if u.get("chunks")]
    assert len(chunk_updates) >= 2
    # chunk k is offered before the generation ends, and each update lists all finished chunks
    assert chunk_updates[0].count("data-ov-chunk=") == 1
    assert chunk_updates[-1].count("data-ov-chunk=") == len(chunk_updates)
    assert "data:audio/wav;base64," in chunk_updates[0]
    assert updates.index(next(u for u in updates if u.get("chunks"))) < len(updates) - 2


def test_stop_closes_the_engine_generator(studio, monkeypatch):
    loaded = studio.models.get()
    streams = []
    original = loaded.engine.stream

    def recording_stream(*args, **kwargs):
        stream = original(*args, **kwargs)
        streams.append(stream)
        return stream

    monkeypatch.setattr(loaded.engine, "stream", recording_stream)
    run = h.speak(studio, "A sentence that will be stopped early.", dict(num_step=16, randomize=False, seed=2), [])
    next(run), next(run), next(run)  # started, two steps
    run.close()  # what Gradio does when Stop cancels the event
    assert streams and streams[0].gi_frame is None  # the engine's generator is closed
    assert loaded.lock.acquire(blocking=False)
    loaded.lock.release()


def test_text_info_counts_and_estimates(studio):
    info = h.text_info(studio, "Hello world.", {})
    assert info.startswith("12 characters") and "of speech" in info and "to generate" in info
    assert "⚠" in h.text_info(studio, "Hello", {"language": "Klingon"})
    assert h.text_info(studio, "", {}) == "0 characters"


def test_instruct_is_checked_with_suggestions():
    assert "male, low pitch" in h.check_instruct({"gender": "male", "pitch": "low pitch"})
    message = h.check_instruct({"instruct": "femal"})
    assert message.startswith("⚠") and "female" in message
    assert h.compose_instruct({"gender": "Auto", "instruct": " "}) is None


@pytest.mark.parametrize("text, values, expected", [
    ("   ", {}, "empty"),
    ("Hello", {"language": "Klingon"}, "Unknown language"),
    ("Hello", {"instruct": "femal"}, "did you mean 'female'"),
    ("Hello", {"speed": 0}, "speed must be between"),
    ("Hello", {"seed": 1.5, "randomize": False}, "seed must be a whole number"),
])
def test_bad_speak_input_is_a_message(studio, text, values, expected):
    with pytest.raises(gr.Error) as excinfo:
        _run(h.speak(studio, text, dict(values, num_step=2), []))
    assert expected in _error(excinfo)


def test_no_model_says_what_to_do(tmp_path):
    empty = h.Studio(models=ModelManager(cache_dir=tmp_path / "cache", offline=True),
                     voices=VoiceLibrary(tmp_path / "voices"), out_dir=tmp_path / "out")
    with pytest.raises(gr.Error) as excinfo:
        _run(h.speak(empty, "Hello", {}, []))
    assert "No model is loaded" in _error(excinfo) and "Model tab" in _error(excinfo)
    assert "no model" in h.model_bar(empty)
    # a failed load (offline, nothing cached) is reported with what to do, and the app keeps working
    with pytest.raises(ValueError):
        empty.models.load(None, "int4", offline=True)
    bar = h.model_bar(empty)
    assert "not loaded" in bar and "not cached" in bar.replace("never downloaded", "not cached")
    assert "What to do" in bar
    with pytest.raises(gr.Error) as excinfo:
        h.codec_roundtrip(empty, None)
    assert "Record or upload" in _error(excinfo)


# --- Clone ----------------------------------------------------------------------------------

def test_clone_speaks_in_the_reference_voice_and_saves_it(studio, reference_wav):
    note = h.reference_note(studio, reference_wav)
    assert "4.0 s, 44100 Hz, 2 channels" in note
    final = _run(h.clone(studio, reference_wav, "This is a test of the voice.", True, "Hello in that voice.",
                         dict(FAST), True, []))[-1]
    assert sf.read(final["audio"])[1] == 24000 and "Clone" == final["history"][0]["tab"]
    saved = h.save_voice(studio, reference_wav, "This is a test of the voice.", True, "My test voice")
    assert saved["selected"] == "My test voice" and "My test voice" in h.voice_names(studio)
    assert (studio.voices.root / "My test voice.npz").is_file()
    spoken = _run(h.speak(studio, "Now from the saved voice.", dict(FAST, voice="My test voice"), []))[-1]
    meta = json.loads(str(np.load(spoken["files"][2])["meta"]))
    assert meta["settings"]["voice"] == "My test voice"


def test_private_voice_library_is_per_session(tmp_path):
    library = VoiceLibrary(tmp_path, private=True)
    voice = h.Voice(codes=np.zeros((8, 5), dtype=np.int64), transcript="Hi.", rms=0.1)
    library.save(voice, "mine", session="abc")
    assert library.names("abc") == ["mine"] and library.names("other") == []
    assert clean_name("  a/b\\c:d  ") == "abcd"
    with pytest.raises(ValueError):
        clean_name("///")


def test_data_dir_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("OMNIVOICE_DATA", str(tmp_path / "d"))
    assert data_dir() == tmp_path / "d"
    monkeypatch.delenv("OMNIVOICE_DATA")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "x"))
    assert data_dir() == tmp_path / "x" / "omnivoice-onnx-studio"


def test_long_reference_is_trimmed_with_a_note(studio, tmp_path):
    path = tmp_path / "long.flac"
    sf.write(path, speech_like(25.0, 16000, seed=4)[0], 16000)
    wav, rate, note = h.read_reference(studio, str(path))
    assert wav.shape[-1] / rate <= h.TRIM_TO_SECONDS + 0.01
    assert "only the first" in note and "transcript" in note


@pytest.mark.parametrize("case, expected", [
    ("no consent", "I have the right to use this voice"),
    ("no transcript", "transcript"),
    ("no reference", "Record or upload a reference"),
    ("silent", "silent"),
    ("too short", "at least"),
    ("unreadable", "Cannot read audio file"),
    ("too large", "the limit is"),
])
def test_bad_clone_input_is_a_message(studio, reference_wav, tmp_path, case, expected):
    reference, transcript, consent = reference_wav, "Some words.", True
    if case == "no consent":
        consent = False
    elif case == "no transcript":
        transcript = "  "
    elif case == "no reference":
        reference = None
    elif case == "silent":
        reference = str(tmp_path / "silent.wav")
        sf.write(reference, np.zeros(48000, dtype=np.float32), 24000)
    elif case == "too short":
        reference = str(tmp_path / "short.wav")
        sf.write(reference, speech_like(0.2)[0], 24000)
    elif case == "unreadable":
        reference = str(tmp_path / "broken.wav")
        pathlib.Path(reference).write_bytes(b"this is not audio")
    small = h.Studio(models=studio.models, voices=studio.voices, out_dir=studio.out_dir,
                     max_upload_mb=0.01 if case == "too large" else 50)
    with pytest.raises(gr.Error) as excinfo:
        _run(h.clone(small, reference, transcript, consent, "Hello.", dict(FAST), True, []))
    assert expected in _error(excinfo)


# --- Codec and Benchmark --------------------------------------------------------------------

def test_codec_round_trip_and_decoding_uploaded_codes(studio, reference_wav):
    result = h.codec_roundtrip(studio, reference_wav)
    metrics = result["metrics"]
    assert metrics["frames"] == 100 and metrics["bitrate_kbps"] == 2.0
    assert np.isfinite(metrics["snr_db"]) and metrics["log_mel_distance"] > 0
    assert "100 frames" in result["stats"] and "kbit/s" in result["stats"] and "log-mel" in result["stats"]
    assert sf.read(result["output"])[0].shape == (100 * 960,)
    decoded = h.codec_decode(studio, result["codes_file"])
    np.testing.assert_allclose(sf.read(decoded["output"])[0], sf.read(result["output"])[0], atol=1e-4)
    assert isinstance(result["grid"], Image.Image)


def test_bad_codes_upload_is_a_message(studio, tmp_path):
    bad = tmp_path / "bad.npz"
    np.savez(bad, something=np.zeros(3))
    with pytest.raises(gr.Error) as excinfo:
        h.codec_decode(studio, str(bad))
    assert "not a codes file" in _error(excinfo)
    wrong = tmp_path / "wrong.npz"
    np.savez(wrong, codes=np.full((8, 4), 5000))
    with pytest.raises(gr.Error) as excinfo:
        h.codec_decode(studio, str(wrong))
    assert "0 to 1023" in _error(excinfo)


def test_benchmark_table_chart_machine_csv(studio):
    result = h.benchmark(studio, [], "short", 2, 1)
    rows = result["rows"]
    assert len(rows) == 1 and rows[0]["model"] == studio.models.active
    for key in ("backbone_s", "heads_s", "per_step_ms", "rtf", "peak_rss_mb", "cpu", "onnxruntime"):
        assert rows[0][key] is not None
    assert result["table"]["headers"] == h.BENCH_COLUMNS and len(result["table"]["data"]) == 1
    assert "Machine" in result["machine"] and "provider cpu" in result["machine"]
    csv_text = pathlib.Path(result["csv"]).read_text()
    assert csv_text.splitlines()[0].startswith("model,profile")
    assert isinstance(result["chart"], Image.Image)
    with pytest.raises(gr.Error):
        h.benchmark(studio, ["not loaded"], "short", 2, 1)
    with pytest.raises(gr.Error):
        h.benchmark(studio, [], "huge", 2, 1)


def test_model_details_show_precision_and_licence(studio):
    details = h.model_details(studio)
    assert "cpu_fp32" in details and "licence" in details
    assert "ready" in h.model_bar(studio)


@pytest.mark.parametrize("fmt, rate", [("WAV", 8000), ("FLAC", 48000), ("OGG", 22050), ("MP3", 44100)])
def test_reference_formats_and_rates(studio, tmp_path, fmt, rate):
    path = tmp_path / f"reference.{fmt.lower()}"
    sf.write(path, speech_like(2.0, rate, seed=1, channels=2).T, rate, format=fmt)
    note = h.reference_note(studio, str(path))
    assert note.startswith("Reference: 2.") and f"{rate} Hz" in note and "2 channels" in note


def test_background_load_and_two_models_side_by_side(studio, tiny_fp32_folder, tmp_path):
    from omnivoice_demo.engine import OmniVoiceEngine

    manager = ModelManager(cache_dir=tmp_path / "cache", offline=True)
    assert manager.start_load(str(tiny_fp32_folder))  # precision: the folder's own
    assert not manager.start_load(str(tiny_fp32_folder)) or not manager.loading  # one load at a time
    manager.wait(60)
    assert manager.status.state == "ready", manager.status
    first = manager.get()
    assert first.precision == "fp32" and first.engine.profile == "cpu_fp32"
    manager.add(OmniVoiceEngine(tiny_fp32_folder, verify="none"), label="second copy")
    two = h.Studio(models=manager, voices=studio.voices, out_dir=tmp_path / "out")
    result = h.benchmark(two, [first.label, "second copy"], "short", 1, 1)
    assert [r["model"] for r in result["rows"]] == [first.label, "second copy"]
    assert "second copy" in h.model_details(two)
    manager.set_active(first.label)
    manager.unload(first.label)
    assert manager.active == "second copy"
