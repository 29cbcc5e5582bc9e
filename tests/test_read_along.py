"""The Speak tab with word timings (issue 40), through its handlers on the tiny model and the test recogniser
(random Whisper weights with alignment heads: the times are not good ones, the tests check what the page gets):
the read-along view's words, the word subtitles among the downloads, a sentence made again bringing its own
words, and the message when there is no recogniser.  The view following the player is
tests/test_app_browser_read_along.py (Chromium)."""

from __future__ import annotations

import html
import re

import gradio as gr
import pytest
import soundfile as sf

from omnivoice_demo.asr import LazyRecognizer
from omnivoice_demo.asr.alignment import WordTiming
from omnivoice_demo.batch.subtitles import parse_timestamps
from omnivoice_demo.ui import sentences as sentences_ui
from omnivoice_demo.ui.display import read_along_html
from omnivoice_demo.ui.tabs import speak as speak_tab

from tests.support.studios import folder_studio

TEXT = "The first sentence is here. And then a second sentence follows it, somewhat longer than the first one."
VALUES = dict(num_step=2, randomize=False, seed=5, sentence_streaming=True, word_timestamps=True)
SPAN = re.compile(r'<span class="ov-word" data-ov-word="(\d+)" data-start="([\d.]+)" data-end="([\d.]+)">'
                  r'([^<]*)</span>')


@pytest.fixture(scope="module")
def studio(tiny_fp32_folder, recognizer_folder, tmp_path_factory):
    studio = folder_studio(tiny_fp32_folder, tmp_path_factory.mktemp("read-along"))
    studio.models.get().engine.recognizer = LazyRecognizer(str(recognizer_folder), "fp32", threads=1)
    return studio


def _spans(view: str) -> list[tuple[str, float, float]]:
    return [(html.unescape(word), float(start), float(end)) for _, start, end, word in SPAN.findall(view)]


def test_word_timings_give_the_read_along_view_and_word_subtitles(studio):
    final = list(speak_tab.speak(studio, TEXT, VALUES, []))[-1]
    spans = _spans(final["words"])
    assert [word for word, _, _ in spans] == TEXT.split()
    duration = len(sf.read(final["audio"])[0]) / 24000
    starts = [start for _, start, _ in spans]
    assert starts == sorted(starts) and all(start <= end <= duration + 1e-3 for _, start, end in spans)
    assert 'data-ov-player="speak-audio"' in final["words"]

    wav, flac, npz, srt, vtt = final["files"]
    assert srt.endswith(".words.srt") and vtt.endswith(".words.vtt") and wav.endswith(".wav")
    srt_text, vtt_text = open(srt, encoding="utf-8").read(), open(vtt, encoding="utf-8").read()
    said = " ".join(line for line in srt_text.splitlines() if line and "-->" not in line and not line.isdigit())
    assert said.split() == TEXT.split()                          # every word once, in cues of a few words
    assert parse_timestamps(srt_text) == parse_timestamps(vtt_text) and len(parse_timestamps(srt_text)) >= 2
    assert vtt_text.startswith("WEBVTT") and re.search(r"<\d\d:\d\d:\d\d\.\d{3}>", vtt_text)   # karaoke
    assert parse_timestamps(srt_text)[0][0] == pytest.approx(starts[0], abs=1e-3)

    plain = list(speak_tab.speak(studio, TEXT, dict(VALUES, word_timestamps=False), []))[-1]
    assert plain["words"] == "" and len(plain["files"]) == 3     # off (the default): nothing aligned, no subtitles


def test_a_sentence_made_again_brings_its_own_words(studio):
    first = list(speak_tab.speak(studio, TEXT, VALUES, []))[-1]
    result = first["takes"]
    done = list(sentences_ui.sentence_action(studio, result, "again", 1, VALUES, lambda v: (None, v), [],
                                             "Speak"))[-1]
    before, after = _spans(first["words"]), _spans(done["words"])
    assert [w for w, _, _ in after] == TEXT.split()              # the whole result's words, after Again too
    new, old = result.current[1], result.previous[1]
    assert new.words and old.words and new.words is not old.words   # the new take came with its own words
    assert [w.word for w in new.words] == result.sentences[1].split()
    assert len(done["files"]) == 5 and done["files"][3].endswith(".words.srt")
    restored = list(sentences_ui.sentence_action(studio, result, "restore", 1, VALUES, lambda v: (None, v), [],
                                                 "Speak"))[-1]
    assert _spans(restored["words"]) == before                   # the first take's words are back with it


def test_word_timings_without_a_recogniser_say_what_to_do(tiny_fp32_folder, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.delenv("OMNIVOICE_ASR_MODEL", raising=False)
    studio = folder_studio(tiny_fp32_folder, tmp_path / "studio")
    studio.models.get().engine.recognizer = LazyRecognizer("owner/not-cached", offline=True)
    with pytest.raises(gr.Error) as refused:
        list(speak_tab.speak(studio, TEXT, VALUES, []))
    assert "Word timings need a speech recogniser" in refused.value.message
    assert "word_timestamps off" in refused.value.message


def test_the_view_escapes_words_and_names_each_speaker():
    words = [WordTiming("Hi", 0.1, 0.3, 0.9, "Anna"), WordTiming("<b>&", 0.3, 0.5, 0.9, "Anna"),
             WordTiming("Yes.", 0.8, 1.0, 0.9, "Ben")]
    view = read_along_html(words, "speak-audio")
    assert "<b>&" not in view and _spans(view)[1][0] == "<b>&"
    assert view.count('class="ov-speaker"') == 2 and view.index("Anna:") < view.index("Ben:")
    assert read_along_html([], "speak-audio") == ""
