"""Shared mode's rules without a browser: when it is on, per-browser voices, names, paths in messages."""

from __future__ import annotations

import numpy as np
import pytest

from omnivoice_demo.errors import InvalidInput
from omnivoice_demo.ui.sharing import BrowserVoices, is_shared, redact_paths, refuse_model_changes, unique_name
from omnivoice_demo.voice import Voice


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
    assert unique_name("Anna", ["anna"]) == "Anna (2)"
    assert unique_name("Anna", ["Anna", "Anna (2)"]) == "Anna (3)"
    assert unique_name("Anna (2)", ["Anna", "Anna (2)"]) == "Anna (3)"


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
    assert second == "Mine (2)" and store.names(alice) == ["Mine", "Mine (2)"]
    alice, same = store.save(alice, _voice(seed=4), "Mine", replace=True)
    assert same == "Mine" and len(store.names(alice)) == 2
    alice, _ = store.save(alice, _voice(seed=5), "Third")
    with pytest.raises(InvalidInput, match="the most it can keep"):
        store.save(alice, _voice(seed=6), "Fourth")
    assert store.names(store.delete(alice, "Third")) == ["Mine", "Mine (2)"]
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
