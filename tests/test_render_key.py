"""The render key (engine/render_key.py): it changes with each input that decides the audio, and with nothing else.

Table-driven: each row changes one thing about a request (or the engine that runs it) and says whether the key
must change.  The rows that must not change it are what a person resuming work elsewhere expects to be reused:
a voice under another name or file, the language by name or code, the same compute under another name, the
same model folder at another path.
"""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from omnivoice_demo.constants import SAMPLE_RATE
from omnivoice_demo.engine import render_key as keys
from omnivoice_demo.settings.generation import GenerationConfig
from omnivoice_demo.storage.manifest import (MANIFEST_NAME, content_digest, load_manifest, model_content,
                                               write_manifest)
from omnivoice_demo.storage.voice_file import Voice

TEXT = "Hello there, I have 12 apples."
#: numbers read as words (WeTextProcessing, in the dev environment), so the normaliser decides the text
BASE = GenerationConfig(num_step=2, seed=7, normalize_text=True)


@pytest.fixture(scope="module")
def voices(engine, tmp_path_factory):
    from tests.support.signals import speech_like

    one = engine.clone_voice(speech_like(1.5, SAMPLE_RATE, seed=3), SAMPLE_RATE, transcript="A voice.", name="one")
    other = engine.clone_voice(speech_like(1.5, SAMPLE_RATE, seed=4), SAMPLE_RATE, transcript="A voice.", name="two")
    folder = tmp_path_factory.mktemp("voices")
    return {"one": one, "other": other, "renamed": Voice(codes=one.codes.copy(), transcript=one.transcript,
                                                            rms=one.rms, name="someone else"),
            "retold": Voice(codes=one.codes.copy(), transcript="Another transcript.", rms=one.rms, name="one"),
            "file": str(one.save(folder / "elsewhere.npz"))}


def _request(**changes) -> dict:
    request = dict(text=TEXT, language="en", instruct=None, voice="one", config=BASE,
                   pronunciations=None, audio_format="wav")
    request.update(changes)
    return request


def _key(engine, voices, request: dict) -> str:
    request = dict(request)
    fmt = request.pop("audio_format")
    voice = request.pop("voice")
    plan = engine.prepare(request.pop("text"), voice=voices[voice] if voice else None, **request)
    return engine.render_key(plan, fmt)


CHANGES = [
    # (what, the request's changes, whether the key changes); what the engine brings (its model, its compute, its
    # threads) is changed by opening another engine: test_the_key_follows_the_model_and_compute_that_opened_it
    ("the text", dict(text="Hello there, I have 13 apples."), True),
    ("the text through the lexicon", dict(pronunciations={"apples": "[AE1 P AH0 L Z]"}), True),
    ("the text read without normalisation", dict(config=BASE.replace(normalize_text=False)), True),
    ("the text as SSML with a pause", dict(text=f"<speak>{TEXT}<break time=\"300ms\"/>Yes.</speak>"), True),
    ("the language", dict(language="de"), True),
    ("the instruct", dict(instruct="female"), True),
    ("the voice's codes", dict(voice="other"), True),
    ("the voice's transcript", dict(voice="retold"), True),
    ("no voice", dict(voice=None), True),
    ("a generation setting", dict(config=BASE.replace(num_step=3)), True),
    ("the seed", dict(config=BASE.replace(seed=8)), True),
    ("the delivery format", dict(audio_format="flac"), True),
    # nothing else
    ("the voice under another name", dict(voice="renamed"), False),
    ("the voice from a file elsewhere", dict(voice="file"), False),
    ("the language by its name", dict(language="English"), False),
]


@pytest.mark.parametrize("what, request_changes, changes", CHANGES, ids=[c[0] for c in CHANGES])
def test_the_key_changes_with_each_input_and_nothing_else(engine, voices, what, request_changes, changes):
    voices = dict(voices, file=Voice.load(voices["file"]) if request_changes.get("voice") == "file" else None,
                  **{k: v for k, v in voices.items() if k != "file"})
    base = _key(engine, voices, _request())
    assert _key(engine, voices, _request()) == base   # the same request, the same key
    assert (_key(engine, voices, _request(**request_changes)) != base) is changes, what


def _other_weights(folder, destination):
    """A copy of ``folder`` whose heads' weights differ by one value, with its manifest rewritten: another model."""
    import onnx
    from onnx import numpy_helper

    copy = shutil.copytree(folder, destination)
    heads = copy / "audio_heads_decoder.onnx"
    model = onnx.load(str(heads))
    initializer = max(model.graph.initializer, key=lambda t: int(np.prod(t.dims)))
    values = numpy_helper.to_array(initializer).copy()
    values.flat[0] += 1.0
    initializer.CopyFrom(numpy_helper.from_array(values, initializer.name))
    onnx.save(model, str(heads))
    manifest = {k: v for k, v in load_manifest(copy).items() if k not in ("files", "content_sha256")}
    write_manifest(copy, manifest)
    return copy


def test_the_key_follows_the_model_and_compute_that_opened_it(tiny_fp32_folder, tiny_int4_folder, tiny_checkpoint,
                                                             tmp_path):
    """Each engine here is really opened (no attribute of an engine is set by hand): the key changes with the
    model's weights and the backbone compute that runs, and not with the folder's path or the threads (the same
    compute asked for by another name: test_the_same_compute_under_another_name_is_one_identity)."""
    from omnivoice_demo.engine.loop import OmniVoiceEngine

    def key(folder, **options) -> str:
        engine = OmniVoiceEngine(folder, verify="none", calibrate=False, **options)
        return engine.render_key(engine.prepare(TEXT, language="en", config=BASE), "wav")

    base = key(tiny_fp32_folder)
    assert key(_other_weights(tiny_fp32_folder, tmp_path / "other")) != base, "the model's weights"
    assert key(shutil.copytree(tiny_fp32_folder, tmp_path / "moved")) == base, "the same model elsewhere"
    assert key(tiny_fp32_folder, threads=1) == key(tiny_fp32_folder, threads=2) == base, "other threads"
    int4 = key(tiny_int4_folder, backbone="int4")
    assert int4 != base, "another folder"
    rebuilt = key(tiny_int4_folder, backbone="int8-row")
    assert rebuilt != int4, "the backbone compute"
    assert key(tiny_int4_folder, backbone="int8-row", backbone_weights=tiny_checkpoint) != rebuilt, \
        "the original weights of a rebuild"


def test_the_provider_is_part_of_the_compute():
    """No CUDA here to open an engine on: the identity the engine keys by is checked for the provider directly."""
    choice = {"mode": "auto", "choice": "int8-row", "source": "int4"}
    assert keys.compute_identity(choice, "cuda") != keys.compute_identity(choice, "cpu")
    assert keys.compute_identity(choice, "cpu").endswith(" on cpu")


@pytest.mark.parametrize("what, patch", [("the normaliser's version", ("PORT_VERSION", 99)),
                                         ("the engine's output version", ("OUTPUT_VERSION", 99))])
def test_the_key_changes_with_the_normaliser_and_the_engines_version(engine, voices, monkeypatch, what, patch):
    from omnivoice_demo.text import normalize

    base = _key(engine, voices, _request())
    monkeypatch.setattr(normalize if patch[0] == "PORT_VERSION" else keys, *patch)
    assert _key(engine, voices, _request()) != base, what


def test_the_result_carries_the_key_of_what_ran(engine, voices):
    plan = engine.prepare(TEXT, language="en", voice=voices["one"], config=BASE)
    result = engine.generate(TEXT, language="en", voice=voices["one"], config=BASE)
    assert result.render_key == engine.render_key(plan) != engine.render_key(plan, "wav")


def test_the_same_compute_under_another_name_is_one_identity():
    measured = {"mode": "auto", "choice": "as built", "source": "int4",
                "compute": "int4 (measured: the fastest that passes the gate)"}
    named = {"mode": "int4", "choice": "as built", "source": "int4", "compute": "as built"}
    assert keys.compute_identity(measured, "cpu") == keys.compute_identity(named, "cpu") == "int4 on cpu"
    auto_8bit = {"mode": "auto", "choice": "int8-row", "source": "int4", "compute": "int8-row ... (measured)"}
    named_8bit = {"mode": "int8-row", "choice": "int8-row", "source": "int4", "compute": "int8-row ..."}
    assert keys.compute_identity(auto_8bit, "cpu") == keys.compute_identity(named_8bit, "cpu") != "int4 on cpu"


def test_the_models_content_is_kept_in_the_manifest_and_the_same_for_a_copy(tiny_fp32_folder, tmp_path):
    manifest = load_manifest(tiny_fp32_folder)
    assert manifest["content_sha256"] == content_digest(manifest) == model_content(manifest)
    copy = shutil.copytree(tiny_fp32_folder, tmp_path / "elsewhere")
    assert model_content(load_manifest(copy)) == model_content(manifest)
    older = {k: v for k, v in manifest.items() if k != "content_sha256"}   # a folder written before: derived
    assert model_content(older) == manifest["content_sha256"]
    graph = next(rel for rel in manifest["files"] if rel.startswith("llm_decoder.onnx"))
    other = dict(older, files=dict(older["files"], **{graph: dict(older["files"][graph], sha256="f" * 64)}))
    assert model_content(other) != model_content(older)
    readme = dict(older, files=dict(older["files"], **{"README.md": {"size": 1, "sha256": "e" * 64}}))
    assert model_content(readme) == model_content(older)   # what the engine does not load is not the model
    assert (copy / MANIFEST_NAME).is_file()


def test_a_changed_part_is_named():
    before = {"text": "a", "model": "m1", "compute": "int4 on cpu", "engine": 1, "format": "flac"}
    now = dict(before, model="m2", compute="int8-row build v5 on cpu")
    assert keys.changed_parts(before, now) == ["the model's weights", "the backbone compute"]
    assert keys.changed_parts(None, now) == ["made before render keys (an older version): made once again"]


def test_the_apps_voice_cache_keys_on_the_models_content_not_its_label(tiny_fp32_folder, tmp_path, monkeypatch):
    """The Clone tab keeps the voices it made (codes from the model's codec); a model replaced under the same label
    (the same folder name) makes the voice again, the same model reuses it."""
    import soundfile

    from omnivoice_demo.studio import Studio
    from omnivoice_demo.studio.models import ModelManager
    from omnivoice_demo.studio.voices import VoiceLibrary
    from omnivoice_demo.ui.tabs import clone as clone_tab
    from tests.support.signals import speech_like

    manager = ModelManager(cache_dir=tmp_path / "cache", offline=True)
    manager.load(str(tiny_fp32_folder), "fp32")
    studio = Studio(models=manager, voices=VoiceLibrary(tmp_path / "voices"), out_dir=tmp_path / "out",
                    min_update_interval=0.0)
    path = tmp_path / "me.wav"
    soundfile.write(path, speech_like(4.0, 24000, seed=8)[0], 24000)
    first, _ = clone_tab.clone_voice(studio, str(path), "Words I typed", True)
    again, _ = clone_tab.clone_voice(studio, str(path), "Words I typed", True)
    assert again.codes is first.codes                   # made once
    monkeypatch.setattr(manager.get().engine, "model_content", "f" * 64)   # other weights, the same label
    other, _ = clone_tab.clone_voice(studio, str(path), "Words I typed", True)
    assert other.codes is not first.codes               # made again
