"""The speech recogniser: Whisper on ONNX Runtime against transformers on the same random weights.

A small random Whisper with Whisper's real tokenizer (from the openai-whisper
package's ``multilingual.tiktoken``) is built with ``convert.whisper_checkpoint``
and exported with ``convert.whisper``; the recogniser's greedy tokens must equal
``WhisperForConditionalGeneration.generate`` and its text the reference's
``pipeline("automatic-speech-recognition")`` on the same audio.
"""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import subprocess
import sys

import numpy as np
import pytest
import soundfile

from omnivoice_demo.asr import LazyRecognizer, SpeechRecognizer
from omnivoice_demo.asr.features import log_mel
from omnivoice_demo.asr.folder import RECOGNIZER_MANIFEST
from omnivoice_demo.asr.source import resolve_recognizer
from omnivoice_demo.errors import InvalidInput, ModelFolderError, ModelNotAvailable, one_line
from omnivoice_demo.audio.resample import resample
from omnivoice_demo.storage.voice_file import Voice
from tests.support.signals import speech_like

MAX_LENGTH = 40  # tokens per window in the test model (the released 448 makes the tests slow)
REPO = "someone/whisper-test-onnx"


@pytest.fixture(scope="session")
def whisper_checkpoint(tmp_path_factory) -> pathlib.Path:
    from convert.whisper_checkpoint import build_checkpoint

    return build_checkpoint("test", tmp_path_factory.mktemp("whisper") / "ckpt", seed=0, max_length=MAX_LENGTH)


@pytest.fixture(scope="session")
def recognizer_folder(whisper_checkpoint, tmp_path_factory) -> pathlib.Path:
    from convert.whisper import convert_whisper

    return convert_whisper(whisper_checkpoint, tmp_path_factory.mktemp("whisper") / "onnx", ("fp32", "int8"))


@pytest.fixture(scope="session")
def recognizer(recognizer_folder) -> SpeechRecognizer:
    return SpeechRecognizer(recognizer_folder, precision="fp32", threads=2)


@pytest.fixture(scope="session")
def reference(whisper_checkpoint):
    import torch
    from transformers import WhisperFeatureExtractor, WhisperForConditionalGeneration

    torch.set_num_threads(2)
    model = WhisperForConditionalGeneration.from_pretrained(str(whisper_checkpoint)).eval()
    return model, WhisperFeatureExtractor.from_pretrained(str(whisper_checkpoint))


def generate_tokens(reference, wav_16k: np.ndarray, **kwargs) -> list[int]:
    """The whole sequence of ``generate``: the prompt (start, language, task, no-timestamps), then the new tokens."""
    import torch

    model, extractor = reference
    features = extractor(wav_16k, sampling_rate=16000, return_tensors="pt").input_features
    with torch.no_grad():
        return model.generate(features, return_dict_in_generate=True, **kwargs).sequences[0].tolist()


def clip(seconds: float, rate: int, seed: int) -> np.ndarray:
    return speech_like(seconds, rate, seed=seed)[0]


# --- the front end ---------------------------------------------------------------------


@pytest.mark.parametrize("seconds,n_mels", [(1.3, 80), (29.99, 80), (7.0, 128), (31.0, 80)])
def test_log_mel_equals_the_feature_extractor(seconds, n_mels):
    from transformers import WhisperFeatureExtractor

    wav = clip(seconds, 16000, seed=int(seconds))
    expected = WhisperFeatureExtractor(feature_size=n_mels)(wav, sampling_rate=16000, return_tensors="np")
    ours = log_mel(wav, n_mels=n_mels)
    assert ours.shape == expected.input_features[0].shape == (n_mels, 3000)
    # transformers computes the STFT in float32 (torch), ours in float64: a few 1e-5 apart in the log domain
    np.testing.assert_allclose(ours, expected.input_features[0], atol=1e-4)
    assert np.abs(ours - expected.input_features[0]).mean() < 1e-6


# --- parity with transformers ------------------------------------------------------------


@pytest.mark.parametrize("seconds,rate", [(2.5, 16000), (11.0, 24000), (44.0, 16000)])
def test_greedy_tokens_equal_generate(recognizer, reference, seconds, rate):
    audio = clip(seconds, rate, seed=int(seconds))
    if seconds > 30:
        audio[int(27.5 * rate):int(28.0 * rate)] = 0.0  # a pause where the first window must end
    transcript = recognizer.transcribe(audio, rate)
    wav = audio if rate == 16000 else resample(audio[None], rate, 16000)[0]
    windows = recognizer.windows(wav)
    assert len(windows) == (2 if seconds > 30 else 1)
    if seconds > 30:
        assert 27.5 * 16000 <= windows[0].shape[0] <= 28.0 * 16000
        assert sum(w.shape[0] for w in windows) == wav.shape[0]
    texts = []
    for window, tokens in zip(windows, transcript.tokens):
        expected = generate_tokens(reference, window)
        assert expected[0] == recognizer.start_id and expected[2:4] == [recognizer.transcribe_id,
                                                                         recognizer.no_timestamps_id]
        assert list(tokens) == expected[4:], "greedy tokens differ from transformers' generate"
        texts.append(recognizer.text_of(expected[4:]))
    first = generate_tokens(reference, windows[0])
    assert transcript.language == recognizer.id_to_lang[first[1]]
    assert transcript.text == " ".join(t for t in texts if t)
    assert transcript.audio_seconds == pytest.approx(wav.shape[0] / 16000)


def test_text_equals_the_reference_pipeline(recognizer, whisper_checkpoint):
    """The reference's call: pipeline(...)({"array": wav_24k, "sampling_rate": 24000})["text"].strip(),
    greedy.  (The pipeline of transformers 5 adds num_beams=5 unless the checkpoint's generation config
    sets num_beams; the recogniser decodes greedily, five times cheaper on a CPU.)"""
    from transformers import pipeline

    asr = pipeline("automatic-speech-recognition", model=str(whisper_checkpoint), device="cpu",
                   generate_kwargs={"num_beams": 1})
    audio = clip(6.0, 24000, seed=11)
    expected = asr({"array": audio.copy(), "sampling_rate": 24000})["text"].strip()
    assert recognizer.transcribe(audio, 24000).text == expected
    assert expected  # a random model still says something: the comparison is not of two empty strings


def test_given_language_skips_detection(recognizer, reference):
    wav = clip(4.0, 16000, seed=4)
    transcript = recognizer.transcribe(wav, 16000, language="de")
    expected = generate_tokens(reference, wav, language="de", task="transcribe")
    assert expected[1] == recognizer.lang_to_id["<|de|>"] and transcript.language == "de"
    assert list(transcript.tokens[0]) == expected[4:]
    with pytest.raises(InvalidInput, match="Klingon"):
        recognizer.transcribe(wav, 16000, language="Klingon")


def test_int8_graphs_transcribe(recognizer_folder):
    rec = SpeechRecognizer(recognizer_folder, precision="int8", threads=1)
    transcript = rec.transcribe(clip(3.0, 16000, seed=3), 16000)
    assert transcript.language is not None and len(transcript.tokens[0]) >= 1


def test_bad_audio_is_refused_before_work(recognizer):
    for audio, rate, words in [(np.zeros(0, np.float32), 16000, "shape"), (np.zeros(16000, np.int16), 16000, "floating"),
                               (np.full(16000, np.nan, np.float32), 16000, "NaN"),
                               (np.zeros(16000, np.float32), 12.5, "sample_rate")]:
        with pytest.raises(InvalidInput, match=words):
            recognizer.transcribe(audio, rate)
    short_limit = SpeechRecognizer(recognizer.folder, precision="fp32", max_seconds=5)
    with pytest.raises(InvalidInput, match="limit is 5 s"):
        short_limit.transcribe(np.zeros(16000 * 6, np.float32), 16000)


# --- the folder -----------------------------------------------------------------------------


def test_folder_checks_name_the_problem(recognizer_folder, tmp_path):
    copy = tmp_path / "rec"
    shutil.copytree(recognizer_folder, copy)
    manifest = json.loads((copy / RECOGNIZER_MANIFEST).read_text())
    assert "onnx/encoder_model.onnx" in manifest["files"] and "tokenizer.json" in manifest["files"]
    with pytest.raises(ModelFolderError, match="has no fp16 graphs .*fp32, int8"):
        SpeechRecognizer(copy, precision="fp16")
    graph = copy / "onnx" / "decoder_model.onnx"
    data = bytearray(graph.read_bytes())
    data[len(data) // 2] ^= 0xFF
    graph.write_bytes(bytes(data))
    with pytest.raises(ModelFolderError, match="decoder_model.onnx .*sha256"):
        SpeechRecognizer(copy, precision="fp32", verify="sha256")


# --- the Hub and the cache ------------------------------------------------------------------


@pytest.fixture(scope="module")
def hub(recognizer_folder):
    from tests.support.hub_server import HubServer

    with HubServer() as server:
        server.add_repo(REPO, recognizer_folder)
        yield server


@pytest.fixture
def hf_env(hub, tmp_path, monkeypatch):
    import huggingface_hub.constants

    # as if this process had started without HF_HUB_OFFLINE=1 (conftest sets it before the import)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setenv("HF_ENDPOINT", hub.url)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
    monkeypatch.setenv("OMNIVOICE_CACHE", str(tmp_path / "ours"))
    for name in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_TOKEN", "TRANSFORMERS_OFFLINE"):
        monkeypatch.delenv(name, raising=False)
    hub.reset_log()
    return tmp_path


def downloaded(hub) -> set[str]:
    return {r.path.split("/resolve/", 1)[1].split("/", 1)[1] for r in hub.downloads(REPO) if r.status in (200, 206)}


def test_hub_download_takes_one_precision_then_works_offline(hf_env, hub):
    events = []
    resolved = resolve_recognizer(REPO, "int8", progress=events.append)
    got = downloaded(hub)
    assert "onnx/encoder_model_int8.onnx" in got and "tokenizer.json" in got
    assert not any(p.endswith("model.onnx") and "_int8" not in p for p in got), "fp32 graphs were downloaded"
    assert {e.stage for e in events} >= {"resolve", "download", "ready"}
    assert any(e.stage == "download" and e.bytes_total and e.bytes_done == e.bytes_total for e in events)
    assert resolved.verified == "sha256" and resolved.repo_id == REPO
    assert SpeechRecognizer(resolved.path, precision="int8").transcribe(clip(2.0, 16000, 1), 16000).language

    hub.reset_log()
    offline = resolve_recognizer(REPO, "int8", offline=True)
    assert offline.path == resolved.path and not hub.requests  # nothing asked of the Hub


def test_cold_cache_offline_says_what_to_download_in_one_line(hf_env, hub):
    with pytest.raises(ModelNotAvailable) as caught:
        resolve_recognizer(REPO, "int8", offline=True)
    line = one_line(caught.value)
    assert REPO in line and "download" in line and "type the transcript" in line
    assert "\n" not in str(caught.value) and not hub.requests


def test_lazy_recognizer_loads_once_on_first_use(recognizer_folder):
    lazy = LazyRecognizer(str(recognizer_folder), "fp32", threads=1)
    assert not lazy.loaded
    first = lazy.transcribe(clip(2.0, 16000, 2), 16000)
    assert lazy.loaded and lazy.get() is lazy.get()
    assert first.text == SpeechRecognizer(recognizer_folder, "fp32").transcribe(clip(2.0, 16000, 2), 16000).text


# --- cloning without a transcript ---------------------------------------------------------


def test_clone_without_transcript_uses_the_recognizer(tiny_fp32_folder, recognizer_folder, recognizer, tmp_path):
    from omnivoice_demo.audio import processing as audio_ops
    from omnivoice_demo.engine.loop import OmniVoiceEngine
    from omnivoice_demo.text.prompt import add_punctuation

    lazy = LazyRecognizer(str(recognizer_folder), "fp32", threads=1)
    engine = OmniVoiceEngine(tiny_fp32_folder, recognizer=lazy)
    ref = speech_like(3.0, 44100, seed=5)
    typed = engine.clone_voice(ref, 44100, transcript="words I said")
    assert typed.transcript_source == "typed" and typed.language is None
    assert not lazy.loaded, "a typed transcript must not load the recogniser"

    voice = engine.clone_voice(ref, 44100)
    processed, _ = audio_ops.prepare_reference(ref, 44100, transcript_given=False)
    heard = recognizer.transcribe(processed[0], 24000)
    assert voice.transcript_source == "recognised" and voice.language == heard.language
    assert voice.transcript == add_punctuation(heard.text)
    result = engine.generate("Some new words.", voice=voice, num_step=2, seed=1)
    assert result.audio.size > 0

    path = voice.save(tmp_path / "v.npz")
    again = Voice.load(path)
    assert (again.transcript_source, again.language, again.transcript) == ("recognised", heard.language,
                                                                          voice.transcript)


def test_old_voice_files_load_as_typed(tmp_path):
    codes = np.zeros((8, 5), np.int64)
    meta = {"format_version": 1, "transcript": "Hello.", "rms": 0.1, "name": "old"}
    path = tmp_path / "old.npz"
    with open(path, "wb") as handle:
        np.savez(handle, codes=codes, meta=np.array(json.dumps(meta)))
    voice = Voice.load(path)
    assert voice.transcript_source == "typed" and voice.language is None and voice.transcript == "Hello."


def test_clone_offline_with_cold_cache_says_what_to_download(tiny_fp32_folder, hf_env):
    from omnivoice_demo.engine.loop import OmniVoiceEngine

    engine = OmniVoiceEngine(tiny_fp32_folder, recognizer=LazyRecognizer(REPO, "int8", offline=True))
    with pytest.raises(ModelNotAvailable) as caught:
        engine.clone_voice(speech_like(2.0, 24000, seed=1), 24000)
    assert REPO in one_line(caught.value) and "download" in one_line(caught.value)


def test_cli_synth_clones_without_ref_text(tiny_fp32_folder, recognizer_folder, tmp_path):
    ref = tmp_path / "me.wav"
    soundfile.write(ref, speech_like(2.5, 44100, seed=3)[0], 44100)
    out = tmp_path / "out.wav"
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    done = subprocess.run([sys.executable, "-m", "omnivoice_demo", "synth", "--model", str(tiny_fp32_folder),
                           "--text", "Cloned without typing.", "--ref-audio", str(ref), "--asr-model",
                           str(recognizer_folder), "--asr-precision", "fp32", "--steps", "2",
                           "--output", str(out)], capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr
    assert "recognised transcript (" in done.stderr and out.is_file()


# --- the Clone tab ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def clone_studio(tiny_fp32_folder, recognizer_folder, tmp_path_factory):
    from omnivoice_demo.studio.models import ModelManager
    from omnivoice_demo.studio.state import Studio
    from omnivoice_demo.studio.voices import VoiceLibrary

    root = tmp_path_factory.mktemp("studio")
    manager = ModelManager(cache_dir=root / "cache", offline=True)
    manager.load(str(tiny_fp32_folder), "fp32")
    manager.get().engine.recognizer = LazyRecognizer(str(recognizer_folder), "fp32", threads=1)
    return Studio(models=manager, voices=VoiceLibrary(root / "voices"), out_dir=root / "out", min_update_interval=0.0)


def test_clone_tab_recognises_on_upload_then_clones(clone_studio, recognizer, tmp_path):
    import gradio as gr

    from omnivoice_demo.audio import processing as audio_ops
    from omnivoice_demo.ui.tabs import clone as clone_tab

    path = tmp_path / "me.wav"
    soundfile.write(path, speech_like(4.0, 44100, seed=8)[0], 44100)
    updates = list(clone_tab.transcript_updates(clone_studio, str(path)))
    assert updates[0][1]["placeholder"] == clone_tab.RECOGNISING and updates[0][1]["interactive"] is False
    wav, rate = soundfile.read(path, dtype="float32")
    prepared, _ = audio_ops.prepare_reference(wav[None], rate, transcript_given=False)
    expected = recognizer.transcribe(prepared[0], 24000).text
    assert updates[-1][1]["value"] == expected and updates[-1][1]["interactive"] is True
    assert expected

    # the check order is clip -> transcript -> consent; an empty transcript is recognised at cloning time
    with pytest.raises(gr.Error, match="Record or upload"):
        list(clone_tab.clone(clone_studio, None, "", False, "Hello.", {"num_step": 2}, True, []))
    with pytest.raises(gr.Error, match="I have the right"):
        list(clone_tab.clone(clone_studio, str(path), "", False, "Hello.", {"num_step": 2}, True, []))
    voice, _ = clone_tab.clone_voice(clone_studio, str(path), "", True)
    assert voice.transcript_source == "recognised" and voice.language
    assert voice.transcript.startswith(expected.rstrip("."))
    typed, _ = clone_tab.clone_voice(clone_studio, str(path), "Words I typed", True)
    assert typed.transcript_source == "typed" and typed.transcript == "Words I typed."


def test_clone_tab_warns_about_a_short_clip(clone_studio, tmp_path):
    from omnivoice_demo.ui.tabs import clone as clone_tab

    path = tmp_path / "short.wav"
    soundfile.write(path, speech_like(2.0, 24000, seed=2)[0], 24000)
    assert "Under 3 s" in clone_tab.reference_note(clone_studio, str(path))
    path = tmp_path / "fine.wav"
    soundfile.write(path, speech_like(5.0, 24000, seed=2)[0], 24000)
    assert "Under 3 s" not in clone_tab.reference_note(clone_studio, str(path))


# --- the merged decoder of the Hub's exports -------------------------------------------------------


def merge_decoders(first_path: pathlib.Path, next_path: pathlib.Path, out_path: pathlib.Path) -> None:
    """``decoder_model_merged.onnx`` as the Hub's exports have it: one graph with ``use_cache_branch``
    choosing (an If node) between the decoder with past (then) and the one without (else)."""
    import onnx
    from onnx import TensorProto, helper

    first, nxt = onnx.load(str(first_path)).graph, onnx.load(str(next_path)).graph
    outer = {i.name for i in first.input} | {i.name for i in nxt.input}

    def branch(graph, prefix: str, extra_outputs=()):
        rename = {}
        for node in graph.node:
            for i, name in enumerate(node.output):
                rename[name] = prefix + name
        for init in graph.initializer:
            rename[init.name] = prefix + init.name
        nodes = []
        for node in graph.node:
            copy = onnx.NodeProto()
            copy.CopyFrom(node)
            copy.name = prefix + node.name
            inputs, outputs = [rename.get(n, n) for n in node.input], [rename[n] for n in node.output]
            del copy.input[:], copy.output[:]
            copy.input.extend(inputs)
            copy.output.extend(outputs)
            nodes.append(copy)
        inits = []
        for init in graph.initializer:
            copy = onnx.TensorProto()
            copy.CopyFrom(init)
            copy.name = rename[init.name]
            inits.append(copy)
        outputs = []
        for out in graph.output:
            value = helper.make_tensor_value_info(rename.get(out.name, out.name), out.type.tensor_type.elem_type, None)
            outputs.append(value)
        for name in extra_outputs:  # cross-attention cache passed through
            nodes.append(helper.make_node("Identity", [name], [prefix + name + "_out"]))
            outputs.append(helper.make_tensor_value_info(prefix + name + "_out", TensorProto.FLOAT, None))
        return helper.make_graph(nodes, prefix + "branch", [], outputs, inits)

    cross = [i.name for i in nxt.input if ".encoder." in i.name]
    with_past = branch(nxt, "past_", cross)
    # order the then-branch outputs like the else-branch: logits, then per layer decoder k/v, encoder k/v
    names = [o.name for o in first.output]
    by_name = {o.name.replace("past_", "", 1).replace("past_key_values", "present").replace("_out", ""): o
               for o in with_past.output}
    ordered = [by_name[n] for n in names]
    del with_past.output[:]
    with_past.output.extend(ordered)
    without = branch(first, "first_")
    use_cache = helper.make_tensor_value_info("use_cache_branch", TensorProto.BOOL, [1])
    cond = helper.make_node("Squeeze", ["use_cache_branch"], ["use_cache_scalar"])
    node = helper.make_node("If", ["use_cache_scalar"], names, then_branch=with_past, else_branch=without)
    inputs = list(first.input) + [i for i in nxt.input if i.name not in {x.name for x in first.input}] + [use_cache]
    graph = helper.make_graph([cond, node], "merged", inputs, list(first.output))
    model = helper.make_model(graph, opset_imports=onnx.load(str(first_path)).opset_import)
    onnx.save(model, str(out_path))
    assert outer  # both graphs' inputs are the merged graph's inputs


def test_merged_decoder_of_the_hub_exports_gives_the_same_tokens(recognizer_folder, recognizer, tmp_path):
    from omnivoice_demo.asr.folder import REQUIRED_CONFIG

    merged = tmp_path / "merged"
    (merged / "onnx").mkdir(parents=True)
    for name in REQUIRED_CONFIG:
        shutil.copy2(recognizer_folder / name, merged / name)
    shutil.copy2(recognizer_folder / "onnx" / "encoder_model.onnx", merged / "onnx" / "encoder_model.onnx")
    merge_decoders(recognizer_folder / "onnx" / "decoder_model.onnx",
                   recognizer_folder / "onnx" / "decoder_with_past_model.onnx",
                   merged / "onnx" / "decoder_model_merged.onnx")
    rec = SpeechRecognizer(merged, precision="fp32")
    assert rec.merged
    audio = clip(5.0, 16000, seed=5)
    assert rec.transcribe(audio, 16000).tokens == recognizer.transcribe(audio, 16000).tokens
