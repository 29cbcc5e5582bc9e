"""One sentence of a result made again ("Again") and put back ("Restore"), on the tiny model.

The studio core (``studio.sentences.SentenceResult``) through the studio's queue, and the app's handler
(``ui.sentences.sentence_action``) that the Speak and Clone tabs' buttons call.
"""

from __future__ import annotations

import gradio as gr
import numpy as np
import pytest
import soundfile as sf

from omnivoice_demo.constants import NUM_CODEBOOKS, SAMPLE_RATE
from omnivoice_demo.engine.events import ChunkEvent, GenerationResult, StepEvent
from omnivoice_demo.engine.loop import join_chunks
from omnivoice_demo.storage.voice_file import Voice
from omnivoice_demo.errors import InvalidInput, ResourceLimitExceeded
from omnivoice_demo.storage.codes_file import load_codes
from omnivoice_demo.studio.sentences import SentenceResult, model_key
from omnivoice_demo.ui import sentences as sentences_ui
from omnivoice_demo.ui.tabs import speak as speak_tab
from tests.support.studios import folder_studio

TEXT = "The first sentence is here. And then a second sentence follows it, somewhat longer than the first one."
#: two chunks (sentence streaming); no silence trimming, so each chunk keeps its place in the output
SETTINGS = dict(sentence_streaming=True, num_step=4, seed=7, postprocess=False)
#: a voice as loud as the reference's level (RMS 0.1 or more): the join applies no gain over the whole
VOICE = Voice(codes=np.random.default_rng(3).integers(0, 1024, (NUM_CODEBOOKS, 40)), transcript="A short clip.",
              rms=0.2)
#: the join's silence between chunks and the padding at the start (audio.processing)
GAP = SAMPLE_RATE // 10
PAD = SAMPLE_RATE // 10


@pytest.fixture(scope="module")
def studio(tiny_fp32_folder, tmp_path_factory):
    return folder_studio(tiny_fp32_folder, tmp_path_factory.mktemp("sentences"))


def generated(studio, voice=VOICE, **overrides):
    """(plan, the result, a SentenceResult of it) of TEXT with ``voice``."""
    loaded = studio.models.get()
    plan = loaded.engine.prepare(TEXT, voice=voice, **dict(SETTINGS, **overrides))
    events = list(loaded.engine.run(plan))
    chunks = [e for e in events if isinstance(e, ChunkEvent)]
    assert len(chunks) == 2 and isinstance(events[-1], GenerationResult)
    return plan, events[-1], SentenceResult(TEXT, plan, chunks, model_key(loaded))


def again(studio, result: SentenceResult, index: int, plan, voice=VOICE):
    """Sentence ``index`` made again through the studio's queue (its next seed, ``plan``'s settings)."""
    loaded = studio.models.get()
    new = result.plan_again(loaded, index, voice, None, None, plan.config)
    event = result.submit_again(studio.service, loaded, new, index, "test").result()
    assert isinstance(event, ChunkEvent) and event.chunk == index
    result.keep(new, event)
    return new


def test_again_changes_only_its_sentence_and_restore_brings_the_earlier_take_back(studio):
    plan, first, result = generated(studio)
    # the join is the engine's own: before any change, the whole is the generation's output, byte for byte
    assert result.audio().tobytes() == first.audio.tobytes()
    audio = [t.audio.copy() for t in result.current]
    codes = [t.codes.copy() for t in result.current]

    new = again(studio, result, 1, plan)
    assert new.config.seed == plan.config.seed + 1 and new.chunks == plan.chunks
    # sentence 1 is a new take; sentence 0's codes and audio are the same bytes
    assert result.current[0].codes.tobytes() == codes[0].tobytes()
    assert result.current[0].audio.tobytes() == audio[0].tobytes()
    assert not np.array_equal(result.current[1].codes, codes[1])
    assert result.current[1].codes.shape == codes[1].shape          # the same planned length
    # the whole is the engine's join of the current takes ...
    joined = result.audio()
    assert joined.tobytes() == join_chunks([t.audio for t in result.current], VOICE.rms, plan.config).tobytes()
    # ... and only the samples where sentence 1 lies differ from the first output
    start = PAD + audio[0].size + GAP
    assert joined.size == first.audio.size
    differ = np.flatnonzero(joined != first.audio)
    assert differ.size and differ.min() >= start and differ.max() < start + audio[1].size
    assert result.current[0].seed is None and result.current[1].seed == new.config.seed
    # the GenerationResult behind the downloads holds the current codes
    current = result.result({"total": 1.0})
    assert current.audio.tobytes() == joined.tobytes()
    assert current.codes[1].tobytes() == result.current[1].codes.tobytes()

    result.restore(1)
    assert result.current[1].codes.tobytes() == codes[1].tobytes()
    assert result.current[1].audio.tobytes() == audio[1].tobytes()
    assert result.audio().tobytes() == first.audio.tobytes()
    # restoring again swaps back to the newer take; the next Again draws the seed after the last one drawn
    result.restore(1)
    assert not np.array_equal(result.current[1].codes, codes[1])
    assert again(studio, result, 1, plan).config.seed == plan.config.seed + 2


def test_sentence_zero_without_a_voice_and_the_first_chunk_as_later_chunks_reference(studio):
    """Without a voice, chunk 0 is the later chunks' reference; a new take of chunk 1 uses the current chunk 0."""
    plan, first, result = generated(studio, voice=None)
    assert result.audio().tobytes() == first.audio.tobytes()
    before = [t.codes.copy() for t in result.current]
    again(studio, result, 0, plan, voice=None)
    assert not np.array_equal(result.current[0].codes, before[0])
    assert result.current[1].codes.tobytes() == before[1].tobytes()
    assert result.audio().tobytes() == join_chunks([t.audio for t in result.current], None, plan.config).tobytes()


def test_a_cancelled_take_changes_nothing_and_bad_requests_are_named(studio):
    plan, first, result = generated(studio)
    loaded = studio.models.get()
    new = result.plan_again(loaded, 0, VOICE, None, None, plan.config)
    job = result.submit_again(studio.service, loaded, new, 0, "test")
    for event in job.events():
        if isinstance(event, StepEvent):
            job.cancel()
    assert job.wait(60) and job.state == "cancelled"
    assert result.audio().tobytes() == first.audio.tobytes() and result.previous == [None, None]
    with pytest.raises(InvalidInput, match="no sentence 2"):
        result.plan_again(loaded, 2, VOICE, None, None, plan.config)
    with pytest.raises(InvalidInput, match="no earlier take"):
        result.restore(0)
    # the limits of any request hold: a sentence's take is planned as the whole text is
    old = loaded.engine.limits
    try:
        loaded.engine.limits = type(old)(max_chunks=1)
        with pytest.raises(ResourceLimitExceeded, match="max_chunks"):
            result.plan_again(loaded, 0, VOICE, None, None, plan.config)
    finally:
        loaded.engine.limits = old


def test_the_app_handler_makes_a_sentence_again_with_its_files_and_restores_it(studio):
    values = dict(num_step=4, randomize=False, seed=5, postprocess=False, sentence_streaming=True)
    final = list(speak_tab.speak(studio, TEXT, values, []))[-1]
    result = final["takes"]
    assert isinstance(result, SentenceResult) and len(result) == 2
    html = sentences_ui.sentences_html(result)
    assert html.count('data-ov-action="again"') == 2 and html.count("disabled") == 2  # nothing to restore yet
    first_wav = sf.read(final["audio"])[0]

    updates = list(sentences_ui.sentence_action(studio, result, "again", 1, values, lambda v: (None, v), [],
                                                "Speak"))
    done = updates[-1]
    assert any("step" in u["progress"] for u in updates[1:-1])
    wav = sf.read(done["audio"]["value"])[0]
    np.testing.assert_allclose(wav, result.audio(), atol=1 / 32768)   # the download is the current version
    assert not np.array_equal(wav, first_wav)
    assert done["takes"] is result and load_codes(done["files"][2]).shape[-1] == sum(
        c.shape[-1] for c in result.result({"total": 0}).codes)
    assert "disabled" in done["sentences"] and done["sentences"].count("disabled") == 1  # sentence 2 can go back

    restored = list(sentences_ui.sentence_action(studio, result, "restore", 1, values, lambda v: (None, v), [],
                                                 "Speak"))[-1]
    np.testing.assert_array_equal(sf.read(restored["audio"]["value"])[0], first_wav)
    with pytest.raises(gr.Error) as refused:
        list(sentences_ui.sentence_action(studio, None, "again", 0, values, lambda v: (None, v), [], "Speak"))
    assert "generate one first" in refused.value.message


@pytest.mark.parametrize("text, options", [
    ('<speak>Hello there.<break time="300ms"/><voice name="onyx">Good morning.</voice></speak>', dict(ssml=True)),
    ("Anna: Hello there.\nBen: Good morning to you.", dict(speakers={"Anna": "alloy", "Ben": "onyx"})),
], ids=["ssml", "script"])
def test_ssml_and_script_results_finish_without_sentence_takes(studio, text, options):
    """SSML segments and a script's turns each have their own voice and place: the Speak handler finishes them
    (audio, files) and offers no per-sentence Again, which joins the chunks of one voice (a merged regression:
    building the sentence list from such a result raised an internal error after the audio was made)."""
    from omnivoice_demo.ui.controls import APP_DEFAULTS

    updates = list(speak_tab.speak(studio, text, dict(APP_DEFAULTS, num_step=2), [], **options))
    final = updates[-1]
    assert final["audio"] and "RTF" in final["info"]
    assert final["takes"] is None and sentences_ui.sentences_html(final["takes"]) == ""
