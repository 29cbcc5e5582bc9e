"""Shared mode's rules without a browser: when it is on, per-browser voices, names, paths in messages."""

from __future__ import annotations

import numpy as np
import pytest

from omnivoice_demo.errors import InvalidInput
from omnivoice_demo.studio.sharing import BrowserVoices, is_shared, redact_paths, refuse_model_changes, unique_name
from omnivoice_demo.storage.voice_file import Voice


def test_shared_mode_is_on_for_spaces_share_links_and_other_hosts():
    assert not is_shared("127.0.0.1", environ={})
    assert not is_shared("localhost", environ={})
    assert not is_shared("::1", environ={})
    assert is_shared("0.0.0.0", environ={})
    assert is_shared("192.168.1.5", environ={})
    assert is_shared("myhost.example", environ={})
    assert is_shared("127.0.0.1", share=True, environ={})
    assert is_shared("127.0.0.1", shared=True, environ={})
    assert is_shared("127.0.0.1", environ={"SPACE_ID": "someone/space"})
    with pytest.raises(InvalidInput, match="operator chooses its models"):
        refuse_model_changes(True)
    refuse_model_changes(False)


def test_saving_over_a_name_keeps_both():
    assert unique_name("Anna", []) == "Anna"
    assert unique_name("Anna", ["anna"]) == "Anna 2"
    assert unique_name("Anna", ["Anna", "Anna 2"]) == "Anna 3"


def _voice(frames=40, seed=0):
    codes = np.random.default_rng(seed).integers(0, 1024, (8, frames))
    return Voice(codes=codes, transcript="hello there.", rms=0.07, name="")


def test_browser_voices_round_trip_and_stay_apart():
    store = BrowserVoices(max_frames=100, max_voices=3)
    alice, used = store.save({}, _voice(seed=1), "Mine")
    bob, _ = store.save({}, _voice(seed=2), "Mine")
    assert used == "Mine" and store.names(alice) == ["Mine"]
    np.testing.assert_array_equal(store.load(alice, "Mine").codes, _voice(seed=1).codes)
    assert not np.array_equal(store.load(bob, "Mine").codes, store.load(alice, "Mine").codes)
    alice, second = store.save(alice, _voice(seed=3), "Mine")
    assert second == "Mine 2" and store.names(alice) == ["Mine", "Mine 2"]
    alice, same = store.save(alice, _voice(seed=4), "Mine", replace=True)
    assert same == "Mine" and len(store.names(alice)) == 2
    alice, _ = store.save(alice, _voice(seed=5), "Third")
    with pytest.raises(InvalidInput, match="the most it can keep"):
        store.save(alice, _voice(seed=6), "Fourth")
    assert store.names(store.delete(alice, "Third")) == ["Mine", "Mine 2"]
    with pytest.raises(InvalidInput, match="no saved voice named 'Other'"):
        store.load(alice, "Other")


@pytest.mark.parametrize("tamper,match", [
    (lambda d: d.update(frames=10**9), "frames"),
    (lambda d: d.update(codes="!!!!" * (len(d["codes"]) // 4)), "not base64"),
    (lambda d: d.update(rms=-1.0), "rms -1.0"),
    (lambda d: d.update(transcript=""), "no transcript"),
    (lambda d: d.update(frames=True), "frames"),
])
def test_a_tampered_browser_voice_is_refused(tamper, match):
    store = BrowserVoices(max_frames=100)
    stored, _ = store.save({}, _voice(), "v")
    tamper(stored["v"])
    with pytest.raises(InvalidInput, match=match):
        store.load(stored, "v")
    assert store.names("not a dict") == [] and store.names({"x": 3}) == []


def test_messages_lose_server_paths(tmp_path):
    text = f"{tmp_path}/voices/sessions/abc/Mine.npz is missing; /home/user/.cache/omnivoice/hub/x/model.onnx too"
    shown = redact_paths(text, [tmp_path])
    assert str(tmp_path) not in shown and "/home/user" not in shown
    assert "Mine.npz" not in shown or "<server>" in shown
    assert "model.onnx" in shown


def test_redaction_keeps_addresses_and_routes_whole_and_never_doubles(tmp_path):
    """Issue 19: the licence line ended at "model card (https:/", a cached model showed as
    "<server><server>/tiny", and "GET /v1/audio/voices lists them" lost its route."""
    from omnivoice_demo.studio.models import CODEC_CARD, MODEL_CARD

    card = f"the OmniVoice model card ({MODEL_CARD}) and the Higgs audio codec's ({CODEC_CARD})"
    assert redact_paths(card, [tmp_path]) == card
    cache = tmp_path / "cache"
    shown = redact_paths(f"{cache}/models--x/snapshots/abc/tiny and {tmp_path}/voices", [cache, tmp_path])
    assert "<server><server>" not in shown and str(tmp_path) not in shown and shown.endswith("<server>/voices")
    assert "tiny" in shown and shown.startswith("<server>/tiny ")  # no folder between: no part of a server path
    deep = redact_paths(f"the model folder {tmp_path}/nc3/models/tiny and '/srv/x/nc3/models/tiny'", [tmp_path])
    assert "nc3" not in deep and "models" not in deep and deep.count("<server>/tiny") == 2
    for route in ("GET /v1/audio/voices lists them", "DELETE /v1/audio/voices/Anna"):
        assert redact_paths(route, [tmp_path]) == route
    assert redact_paths("see https://example.org/a/b and /srv/data/file.txt") == \
        "see https://example.org/a/b and <server>/file.txt"


# --- the handlers in shared and local mode (the tiny model) -------------------------------------------

@pytest.fixture(scope="module")
def manager(tiny_fp32_folder, tmp_path_factory):
    from omnivoice_demo.studio.models import ModelManager

    models = ModelManager(cache_dir=tmp_path_factory.mktemp("cache"), offline=True)
    models.load(str(tiny_fp32_folder), "fp32")
    return models


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> str:
    from tests.support.signals import write_speech_like

    return write_speech_like(tmp_path_factory.mktemp("ref") / "reference.wav", 3.0, 22050, seed=4)


def _studio(manager, root, shared):
    from omnivoice_demo.studio.messages import set_message_filter
    from omnivoice_demo.studio.state import Studio
    from omnivoice_demo.studio.voices import VoiceLibrary

    set_message_filter(None)
    manager.locked = False
    return Studio(models=manager, voices=VoiceLibrary(root / "voices", private=shared), out_dir=root / "out",
                  min_update_interval=0.0, shared=shared)


def test_shared_mode_refuses_model_changes_on_the_server(manager, tmp_path):
    import gradio as gr

    from omnivoice_demo.ui.tabs.model import ModelTab

    studio = _studio(manager, tmp_path, shared=True)
    try:
        label = manager.active
        for change in (lambda: manager.start_load("/etc"), lambda: manager.set_active(label),
                       lambda: manager.unload(label)):
            with pytest.raises(InvalidInput, match="operator chooses its models"):
                change()
        assert manager.active == label and manager.labels() == [label]
        # the Model tab's events (callable by fn_index whatever the page shows) say so as an error
        tab = ModelTab.__new__(ModelTab)
        tab.studio = studio
        with pytest.raises(gr.Error, match="operator chooses"):
            tab._load("someone/ours@../../x", "auto", "cpu", False, False)
        with pytest.raises(gr.Error, match="operator chooses"):
            tab._unload(label)
        assert manager.labels() == [label]
    finally:
        manager.locked = False


def test_shared_mode_keeps_voices_in_each_browser(manager, tmp_path, reference):
    from omnivoice_demo.ui.tabs import clone as clone_tab
    from omnivoice_demo.ui.tabs import speak as speak_tab

    studio = _studio(manager, tmp_path, shared=True)
    try:
        saved = clone_tab.save_voice(studio, reference, "one two three.", True, "Mine", browser={})
        alice = saved["store"]
        assert saved["selected"] == "Mine" and "this browser" in saved["message"]
        assert str(tmp_path) not in saved["message"]
        assert not (tmp_path / "voices").exists() or not any((tmp_path / "voices").rglob("*.npz"))
        assert speak_tab.voice_names(studio, "session-a", alice)[1:] == ["Mine"]
        assert speak_tab.voice_names(studio, "session-b", {})[1:] == []
        voice = speak_tab.saved_voice(studio, "Mine", "session-b", alice)  # a reload: a new session, same browser
        assert voice.frames > 0
        import gradio as gr

        with pytest.raises(gr.Error, match=r"No saved voice or named design is called 'Mine'\. Designs: "):
            list(speak_tab.speak(studio, "Hello.", {"voice": "Mine", "num_step": 2}, [], "session-c", {}))
    finally:
        manager.locked = False


def test_local_mode_keeps_both_voices_of_one_name(manager, tmp_path, reference):
    from omnivoice_demo.ui.tabs import clone as clone_tab

    studio = _studio(manager, tmp_path, shared=False)
    first = clone_tab.save_voice(studio, reference, "one two three.", True, "Anna")
    second = clone_tab.save_voice(studio, reference, "one two three.", True, "Anna")
    assert first["selected"] == "Anna" and second["selected"] == "Anna 2"
    assert "exists already" in second["message"]
    assert sorted(p.name for p in (tmp_path / "voices").glob("*.npz")) == ["Anna 2.npz", "Anna.npz"]


def test_shared_mode_messages_show_no_server_path(manager, tmp_path):
    from omnivoice_demo.studio.messages import set_message_filter
    from omnivoice_demo.ui.error_mapping import user_message

    studio = _studio(manager, tmp_path, shared=True)
    try:
        shown = user_message(f"{tmp_path}/out/secret.wav and {studio.voices.root}/x.npz")
        assert str(tmp_path) not in shown and "&lt;server&gt;" in shown
    finally:
        set_message_filter(None)
        manager.locked = False
