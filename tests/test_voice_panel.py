"""The Clone tab's saved-voice panel (issue 19): rename, delete, export and import, in the voice folder
(local mode) and in the visitor's browser (shared mode); a failed save or action leaves the lists alone."""

from __future__ import annotations

import json

import pytest

from omnivoice_demo.studio import ModelManager, Studio, VoiceLibrary
from omnivoice_demo.studio.messages import set_message_filter
from omnivoice_demo.ui.tabs import clone as clone_tab
from omnivoice_demo.ui.tabs import saved_voices
from omnivoice_demo.storage.voice_file import Voice
from tests.test_vocabulary import a_voice


@pytest.fixture
def local(tmp_path):
    return Studio(models=ModelManager(), voices=VoiceLibrary(tmp_path / "voices"), out_dir=tmp_path / "out")


@pytest.fixture
def shared(tmp_path):
    studio = Studio(models=ModelManager(), voices=VoiceLibrary(tmp_path / "voices", private=True),
                    out_dir=tmp_path / "out", shared=True)
    yield studio
    set_message_filter(None)


def test_the_panel_renames_exports_deletes_and_imports_in_the_voice_folder(local, tmp_path):
    local.voices.save(a_voice(), "Anna")
    done = saved_voices.manage_voice(local, "rename", "Anna", "Anne")
    assert done["voices"] == ["Anne"] and done["selected"] == "Anne" and local.voices.names() == ["Anne"]
    exported = saved_voices.manage_voice(local, "export", "Anne")
    npz, about = exported["files"]
    assert Voice.load(npz).frames == 10 and json.loads(open(about).read())["name"] == "Anne"
    assert exported["files"][0].startswith(str(tmp_path / "out"))
    deleted = saved_voices.manage_voice(local, "delete", "Anne")
    assert deleted["voices"] == [] and deleted["speak_selected"] == "(none)"
    imported = saved_voices.manage_voice(local, "import", None, "", npz)
    assert imported["voices"] == ["Anne"]
    again = saved_voices.manage_voice(local, "import", None, "", npz)   # a taken name keeps both
    assert again["selected"] == "Anne 2" and local.voices.names() == ["Anne", "Anne 2"]


def test_the_panel_works_on_the_visitors_browser_in_shared_mode(shared, tmp_path):
    a_voice(12).save(tmp_path / "mine.npz")
    imported = saved_voices.manage_voice(shared, "import", None, "Mine", str(tmp_path / "mine.npz"), "s1", {})
    store = imported["store"]
    assert list(store) == ["Mine"] and not (tmp_path / "voices").exists()
    renamed = saved_voices.manage_voice(shared, "rename", "Mine", "Ours", None, "s1", store)
    assert list(renamed["store"]) == ["Ours"]
    exported = saved_voices.manage_voice(shared, "export", "Ours", None, None, "s1", renamed["store"])
    assert Voice.load(exported["files"][0]).frames == 12
    assert saved_voices.manage_voice(shared, "delete", "Ours", None, None, "s1", renamed["store"])["store"] == {}
    other = saved_voices.kept_on_error(saved_voices.manage_voice, shared, "delete", "Ours", None, None, "s2", {})
    assert "Not done" in other["message"] and "no saved voice named 'Ours'" in other["message"]


@pytest.mark.parametrize("action, name, new", [("rename", "Nobody", "X"), ("delete", None, None),
                                               ("export", "Nobody", None), ("import", None, None)])
def test_a_failed_action_is_a_message_and_leaves_every_list_alone(local, action, name, new):
    local.voices.save(a_voice(), "Anna")
    result = saved_voices.kept_on_error(saved_voices.manage_voice, local, action, name, new)
    assert result["message"].startswith("**Not done:**") and "voices" not in result
    update = saved_voices.voice_list_update(result)
    assert "choices" not in update and "value" not in update     # the Speak list keeps its voices
    assert local.voices.names() == ["Anna"]


def test_a_failed_save_does_not_turn_the_speak_list_into_an_error(local):
    """Issue 19: saving without consent raised, and Gradio marked the Speak tab's voice list as "Error"."""
    result = saved_voices.kept_on_error(clone_tab.save_voice, local, None, "One two.", False, "Mine")
    assert result["message"].startswith("**Not done:**")
    update = saved_voices.voice_list_update(result)
    assert "choices" not in update and "value" not in update
    assert saved_voices.store_update(result) == clone_tab.gr.update()
