"""The app's handlers on the tiny model, without a server or a browser."""

from __future__ import annotations

import io
import json
import logging
import pathlib
import re

import gradio as gr
import numpy as np
import pytest
import soundfile as sf
from PIL import Image

from omnivoice_demo.storage.codes_file import load_codes, save_codes
from omnivoice_demo.settings.generation import GenerationConfig
from omnivoice_demo.errors import InvalidInput, ModelFolderError, OmniVoiceError
from omnivoice_demo.ui import assets, controls, design, generation, pictures
from omnivoice_demo.studio.state import Studio
from omnivoice_demo.ui.tabs import benchmark as benchmark_tab
from omnivoice_demo.ui.tabs import clone as clone_tab
from omnivoice_demo.ui.tabs import codec as codec_tab
from omnivoice_demo.ui.tabs import model as model_tab
from omnivoice_demo.ui.tabs import speak as speak_tab
from omnivoice_demo.storage.voice_file import Voice
from omnivoice_demo.audio.metrics import log_mel_distance, snr_db
from omnivoice_demo.studio.models import ModelManager
from omnivoice_demo.studio.voices import VoiceLibrary, clean_name, data_dir

from tests.support.signals import speech_like
from tests.support.studios import folder_studio

FAST = dict(num_step=4, randomize=False, seed=11)


@pytest.fixture(scope="module")
def studio(tiny_fp32_folder, tmp_path_factory):
    return folder_studio(tiny_fp32_folder, tmp_path_factory.mktemp("studio"))


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
    updates = _run(speak_tab.speak(studio, "Hello there, this is the tiny model.", dict(FAST, num_step=8), []))
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
    codes = load_codes(npz)
    assert codes.shape[0] == 8
    assert final["seed"] == 11 and "seed **11**" in final["info"] and "RTF" in final["info"]
    assert len(final["history"]) == 1 and final["history_table"][0][3] == 11
    # same seed, same audio
    again = _run(speak_tab.speak(studio, "Hello there, this is the tiny model.", dict(FAST, num_step=8), []))[-1]
    np.testing.assert_array_equal(sf.read(again["audio"])[0], audio)


def test_random_seed_is_written_back(studio):
    final = _run(speak_tab.speak(studio, "Another one.", dict(num_step=2, randomize=True, seed=5), []))[-1]
    meta = json.loads(str(np.load(final["files"][2])["meta"]))
    assert final["seed"] == meta["seed"] == meta["settings"]["seed"]
    assert f"seed **{final['seed']}**" in final["info"]


def test_long_text_plays_its_chunks_as_they_finish(studio):
    text = " ".join(f"Sentence number {n} of the long text goes on for a while here." for n in
                    ("one", "two", "three", "four", "five", "six", "seven", "eight"))  # ~30 s: 3 chunks
    updates = _run(speak_tab.speak(studio, text, dict(num_step=2, randomize=False, seed=1), []))
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
    original = loaded.engine.run

    def recording_run(*args, **kwargs):
        stream = original(*args, **kwargs)
        streams.append(stream)
        return stream

    monkeypatch.setattr(loaded.engine, "run", recording_run)
    run = speak_tab.speak(studio, "A sentence that will be stopped early.", dict(num_step=16, randomize=False, seed=2), [])
    next(run), next(run), next(run)  # started, two steps
    run.close()  # what Gradio does when Stop cancels the event
    assert studio.service.wait_idle(10)  # the service's worker stops after the step in flight
    assert streams and streams[0].gi_frame is None  # the engine's generator is closed
    assert studio.service.stats()["cancelled"] >= 1
    assert loaded.lock.acquire(blocking=False)
    loaded.lock.release()


def test_a_queued_visitor_sees_position_and_expected_wait(studio):
    """While another generation holds the engine, the progress area says the place in the queue and the wait."""
    import threading

    loaded = studio.models.get()
    release = threading.Event()

    def held():
        release.wait(30)
        yield from ()

    blocker = studio.service.submit(held, estimate=12.0)
    try:
        run = speak_tab.speak(studio, "Waiting for my turn.", dict(FAST), [])
        next(run)                                  # "Starting…" with the plan
        waiting = next(run)["progress"]
        assert "Waiting: 1st in the queue" in waiting
        assert re.search(r"about (1[0-2]|[5-9](\.\d)?) s to wait", waiting), waiting  # 12 s estimated, less elapsed
    finally:
        release.set()
    updates = list(run)
    assert updates[-1]["audio"] and blocker.wait(5) and loaded.engine is studio.models.get().engine


def test_text_info_counts_and_estimates(studio):
    info = generation.text_info(studio, "Hello world.", {})
    assert info.startswith("12 characters") and "of speech" in info and "to generate" in info
    assert "⚠" in generation.text_info(studio, "Hello", {"language": "Klingon"})
    assert generation.text_info(studio, "", {}) == "0 characters"


def test_text_info_shows_what_a_long_reference_costs(studio):
    """The Clone tab's estimate for a 12 s clip beside one with a 6 s clip, for the same length of speech."""
    engine = studio.models.get().engine
    long_clip = Voice(codes=np.zeros((8, 300), dtype=np.int64), rms=0.1,
                      transcript="One two three four five six seven eight nine ten eleven twelve thirteen fourteen.")
    info = generation.text_info(studio, "Say this sentence in my voice.", {}, voice=long_clip)
    assert "This 12.0 s reference: ≈ " in info and "with a 6 s one ≈ " in info
    plan = engine.prepare("Say this sentence in my voice.", voice=long_clip)
    six = generation.reference_cost(engine, "Say this sentence in my voice.", long_clip, plan,
                                    engine.estimate_seconds(plan), {})
    assert six.endswith(generation.fmt_seconds(engine.estimate_seconds(engine.prepare(
        "Say this sentence in my voice.", duration=plan.target_frames / 25, voice=Voice(
            codes=np.zeros((8, 150), dtype=np.int64), rms=0.1,
            transcript="One two three four five six seven.")))))
    assert "reference" not in generation.text_info(studio, "Say this sentence.", {})


def test_the_description_box_says_what_it_applies_and_what_it_ignores():
    assert "male, low pitch" in design.check_instruct({"gender": "male", "pitch": "low pitch"})
    message = design.check_instruct({"instruct": "femal"})
    assert message.startswith("Voice design: *no item understood*") and "Ignored: 'femal'" in message
    assert "did you mean 'female'" in message
    message = design.check_instruct({"gender": "male", "instruct": "a deep, cheerful British voice"})
    assert "`male, low pitch, british accent`" in message and "Ignored: 'cheerful'" in message
    assert "`低音调，男`" in design.check_instruct({"instruct": "低沉的男声"}, text="你好")
    assert design.check_instruct({"instruct": "<b>male</b>"}).startswith("⚠")
    assert design.compose_instruct({"gender": "Auto", "instruct": " "}) is None


def test_a_named_voice_keeps_its_design_when_the_box_gives_no_item():
    kept = speak_tab.with_design({"instruct": "cheerful"}, "female, young adult")
    assert controls.generation_request(kept).instruct == "female, young adult"
    assert controls.generation_request(kept).description.ignored == ("cheerful",)
    replaced = speak_tab.with_design({"instruct": "an old man"}, "female, young adult")
    assert controls.generation_request(replaced).instruct == "elderly, male"


@pytest.mark.parametrize("text, values, expected", [
    ("   ", {}, "empty"),
    ("Hello", {"language": "Klingon"}, "Unknown language"),
    ("Hello", {"instruct": "<speak>male</speak>"}, "markup"),
    ("Hello", {"speed": 0}, "speed must be between"),
    ("Hello", {"seed": 1.5, "randomize": False}, "seed must be a whole number"),
])
def test_bad_speak_input_is_a_message(studio, text, values, expected):
    with pytest.raises(gr.Error) as excinfo:
        _run(speak_tab.speak(studio, text, dict(values, num_step=2), []))
    assert expected in _error(excinfo)


def test_no_model_says_what_to_do(tmp_path):
    empty = Studio(models=ModelManager(cache_dir=tmp_path / "cache", offline=True),
                     voices=VoiceLibrary(tmp_path / "voices"), out_dir=tmp_path / "out")
    with pytest.raises(gr.Error) as excinfo:
        _run(speak_tab.speak(empty, "Hello", {}, []))
    assert "No model is loaded" in _error(excinfo) and "Model tab" in _error(excinfo)
    assert "no model" in model_tab.model_bar(empty)
    # a failed load (offline, nothing cached) is reported with what to do, and the app keeps working
    with pytest.raises(OmniVoiceError):
        empty.models.load(None, "int4", offline=True)
    bar = model_tab.model_bar(empty)
    assert "not loaded" in bar and "not cached" in bar.replace("never downloaded", "not cached")
    assert "What to do" in bar
    with pytest.raises(gr.Error) as excinfo:
        codec_tab.codec_roundtrip(empty, None)
    assert "Record or upload" in _error(excinfo)


# --- Clone ----------------------------------------------------------------------------------

def test_clone_speaks_in_the_reference_voice_and_saves_it(studio, reference_wav):
    note = clone_tab.reference_note(studio, reference_wav)
    assert "4.0 s, 44100 Hz, 2 channels" in note
    final = _run(clone_tab.clone(studio, reference_wav, "This is a test of the voice.", True, "Hello in that voice.",
                         dict(FAST), True, []))[-1]
    assert sf.read(final["audio"])[1] == 24000 and "Clone" == final["history"][0]["tab"]
    saved = clone_tab.save_voice(studio, reference_wav, "This is a test of the voice.", True, "My test voice")
    assert saved["selected"] == "My test voice" and "My test voice" in speak_tab.voice_names(studio)
    assert (studio.voices.root / "My test voice.npz").is_file()
    spoken = _run(speak_tab.speak(studio, "Now from the saved voice.", dict(FAST, voice="My test voice"), []))[-1]
    meta = json.loads(str(np.load(spoken["files"][2])["meta"]))
    assert meta["settings"]["voice"] == "My test voice"


def test_private_voice_library_is_per_session(tmp_path):
    library = VoiceLibrary(tmp_path, private=True)
    voice = Voice(codes=np.zeros((8, 5), dtype=np.int64), transcript="Hi.", rms=0.1)
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
    small = Studio(models=studio.models, voices=studio.voices, out_dir=studio.out_dir,
                     max_upload_mb=0.01 if case == "too large" else 50)
    with pytest.raises(gr.Error) as excinfo:
        _run(clone_tab.clone(small, reference, transcript, consent, "Hello.", dict(FAST), True, []))
    assert expected in _error(excinfo)


# --- Codec and Benchmark --------------------------------------------------------------------

def test_codec_round_trip_and_decoding_uploaded_codes(studio, reference_wav):
    result = codec_tab.codec_roundtrip(studio, reference_wav)
    metrics = result["metrics"]
    assert metrics["frames"] == 100 and metrics["bitrate_kbps"] == 2.0
    assert np.isfinite(metrics["snr_db"]) and metrics["log_mel_distance"] > 0
    assert "100 frames" in result["stats"] and "kbit/s" in result["stats"] and "log-mel" in result["stats"]
    assert sf.read(result["output"])[0].shape == (100 * 960,)
    decoded = codec_tab.codec_decode(studio, result["codes_file"])
    np.testing.assert_allclose(sf.read(decoded["output"])[0], sf.read(result["output"])[0], atol=1e-4)
    assert isinstance(result["grid"], Image.Image)


def test_bad_codes_upload_is_a_message(studio, tmp_path):
    bad = tmp_path / "bad.npz"
    np.savez(bad, something=np.zeros(3))
    with pytest.raises(gr.Error) as excinfo:
        codec_tab.codec_decode(studio, str(bad))
    assert "not a codes file" in _error(excinfo)
    wrong = tmp_path / "wrong.npz"
    np.savez(wrong, codes=np.full((8, 4), 5000))
    with pytest.raises(gr.Error) as excinfo:
        codec_tab.codec_decode(studio, str(wrong))
    assert "0 to 1023" in _error(excinfo)


def test_benchmark_table_chart_machine_csv(studio):
    result = benchmark_tab.benchmark(studio, [], "short", 2, 1)
    rows = result["rows"]
    assert len(rows) == 1 and rows[0]["model"] == studio.models.active
    for key in ("backbone_s", "heads_s", "per_step_ms", "rtf", "peak_rss_mb", "cpu", "onnxruntime"):
        assert rows[0][key] is not None
    assert result["table"]["headers"] == benchmark_tab.BENCH_COLUMNS and len(result["table"]["data"]) == 1
    assert "Machine" in result["machine"] and "provider cpu" in result["machine"]
    csv_text = pathlib.Path(result["csv"]).read_text()
    assert csv_text.splitlines()[0].startswith("model,profile")
    assert isinstance(result["chart"], Image.Image)
    with pytest.raises(gr.Error):
        benchmark_tab.benchmark(studio, ["not loaded"], "short", 2, 1)
    with pytest.raises(gr.Error):
        benchmark_tab.benchmark(studio, [], "huge", 2, 1)


def test_benchmark_quality_against_the_exact_model(studio):
    """The Benchmark tab's quality section: omnivoice eval's table for the active model and two presets."""
    result = benchmark_tab.quality(studio, [], ["balanced", "fast"], 1, False)
    headers, rows = result["table"]["headers"], result["table"]["data"]
    assert [row[0] for row in rows] == ["exact", "balanced", "fast"]
    agreement = headers.index("codes agreement ↑")
    assert rows[0][agreement] == "exact" and all(0 <= float(row[agreement].split()[0]) <= 1 for row in rows[1:])
    assert "WER/CER not measured" in result["notes"]
    assert "| fast |" in pathlib.Path(result["report"]).read_text()
    for bad in ((["fast"], 99), (["slowest"], 1), ([], 1)):
        with pytest.raises(gr.Error):
            benchmark_tab.quality(studio, [], *bad, False)


def test_model_details_show_precision_and_licence(studio):
    details = model_tab.model_details(studio)
    assert "cpu_fp32" in details and "licence" in details
    assert "backbone compute: as built" in details          # an fp32 folder has no int4 MatMuls to choose for
    assert "ready" in model_tab.model_bar(studio)
    fp32_choice = {"compute": "fp32: int4 weights dequantized at load (measured faster)", "added_mb": 1680.0,
                   "rss_added_mb": 3300.0, "probe_s": {"int4": 2.47, "fp32": 2.11}}
    # issue 19: a graph run as built added no weights, and says nothing of "0 MB"
    as_built = model_tab.backbone_compute({"compute": "as built", "added_mb": 0.0, "choice": "as built",
                                           "fidelity": {"cosine": 1.0, "agreement": 1.0}})
    assert "0 MB" not in as_built and "cosine 1.0000" in as_built
    eight_bit = model_tab.backbone_compute({"compute": "int8-row: ...", "added_mb": 448.7, "choice": "int8-row",
                                            "fidelity": None})
    assert "449 MB of 8-bit weights" in eight_bit and "fidelity not measured" in eight_bit
    line = model_tab.backbone_compute(fp32_choice)
    assert "1680 MB of fp32 weights" in line and "3300 MB" in line and "int4 2.47 s, fp32 2.11 s" in line


@pytest.mark.parametrize("fmt, rate", [("WAV", 8000), ("FLAC", 48000), ("OGG", 22050), ("MP3", 44100)])
def test_reference_formats_and_rates(studio, tmp_path, fmt, rate):
    path = tmp_path / f"reference.{fmt.lower()}"
    sf.write(path, speech_like(2.0, rate, seed=1, channels=2).T, rate, format=fmt)
    note = clone_tab.reference_note(studio, str(path))
    assert note.startswith("Reference: 2.") and f"{rate} Hz" in note and "2 channels" in note


def test_background_load_and_two_models_side_by_side(studio, tiny_fp32_folder, tmp_path):
    from omnivoice_demo.engine.loop import OmniVoiceEngine

    manager = ModelManager(cache_dir=tmp_path / "cache", offline=True)
    made_active: list[str] = []   # a front end's subscription (the Wyoming server's warm-up)
    manager.on_active(lambda loaded: made_active.append(loaded.label))
    manager.on_active(lambda loaded: 1 / 0)   # a failing subscriber is logged, never fails a load
    assert manager.start_load(str(tiny_fp32_folder))  # precision: the folder's own
    assert not manager.start_load(str(tiny_fp32_folder)) or not manager.loading  # one load at a time
    manager.wait(60)
    assert manager.status.state == "ready", manager.status
    first = manager.get()
    assert first.precision == "fp32" and first.engine.profile == "cpu_fp32"
    manager.add(OmniVoiceEngine(tiny_fp32_folder, verify="none"), label="second copy")
    two = Studio(models=manager, voices=studio.voices, out_dir=tmp_path / "out")
    result = benchmark_tab.benchmark(two, [first.label, "second copy"], "short", 1, 1)
    assert [r["model"] for r in result["rows"]] == [first.label, "second copy"]
    assert "second copy" in model_tab.model_details(two)
    manager.set_active(first.label)
    manager.set_active(first.label)   # already the active one: not made active again
    manager.unload(first.label)
    assert manager.active == "second copy"
    assert made_active == [first.label, "second copy", first.label, "second copy"]


# --- settings from GenerationConfig, errors, codes file, assets -----------------------------

def test_controls_are_built_from_generation_config():
    from omnivoice_demo.ui.control_specs import control
    from omnivoice_demo.ui.speed_controls import APP_DEFAULTS

    with gr.Blocks():
        built = controls.generation_controls("t", with_voice=True)
    assert "preprocess_prompt" not in built  # applied when cloning: the Clone tab's own checkbox
    for name in controls.tab_settings():
        setting, shown, widget = GenerationConfig.setting(name), control(name), built[name]
        assert widget.elem_id == "t-" + name.replace("_", "-") and widget.label == shown.label, name
        if isinstance(widget, gr.Slider):
            assert widget.minimum == (setting.low if shown.low is None else shown.low), name
            assert widget.maximum == (setting.high if shown.high is None else shown.high), name
            assert widget.value == GenerationConfig.default(name), name
        elif isinstance(widget, gr.Checkbox):  # the app starts with sentence streaming on (speed_controls)
            assert widget.value == APP_DEFAULTS.get(name, GenerationConfig.default(name)), name
    assert set(controls.advanced_settings()) == {n for n in controls.tab_settings()
                                                 if control(n).advanced}
    assert sorted(controls.api_settings()) == sorted(controls.tab_settings())


def test_control_values_make_a_validated_config():
    request = controls.generation_request({"language": "Auto", "gender": "male", "instruct": "low pitch",
                                           "num_step": 8.0, "duration": 0, "seed": 7, "randomize": False,
                                           "denoise": False, "voice": "(none)"})
    assert request.language is None and request.instruct == "male, low pitch"
    assert request.config == GenerationConfig(num_step=8, seed=7, denoise=False)
    assert type(request.config.num_step) is int and request.config.duration is None
    drawn = controls.generation_request({"seed": 7, "randomize": True}).config.seed
    assert 0 <= drawn < 2**31
    with pytest.raises(InvalidInput) as excinfo:
        controls.generation_request({"guidance_scale": 99})
    assert excinfo.value.param == "guidance_scale"


@pytest.mark.parametrize("raised, shown, hidden", [
    (ValueError("operands could not be broadcast together"), "Internal error", "operands"),
    (ZeroDivisionError("division by zero"), "Internal error", "division"),
    (ModelFolderError("tokenizer.json is missing from /models/x"), "tokenizer.json is missing", "Internal error"),
])
def test_only_our_errors_are_shown_as_the_users_mistake(studio, monkeypatch, caplog, raised, shown, hidden):
    def broken(*args, **kwargs):
        raise raised

    monkeypatch.setattr(studio.models.get().engine, "prepare", broken)
    with caplog.at_level(logging.ERROR), pytest.raises(gr.Error) as excinfo:
        _run(speak_tab.speak(studio, "Hello", dict(FAST), []))
    assert shown in _error(excinfo) and hidden not in _error(excinfo)
    logged = [r for r in caplog.records if r.exc_info is not None]
    assert bool(logged) == (not isinstance(raised, OmniVoiceError))  # bugs are logged with their traceback


def test_codes_file_round_trip_and_no_pickle(tmp_path):
    chunks = [np.arange(16).reshape(8, 2), np.full((8, 3), 1023)]
    path = save_codes(tmp_path / "c.codes.npz", chunks, {"seed": 3})
    codes = load_codes(path)
    assert codes.shape == (8, 5) and codes.dtype == np.int64
    np.testing.assert_array_equal(codes[:, :2], chunks[0])
    with np.load(path, allow_pickle=False) as data:
        meta = json.loads(str(data["meta"]))
        assert list(data["chunk_frames"]) == [2, 3]
    assert meta["format"] == "omnivoice-codes" and meta["seed"] == 3
    pickled = tmp_path / "pickled.npz"
    np.savez(pickled, codes=np.array([{"x": 1}], dtype=object))
    with pytest.raises(InvalidInput) as excinfo:
        load_codes(pickled)
    assert "not a codes file" in str(excinfo.value)


def test_assets_are_found_from_the_checkout():
    assert ".ov-progress" in assets.css() and "data-ov-chunk" in assets.chunk_player_js()
    assert assets.examples("speak") and assets.examples("no such tab") == []
