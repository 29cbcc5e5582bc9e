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


@pytest.fixture(scope="module")
def two_models(tiny_fp32_folder, tmp_path_factory):
    """A studio with the tiny model loaded under two labels (two models to benchmark side by side)."""
    from tests.support.studios import folder_studio

    studio = folder_studio(tiny_fp32_folder, tmp_path_factory.mktemp("bench-stop"))
    first = studio.models.get()
    studio.models.add(first.engine, label="second")
    return studio, [first.label, "second"]


def test_a_stopped_benchmark_keeps_its_finished_rows_and_says_it_stopped(two_models):
    """The first model's row (and its CSV) comes out as soon as it finishes; Stop then closes the run (as Gradio
    closes the handler), and the machine line marks it stopped; the progress moves with the steps."""
    import csv

    from omnivoice_demo.eval.quick_bench import BenchmarkProgress
    from omnivoice_demo.ui.tabs import benchmark as benchmark_tab

    studio, labels = two_models
    updates = benchmark_tab.benchmark_updates(studio, labels, "short", 4, 1)
    fractions, partial = [], None
    for update in updates:
        if isinstance(update, BenchmarkProgress):
            fractions.append(update.fraction)
        else:
            partial = update
            break
    updates.close()   # Stop: the event is cancelled while the second model runs
    assert [row[0] for row in partial["table"]["data"]] == [labels[0]]
    with open(partial["csv"], newline="") as handle:
        assert [row["model"] for row in csv.DictReader(handle)] == [labels[0]]
    assert benchmark_tab.PARTIAL_NOTE in partial["machine"]
    stopped = benchmark_tab.stopped_note(partial["machine"])
    assert stopped.startswith("**Stopped**") and "finished before Stop" in stopped and "Machine" in stopped
    assert len(set(fractions)) > 3 and fractions == sorted(fractions) and 0 < max(fractions) < 1
    assert benchmark_tab.stopped_note("").startswith("**Stopped** before any model finished")
    done = "**Machine:** a finished run"
    assert benchmark_tab.stopped_note(done) == done
