"""Messages in the app: the model bar (the banner over the tabs) shows commands as code, not backticks, and in
shared mode no part of a server path, whether the model is ready or failed to load; the Clone tab's note when
no recogniser can be had reads as sentences."""

from __future__ import annotations

import html
import re

from omnivoice_demo.studio.models import ModelManager
from omnivoice_demo.studio.state import Studio
from omnivoice_demo.studio.voices import VoiceLibrary
from omnivoice_demo.ui.tabs.model import model_bar


def visible_text(markup: str) -> str:
    """What a browser shows of the bar: tags dropped, entities decoded."""
    return html.unescape(re.sub(r"<[^>]+>", "", markup))


def studio_of(tmp_path, manager, shared: bool) -> Studio:
    return Studio(models=manager, voices=VoiceLibrary(tmp_path / "voices", private=shared), out_dir=tmp_path / "out",
                  shared=shared)


def test_a_failed_load_shows_commands_as_code_and_in_shared_mode_no_server_path(tmp_path):
    manager = ModelManager(cache_dir=tmp_path / "cache", offline=True)
    folder = tmp_path / "nc3" / "models" / "tiny"
    manager._set_status(state="error", request=str(folder),
                        message=f"{folder} has no model.onnx: build one with `python -m convert --output DIR`.")
    local = model_bar(studio_of(tmp_path, manager, shared=False))
    assert "<code>python -m convert --output DIR</code>" in local and "`" not in visible_text(local)
    assert str(folder) in visible_text(local)  # on one's own machine the path helps
    shared = visible_text(model_bar(studio_of(tmp_path, manager, shared=True)))
    assert "nc3" not in shared and "models/" not in shared and str(tmp_path) not in shared
    assert "<server>/tiny" in shared and "`" not in shared


def test_a_ready_model_in_shared_mode_shows_its_folder_by_name_only(tiny_fp32_folder, tmp_path):
    manager = ModelManager(cache_dir=tmp_path / "cache", offline=True)
    manager.load(str(tiny_fp32_folder), "fp32")
    shown = visible_text(model_bar(studio_of(tmp_path, manager, shared=True)))
    parents = [part for part in tiny_fp32_folder.parent.parts if part not in ("/", "tmp")]
    assert tiny_fp32_folder.name in shown and not any(f"/{part}/" in shown for part in parents)
    assert "<server>/" + tiny_fp32_folder.name in shown


def test_the_clone_tabs_recogniser_note_reads_as_sentences(monkeypatch):
    """The note when no recogniser can be had ended ".).); type it." (the reason in brackets, then more)."""
    from omnivoice_demo.asr.source import _how_to_get
    from omnivoice_demo.errors import ModelNotAvailable
    from omnivoice_demo.ui.tabs import clone

    reason = f"No speech recogniser is cached and this program is offline: {_how_to_get('onnx-community/whisper-base', 'int8')}"

    def no_recogniser(*args):
        raise ModelNotAvailable(reason)

    monkeypatch.setattr(clone, "reference_note", lambda studio, path: "3.0 s of audio.")
    monkeypatch.setattr(clone, "recognise_reference", no_recogniser)
    note = list(clone.transcript_updates(None, "clip.wav"))[-1][0]
    assert "could not be recognised, so type it." in note and note.endswith("--asr-model DIR for synth and eval).")
    assert ").)" not in note and "); type it" not in note and "`" not in note


def test_building_from_the_original_weights_on_an_fp32_folder_says_why_nothing_was_built(tiny_fp32_folder, tmp_path):
    """"Build from the original weights" on an fp32 folder: nothing to build (its backbone is the exact model),
    said in the bar, and no weights looked for (an offline machine with nothing cached would otherwise fail)."""
    manager = ModelManager(cache_dir=tmp_path / "cache", offline=True)
    manager.load(str(tiny_fp32_folder), "fp32", backbone_weights="k2-fsa/OmniVoice")
    shown = visible_text(model_bar(studio_of(tmp_path, manager, shared=False)))
    assert "ready" in shown
    assert "The original weights (k2-fsa/OmniVoice) were not used: this folder is built in fp32" in shown
