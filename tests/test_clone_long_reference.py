"""Long reference clips in the Clone tab, through the tab's functions: what a clip's length costs (the estimate
beside a 6 s clip's), "Keep the best 10 s" (offered, cut in pauses, recognised again) and the reference's rule
that a long clip is cut only when its transcript is not typed.

The recogniser is planted (``OmniVoiceEngine.recognizer``): it says how long the audio it heard was, so a
test can tell which audio was recognised."""

from __future__ import annotations

import numpy as np
import pytest
import soundfile as sf
import gradio as gr

from omnivoice_demo.asr import Transcript
from omnivoice_demo.audio import processing as audio_ops
from omnivoice_demo.constants import SAMPLE_RATE
from omnivoice_demo.errors import InvalidInput
from omnivoice_demo.studio import ModelManager, Studio, VoiceLibrary
from omnivoice_demo.ui import generation
from omnivoice_demo.ui.layout import build_app
from omnivoice_demo.ui.tabs import clone as clone_tab
from tests.support.signals import DENSE_MIDDLE, bursts
from tests.support.studios import folder_studio

RATE = 16000
PAUSE = 0.01  # the planted pauses' peak is under 1e-3 of the bursts' level (0.3); speech is above 0.05


class HowLong:
    """A recogniser that answers how many samples (at 24 kHz) it heard, and keeps what it heard."""

    def __init__(self):
        self.heard: list[np.ndarray] = []

    def transcribe(self, audio, sample_rate, language=None) -> Transcript:
        self.heard.append(np.asarray(audio).copy())
        return Transcript(text=f"I heard {len(audio)} samples at {sample_rate} hertz", language="en", seconds=0.0)


@pytest.fixture(scope="module")
def studio(tiny_fp32_folder, tmp_path_factory):
    return folder_studio(tiny_fp32_folder, tmp_path_factory.mktemp("studio"))


@pytest.fixture
def recogniser(studio, monkeypatch):
    planted = HowLong()
    monkeypatch.setattr(studio.models.get().engine, "recognizer", planted)
    return planted


@pytest.fixture
def long_clip(tmp_path) -> str:
    """27 s at 16 kHz: three 3 s bursts close together in the middle, short ones around them."""
    path = tmp_path / "long.wav"
    sf.write(path, bursts(DENSE_MIDDLE, RATE)[0][0], RATE, subtype="FLOAT")
    return str(path)


def recognised(studio, path) -> str:
    """The transcript box after a clip arrives (``transcript_updates``' last update)."""
    return list(clone_tab.transcript_updates(studio, path))[-1][1]["value"]


def test_a_long_clip_is_offered_its_best_ten_seconds_and_the_kept_part_is_recognised(studio, recogniser, long_clip):
    assert clone_tab.trim_offer(studio, long_clip)["visible"] is True
    note = clone_tab.reference_note(studio, long_clip)
    assert "Keep the best 10 s" in note and "type or edit keeps the whole clip" in note
    first = recognised(studio, long_clip)

    kept, message = clone_tab.keep_best_part(studio, long_clip)
    assert "cut at pauses" in message and "recognised again" in message
    audio, rate = sf.read(kept, dtype="float32")
    assert rate == RATE and audio.ndim == 1 and len(audio) <= 10 * RATE
    # cut in pauses (100 ms of pause at both ends), and the kept part is the three long bursts: 9 s of speech
    assert np.abs(audio[:RATE // 10]).max() < PAUSE and np.abs(audio[-(RATE // 10):]).max() < PAUSE
    frame = RATE // 100
    loud = np.abs(audio[:len(audio) // frame * frame].reshape(-1, frame)).max(axis=1) > 0.05  # 10 ms frames
    assert loud.sum() == pytest.approx(900, abs=3)

    # the kept clip takes the clip's place: checked, noted and recognised again, and offered no further cut
    again = recognised(studio, kept)
    prepared, _ = audio_ops.prepare_reference(audio, RATE, transcript_given=False)
    assert again == f"I heard {prepared.shape[-1]} samples at {SAMPLE_RATE} hertz" and again != first
    np.testing.assert_array_equal(recogniser.heard[-1], prepared[0])
    assert clone_tab.trim_offer(studio, kept)["visible"] is False
    assert clone_tab.reference_note(studio, kept).startswith("Reference: 9.")
    assert clone_tab.trim_clip(studio, long_clip) == kept  # the button's handler: the same kept clip


def test_the_estimate_line_compares_the_clip_with_a_6_s_one(studio, recogniser, long_clip):
    typed = "One two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen."
    voice = clone_tab.reference_for_estimate(studio, long_clip, typed, True)
    info = generation.text_info(studio, "Say this sentence in my voice.", {}, voice)
    assert f"This {voice.seconds:.1f} s reference: ≈ " in info and "with a 6 s one ≈ " in info
    assert voice.seconds > 15  # typed: the whole clip (its pauses shortened), as cloning will use it


def test_a_long_clip_is_cut_only_when_its_transcript_is_not_typed(studio, recogniser, long_clip):
    engine = studio.models.get().engine
    wav, rate = sf.read(long_clip, dtype="float32")
    assert clone_tab.read_reference(studio, long_clip)[0].shape == (1, len(wav))  # read whole, cut by the rule
    heard = recognised(studio, long_clip)

    # the recognised transcript: the reference's cut (at a pause before 15 s), token for token the engine's
    # clone without a transcript (the reference's create_voice_clone_prompt, tests/test_audio_processing.py)
    voice, note = clone_tab.clone_voice(studio, long_clip, heard, True)
    assert clone_tab.CUT_NOTE in note and voice.seconds <= 15 and voice.transcript_source == "recognised"
    alone = engine.clone_voice(wav, rate, None)
    np.testing.assert_array_equal(voice.codes, alone.codes)
    assert voice.transcript == alone.transcript

    # typed (or edited): the whole clip, as the reference keeps it for a given transcript
    typed, note = clone_tab.clone_voice(studio, long_clip, heard + " And the rest of it.", True)
    assert clone_tab.CUT_NOTE not in note and typed.seconds > 15 and typed.transcript_source == "typed"
    np.testing.assert_array_equal(typed.codes, engine.clone_voice(wav, rate, heard + " And the rest of it.").codes)

    # the estimate follows the same rule
    assert clone_tab.reference_for_estimate(studio, long_clip, heard, True).frames == voice.frames
    assert clone_tab.reference_for_estimate(studio, long_clip, heard + " More.", True).frames == typed.frames


def test_trimming_is_checked_like_any_reference(studio, recogniser, tmp_path, long_clip):
    with pytest.raises(InvalidInput, match="Record or upload a reference clip"):
        clone_tab.keep_best_part(studio, None)
    short = tmp_path / "short.wav"
    sf.write(short, bursts([("p", 0.5), ("s", 5.0), ("p", 0.5)], RATE)[0][0], RATE)
    assert clone_tab.trim_offer(studio, str(short))["visible"] is False
    with pytest.raises(InvalidInput, match="nothing to cut"):
        clone_tab.keep_best_part(studio, str(short))
    with pytest.raises(gr.Error, match="nothing to cut"):  # the button: a message, not a traceback
        clone_tab.trim_clip(studio, str(short))
    small = Studio(models=studio.models, voices=studio.voices, out_dir=studio.out_dir, max_upload_mb=0.01)
    with pytest.raises(InvalidInput, match="the limit is"):
        clone_tab.keep_best_part(small, long_clip)
    assert clone_tab.trim_offer(small, long_clip)["visible"] is False


def test_the_button_puts_the_kept_clip_in_place_of_the_clip(tmp_path):
    """Wiring: the button's output is the clip, and a changed clip is recognised again (and re-offered)."""
    studio = Studio(models=ModelManager(), voices=VoiceLibrary(tmp_path / "voices"), out_dir=tmp_path / "out")
    demo = build_app(studio)
    by_id = {block.elem_id: block for block in demo.blocks.values() if getattr(block, "elem_id", None)}
    button, ref, transcript = by_id["clone-trim"], by_id["clone-ref"], by_id["clone-transcript"]
    assert button.visible is False

    def handlers(block, event):
        return [fn for fn in demo.fns.values() if (block._id, event) in fn.targets]

    assert any(ref in fn.outputs for fn in handlers(button, "click"))
    changed = handlers(ref, "change")
    assert any(transcript in fn.outputs for fn in changed) and any(button in fn.outputs for fn in changed)
