"""One vocabulary for every front end (issue 19): presets and their aliases, voice names (saved, then
named design, then path), the voice library's management, and what the HTTP API reads from a request."""

from __future__ import annotations

import json

import numpy as np
import pytest

from omnivoice_demo.settings.generation import GenerationConfig
from omnivoice_demo.errors import InvalidInput
from omnivoice_demo.settings.presets import PRESETS, preset_values
from omnivoice_demo.studio import VoiceLibrary
from omnivoice_demo.studio.vocabulary import DESIGNS, choose_voice, resolve_voice
from omnivoice_demo.storage.voice_file import Voice


def a_voice(frames: int = 10, transcript: str = "Hello there.") -> Voice:
    codes = np.arange(8 * frames, dtype=np.int64).reshape(8, frames) % 1024
    return Voice(codes=codes, transcript=transcript, rms=0.1)


@pytest.mark.parametrize("alias", ["quality", "hd", "HD", " Quality "])
def test_preset_aliases_are_the_reference_preset(alias):
    assert preset_values(alias) == dict(PRESETS["reference"])
    assert GenerationConfig.preset(alias) == GenerationConfig.preset("reference")


def test_an_unknown_preset_lists_presets_and_aliases():
    with pytest.raises(InvalidInput, match=r"reference, balanced, fast \(quality = reference, hd = reference\)"):
        preset_values("turbo")


def test_the_http_api_reads_presets_as_the_ui_and_cli_do():
    from omnivoice_demo.api import speech

    for name in ("reference", "balanced", "fast", "quality", "hd"):
        settings = speech.parse({"input": "Hi.", "preset": name}).settings
        settings.pop("normalize_text")   # the OpenAI route's own default (people type "$4.99" there), no preset's
        assert settings == preset_values(name), name   # "fast" guides every 2nd step here too
    with pytest.raises(InvalidInput, match="Unknown preset 'turbo'"):
        speech.parse({"input": "Hi.", "preset": "turbo"})


def test_the_command_line_takes_the_aliases():
    from omnivoice_demo.cli.main import build_parser
    from omnivoice_demo.settings.generation import config_from_arguments

    for name in ("quality", "hd", "reference"):
        args = build_parser().parse_args(["synth", "--text", "Hi.", "--preset", name])
        assert config_from_arguments(args) == GenerationConfig.preset("reference")


def test_a_name_is_a_built_in_voice_then_a_saved_voice_then_a_path(tmp_path):
    assert choose_voice("alloy", []).kind == "design" and choose_voice("alloy", []).instruct == DESIGNS["alloy"]
    # a built-in name is decided before the saved voices are asked for (issue 57: it never waits on the store)
    asked = []
    assert choose_voice("Alloy", lambda name: asked.append(name) or "alloy").kind == "design" and asked == []
    assert choose_voice("female, low pitch", lambda name: asked.append(name)).kind == "design" and asked == []
    assert choose_voice("Anna", lambda name: asked.append(name) or "Anna").kind == "saved" and asked == ["Anna"]
    assert choose_voice("anna", ["Anna"]).name == "Anna"             # ignoring case
    assert choose_voice("female, low pitch", []).instruct == "female, low pitch"
    assert choose_voice("", []).kind == "auto" and choose_voice({"id": "echo"}, []).kind == "design"
    a_voice().save(tmp_path / "mine.npz")
    for written in ("mine.npz", "mine", str(tmp_path / "mine.npz")):
        chosen = choose_voice(written, [], path_base=tmp_path)
        assert chosen.kind == "path" and chosen.path == (tmp_path / "mine.npz").resolve()
    with pytest.raises(InvalidInput, match="No saved voice or named design is called 'mine.npz'") as excinfo:
        choose_voice("mine.npz", ["Anna"], listed_by="/voices")    # a server never reads a path
    # the voice asked for is named, not every saved voice (issue 57)
    assert "Anna" not in str(excinfo.value) and "/voices lists them and the saved voices" in str(excinfo.value)
    voice, design = resolve_voice("mine", [], lambda name: None, path_base=tmp_path)
    assert design is None and voice.frames == 10


def test_the_library_renames_deletes_exports_and_imports(tmp_path):
    library = VoiceLibrary(tmp_path / "voices")
    library.save(a_voice(), "Anna")
    library.save(a_voice(12), "Bob")
    with pytest.raises(InvalidInput, match="'Bob' exists already"):
        library.rename("Anna", "bob")
    assert library.rename("Anna", "Anne") == "Anne" and library.names() == ["Anne", "Bob"]
    assert library.load("Anne").name == "Anne"
    out = tmp_path / "out"
    out.mkdir()
    npz, about = library.export("Bob", out)
    assert Voice.load(npz).frames == 12 and json.loads(about.read_text())["transcript"] == "Hello there."
    library.delete("Bob")
    assert library.names() == ["Anne"]
    with pytest.raises(InvalidInput, match=r"no saved voice named 'Bob' \(save one"):
        library.delete("Bob")
    assert library.import_file(npz) == "Bob" and library.load("Bob").frames == 12
    with pytest.raises(InvalidInput, match="exists already"):
        library.import_file(npz)
    assert library.import_file(npz, name="Bob again") == "Bob again"
    (tmp_path / "bad.npz").write_bytes(b"not a voice")
    with pytest.raises(InvalidInput):
        library.import_file(tmp_path / "bad.npz")
    leftovers = [p.name for p in (tmp_path / "voices").iterdir() if not p.name.endswith(".npz")]
    assert leftovers == []   # written under temporary names, then renamed: nothing half-written stays


def test_the_http_api_streams_by_default_and_stream_false_is_one_file():
    from omnivoice_demo.api import speech

    assert speech.parse({"input": "Hi."}).stream_format == "audio"       # as OpenAI: no stream_format needed
    assert speech.parse({"input": "Hi.", "stream_format": "sse"}).stream_format == "sse"
    assert speech.parse({"input": "Hi.", "stream": False}).stream_format is None
    assert speech.parse({"input": "Hi.", "stream": True}).stream_format == "audio"   # OpenAI's default (issue 51)
    for body, param in (({"stream": "yes"}, "stream"), ({"stream_format": "mp3"}, "stream_format"),
                        ({"stream": False, "stream_format": "audio"}, "stream")):
        with pytest.raises(InvalidInput) as excinfo:
            speech.parse(dict(body, input="Hi."))
        assert excinfo.value.param == param


@pytest.mark.parametrize("asked, used, clamped", [(0.25, 0.5, True), (0.5, 0.5, False), (1.5, 1.5, False),
                                                  (3.0, 2.0, True), (4.0, 2.0, True)])
def test_openai_speeds_are_clamped_to_the_model_range_and_say_so(asked, used, clamped):
    from omnivoice_demo.api import speech

    parsed = speech.parse({"input": "Hi.", "speed": asked})
    assert parsed.settings["speed"] == used
    assert (parsed.speed_note is not None) == clamped
    if clamped:
        assert parsed.speed_note.startswith(f"{used:g}; asked {asked:g}") and parsed.speed_note.isascii()


@pytest.mark.parametrize("speed", [0.2, 4.5, "fast", True])
def test_speeds_outside_openais_range_are_a_400(speed):
    from omnivoice_demo.api import speech

    with pytest.raises(InvalidInput, match="0.25 to 4") as excinfo:
        speech.parse({"input": "Hi.", "speed": speed})
    assert excinfo.value.param == "speed"


def test_batch_reads_voices_as_every_front_end(tmp_path, monkeypatch):
    from omnivoice_demo.batch.items import read_items

    monkeypatch.setenv("OMNIVOICE_DATA", str(tmp_path / "data"))
    VoiceLibrary().save(a_voice(), "Anna")          # saved in the app: the default --voices
    a_voice().save(tmp_path / "local.npz")
    rows = [{"id": "a", "text": "One.", "voice": "Anna"}, {"id": "b", "text": "Two.", "voice": "alloy"},
            {"id": "c", "text": "Three.", "voice": "local.npz"},
            {"id": "d", "text": "Four.", "voice": "alloy", "instruct": "male"}]
    source = tmp_path / "items.jsonl"
    source.write_text("\n".join(json.dumps(row) for row in rows))
    a, b, c, d = read_items(source)
    assert a.voice == str((tmp_path / "data" / "voices" / "Anna.npz").resolve()) and a.instruct is None
    assert b.voice is None and b.instruct == DESIGNS["alloy"]
    assert c.voice == str((tmp_path / "local.npz").resolve())
    assert d.instruct == "male"                      # the row's own design wins


def test_a_text_batch_skips_comment_lines(tmp_path):
    from omnivoice_demo.batch.items import read_items

    source = tmp_path / "items.txt"
    source.write_text("# chapter one\nFirst line.\n  # a note\nSecond line.\n")
    assert [item.text for item in read_items(source)] == ["First line.", "Second line."]


def test_a_limit_message_names_the_flags_that_raise_it():
    """Issue 19: the command line's limit messages spoke of "this server" and "run the app locally"."""
    from omnivoice_demo.settings.limits import Limits
    from omnivoice_demo.errors import ResourceLimitExceeded

    with pytest.raises(ResourceLimitExceeded) as excinfo:
        Limits().check("The text", 2500, "max_text_chars", " characters")
    message = str(excinfo.value)
    assert "--limits local" in message and "--max-text-chars N" in message
    assert "this server" not in message and "run the app locally" not in message


def test_messages_name_only_flags_that_exist_where_they_are_read():
    """Issue 19: "--asr-model DIR" was offered to the app (which has no such flag), and serve's offline
    error told its user to run ``python app.py``."""
    from omnivoice_demo.asr.source import _how_to_get
    from omnivoice_demo.hub.download import offline_help

    asr = _how_to_get("onnx-community/whisper-base", "int8")
    assert "$OMNIVOICE_ASR_MODEL=DIR for the app and serve" in asr and "--asr-model DIR for synth and eval" in asr
    offline = offline_help("k2-fsa/OmniVoice", "int4", "The model is not in the cache.")
    assert "python app.py" not in offline and "run the same command once with network access" in offline
    assert "--model k2-fsa/OmniVoice --precision int4" in offline


def test_every_setting_has_a_label_a_person_reads():
    """Issue 19: ``t_shift`` showed its code name as its label."""
    from omnivoice_demo.ui.control_specs import control

    for name in GenerationConfig.names():
        label = control(name).label
        assert label and label != name and "_" not in label, name


def test_a_fully_skipped_batch_says_so_instead_of_zero_workers():
    from omnivoice_demo.batch.results import Summary

    lines = Summary(total=3, skipped=3).lines()
    assert lines[1] == "nothing to synthesise: every item was made before with the same render key"
    assert not any("0 worker(s)" in line or "items/h" in line for line in lines)
    assert "2 worker(s)" in Summary(total=3, done=3, workers=2, wall_seconds=1.0).lines()[1]


def test_the_model_tab_offers_cuda_only_where_it_runs(monkeypatch):
    """Issue 19: the Model tab offered the ``cuda`` precision on machines without CUDA."""
    from omnivoice_demo.ui.tabs import model

    monkeypatch.setattr(model, "available_providers", lambda: ["cpu"])
    assert "cuda" not in model.precision_choices() and "int4" in model.precision_choices()
    assert model.precision_choices("cuda")[-1] == "cuda"      # chosen with --precision: still shown
    monkeypatch.setattr(model, "available_providers", lambda: ["cpu", "cuda"])
    assert "cuda" in model.precision_choices()
