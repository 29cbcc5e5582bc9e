"""A book's sentence check: its recogniser is in the render key, a missing one is said once, and failed checks are
said at the end (issue 57 point 9; issue 58 points 2 and 6).

* The recogniser chooses which take of a checked sentence is kept, so it is part of the render key exactly when
  the check is on: another recogniser (other content) changes the key, a copy of its folder elsewhere does not,
  and with the check off the key is what it was.
* The Book tab offline with its own defaults ("Check each sentence" ticked, no recogniser to be had) failed every
  sentence, one long message per sentence after an internal id, in words for a single request ("type the
  transcript of the reference", "guard off, the default"); Start now says it once, before any work, in words for
  the tab.
* A run whose sentences failed their check in every take ended with the usual JSON line only; its last line now
  counts them and names report.json, and a line before it says so in words.
"""

from __future__ import annotations

import json
import shutil

import pytest

from omnivoice_demo.settings.generation import GenerationConfig


def _engine(folder, recognizer):
    from omnivoice_demo.engine.loop import OmniVoiceEngine

    return OmniVoiceEngine(folder, verify="size", calibrate=False, backbone="fp32", recognizer=recognizer)


def test_the_recogniser_is_in_the_render_key_when_the_check_is_on_and_only_then(tiny_fp32_folder, recognizer_folder,
                                                                                tmp_path):
    from omnivoice_demo.asr import LazyRecognizer
    from omnivoice_demo.batch.worker import ItemWorker
    from omnivoice_demo.engine.render_key import changed_parts, key_of

    copy = shutil.copytree(recognizer_folder, tmp_path / "copied recogniser")
    engines = {name: _engine(tiny_fp32_folder, LazyRecognizer(spec=str(folder), precision=precision))
               for name, folder, precision in (("int8", recognizer_folder, "int8"), ("fp32", recognizer_folder, "fp32"),
                                               ("copy", copy, "int8"))}

    def key(name, guard):
        engine = engines[name]
        plan = engine.prepare("The sea was calm.", config=GenerationConfig(num_step=2, seed=3, guard=guard))
        return ItemWorker.on_engine(engine).render_parts(plan, "flac")   # what batch and book items are keyed by

    checked = {name: key(name, True) for name in engines}
    assert checked["int8"]["recognizer"] != checked["fp32"]["recognizer"]   # other graphs: another recogniser
    assert key_of(checked["int8"]) != key_of(checked["fp32"])
    assert key_of(checked["int8"]) == key_of(checked["copy"])               # its content, not its path
    unchecked = {name: key(name, False) for name in engines}
    assert all("recognizer" not in parts for parts in unchecked.values())
    assert len({key_of(parts) for parts in unchecked.values()}) == 1
    assert changed_parts(checked["int8"], checked["fp32"]) == ["the sentence check's recogniser"]


@pytest.fixture
def no_recogniser(tmp_path, monkeypatch):
    """Offline, with nothing cached and no recogniser folder named."""
    monkeypatch.delenv("OMNIVOICE_ASR_MODEL", raising=False)
    monkeypatch.setenv("OMNIVOICE_CACHE", str(tmp_path / "empty-cache"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-hf"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def test_the_book_tab_says_a_missing_recogniser_once_before_any_work_in_words_for_a_book(tiny_fp32_folder, tmp_path,
                                                                                           no_recogniser):
    import types

    import gradio as gr
    from gradio.helpers import special_args

    from omnivoice_demo.ui.tabs import book as book_tab
    from tests.support.studios import folder_studio

    studio = folder_studio(tiny_fp32_folder, tmp_path / "studio")
    with gr.Blocks() as demo:
        book_tab.build(studio)
    handlers = {block.fn.__name__: block for block in demo.fns.values()}
    (tmp_path / "b.txt").write_text("Chapter 1\n\nThe sea was calm. The storm came. The morning was bright.\n")
    visitor = types.SimpleNamespace(cookies={}, headers={}, client=None)

    def call(name, *values):
        inputs, *_ = special_args(handlers[name].fn, list(values), visitor)
        return handlers[name].fn(*inputs)

    ticked = ["alloy", "(none)", "", "", 4, True, ""]   # the tab's defaults: "Check each sentence" ticked
    with pytest.raises(gr.Error) as refused:
        call("started", str(tmp_path / "b.txt"), "", *ticked)
    message = refused.value.message
    assert "Checking each sentence needs a speech recogniser" in message, message
    assert "untick \u201cCheck each sentence\u201d" in message and "OMNIVOICE_ASR_MODEL=DIR" in message, message
    for wrong in ("transcript of the reference", "the default", "guard off", "--asr-model", "--no-guard"):
        assert wrong not in message, message
    assert message.count("speech recogniser.") == 1 and "\n" not in message
    assert not list((studio.out_dir / "books").rglob("*.flac"))   # no sentence was made
    assert "running" not in call("ticked")[0]


def test_a_book_whose_checks_failed_says_so_on_its_last_line_naming_the_report(tiny_fp32_folder, recognizer_folder,
                                                                                tmp_path, capsys, monkeypatch):
    """Every sentence fails its check in every take (a recogniser that hears nothing like it): the run finishes,
    a line says how many, and the last line (JSON) counts them and names report.json."""
    from omnivoice_demo.asr import Transcript
    from omnivoice_demo.batch.worker import ModelSpec
    from omnivoice_demo.cli.main import main

    class Deaf:   # hears nothing like any sentence
        def transcribe(self, audio, sample_rate, language=None):
            return Transcript(text="nothing like it", language="en", seconds=0.0)

    monkeypatch.setenv("OMNIVOICE_ASR_MODEL", str(recognizer_folder))   # found before any work
    monkeypatch.setattr("omnivoice_demo.engine.guard.audio_problems", lambda audio, frames: ())
    monkeypatch.setattr(ModelSpec, "open", lambda self, threads: _engine(self.resolved().folder, Deaf()))
    (tmp_path / "b.txt").write_text("Chapter 1\n\nThe sea was calm. The storm came.\n")
    output = tmp_path / "out"
    capsys.readouterr()
    code = main(["book", str(tmp_path / "b.txt"), "--model", str(tiny_fp32_folder), "--output", str(output),
                 "--num-step", "2", "--guard-tries", "2", "--no-progress", "--format", "flac", "--no-readalong"])
    lines = capsys.readouterr().out.strip().splitlines()
    assert code == 0, lines
    last = json.loads(lines[-1])
    assert last["failed_checks"] == 3 and last["report"] == str(output / "report.json"), last
    assert lines[-2].startswith("3 of 3 sentences failed the sentence check in every take"), lines
    assert str(output / "report.json") in lines[-2] and "failed_checks" in lines[-2]
    assert len(json.loads((output / "report.json").read_text())["failed_checks"]) == 3
