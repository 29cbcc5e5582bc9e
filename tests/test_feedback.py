"""Feedback that is never silent or wrong (issue 44): the script mode's help says what an empty voice does, and
the refusal says what to do; the styles panel refuses a clip outside 3-10 s, saying its length; a failed run
clears the old code grid (in the browser: tests/test_app_browser_new_user.py)."""

from __future__ import annotations

import pytest
import soundfile

from omnivoice_demo.errors import InvalidInput
from omnivoice_demo.text.script import read_script
from omnivoice_demo.studio.vocabulary import DESIGNS
from omnivoice_demo.ui import script_mode
from omnivoice_demo.ui.generation_panel import failed_outputs
from omnivoice_demo.ui.tabs import styles
from tests.support.signals import speech_like
from tests.test_dialogue import designs_only


def test_the_script_help_says_what_an_empty_voice_does_and_the_behaviour_matches():
    help_text = script_mode.HELP
    assert "left empty must be such a voice itself" in help_text and "reads the name" not in help_text
    table = [["alloy", ""], ["Narrator", ""]]
    assert script_mode.speakers_of(table) == {}   # empty cells: the names are read as voices
    assert read_script("alloy: Hello.", designs_only, {})[0].instruct == DESIGNS["alloy"]
    with pytest.raises(InvalidInput) as caught:
        read_script("Narrator: Once upon a time.", designs_only, {})
    assert "'Narrator'" in str(caught.value) and "Give the name a voice" in str(caught.value)


@pytest.mark.parametrize("seconds, words", [(1.8, "The style clip is 1.8 s; give 3-10 s"),
                                            (12.5, "The style clip is 12.5 s; give 3-10 s")])
def test_the_styles_panel_refuses_a_clip_outside_3_to_10_seconds(tmp_path, seconds, words):
    clip = tmp_path / "clip.wav"
    soundfile.write(clip, speech_like(seconds, 24000, seed=1)[0], 24000)
    with pytest.raises(InvalidInput, match=words):
        styles.check_clip_length(str(clip))
    soundfile.write(clip, speech_like(4.0, 24000, seed=1)[0], 24000)
    styles.check_clip_length(str(clip))   # within: taken


def test_a_failed_run_clears_the_code_grid():
    assert failed_outputs()["grid"] is None


def test_the_clone_tab_speaks_with_the_lexicon(tmp_path, monkeypatch):
    """Clone reads the owner's pronunciations as Speak does (the studio's lexicon, or the visitor's browser's)."""
    from omnivoice_demo.text.lexicon import Entry, Lexicon
    from omnivoice_demo.ui.tabs import clone as clone_tab

    studio = type("Studio", (), {})()
    studio.lexicons = type("Lexicons", (), {"for_generation": lambda self, stored=None: Lexicon(
        (Entry("bass", "[B EY1 S]" if stored is None else stored),))})()
    monkeypatch.setattr(clone_tab, "clone_voice", lambda *args, **kwargs: ("the voice", ""))
    seen = []
    monkeypatch.setattr(clone_tab, "run_generation",
                        lambda studio, text, values, voice, history, tab, owner: iter(seen.append(values) or [{}]))
    list(clone_tab.clone(studio, "ref.wav", "Words.", True, "The bass is loud.", {}))
    list(clone_tab.clone(studio, "ref.wav", "Words.", True, "The bass is loud.", {}, lexicon="[B AE1 S]"))
    assert [v["pronunciations"].entries[0].say for v in seen] == ["[B EY1 S]", "[B AE1 S]"]
    assert all(v["voice"] is None for v in seen)
