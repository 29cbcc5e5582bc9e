"""Word times from the recogniser: forced alignment against transformers on the same random weights.

``SpeechRecognizer.align_window`` must give every text token the time that
``WhisperForConditionalGeneration.generate(..., return_token_timestamps=True)`` gives it when the same text
is forced after the same prompt (a logits processor that allows only the next token of the text), for
several sets of alignment heads and clip lengths.  The NumPy median filter and time warping are checked
against transformers' own functions, the word grouping against its ``_combine_tokens_into_words``.
Random weights attend anywhere, so these tests check the computation, not that the times are good.
"""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from omnivoice_demo.asr import SpeechRecognizer
from omnivoice_demo.asr.alignment import WordTiming, dynamic_time_warping, group_words, median_filter
from omnivoice_demo.asr.attention_graph import RECORD_NAME, alignment_rel
from omnivoice_demo.errors import InvalidInput, ModelFolderError
from tests.support.signals import speech_like

TEXT = "Hello there, this is a small test of words. (Quoted) \"speech\" it's fine!"


@pytest.fixture(scope="module")
def rec(recognizer_folder):
    return SpeechRecognizer(recognizer_folder, precision="fp32", threads=2)


@pytest.fixture(scope="module")
def eager(whisper_checkpoint):
    import torch
    from transformers import WhisperFeatureExtractor, WhisperForConditionalGeneration

    torch.set_num_threads(2)
    model = WhisperForConditionalGeneration.from_pretrained(str(whisper_checkpoint), attn_implementation="eager")
    return model.eval(), WhisperFeatureExtractor.from_pretrained(str(whisper_checkpoint))


def transformers_token_times(eager, rec, wav, ids, lang, heads) -> np.ndarray:
    """``generate`` with the text forced token by token, ``return_token_timestamps=True``: the text's times."""
    import torch
    from transformers import LogitsProcessor, LogitsProcessorList

    model, extractor = eager

    class Force(LogitsProcessor):
        def __call__(self, input_ids, scores):
            k = input_ids.shape[1] - 4
            out = torch.full_like(scores, -float("inf"))
            out[:, ids[k] if k < len(ids) else rec.eos_id] = 0
            return out

    model.generation_config.alignment_heads = [list(h) for h in heads]
    features = extractor(wav, sampling_rate=16000, return_tensors="pt", return_attention_mask=True)
    prompt = torch.tensor([[rec.start_id, lang, rec.transcribe_id, rec.no_timestamps_id]])
    with torch.no_grad():
        out = model.generate(features.input_features, attention_mask=features.attention_mask,
                             decoder_input_ids=prompt, logits_processor=LogitsProcessorList([Force()]),
                             return_token_timestamps=True, return_dict_in_generate=True,
                             max_new_tokens=len(ids) + 1)
    assert out["sequences"][0].tolist()[4:] == list(ids) + [rec.eos_id]
    return out["token_timestamps"][0].numpy()[4:4 + len(ids)]


# --- the NumPy pieces against transformers' own ------------------------------------------------


@pytest.mark.parametrize("shape", [(3, 5, 40), (2, 17, 3), (4, 1, 9), (1, 30, 200)])
def test_median_filter_equals_transformers(shape):
    import torch
    from transformers.models.whisper.generation_whisper import _median_filter

    x = np.random.default_rng(sum(shape)).standard_normal((1, *shape)).astype(np.float32)
    for width in (1, 3, 7):
        expected = _median_filter(torch.from_numpy(x), width).numpy()
        np.testing.assert_array_equal(median_filter(x, width), expected)


@pytest.mark.parametrize("rows,cols,seed", [(1, 10, 0), (7, 50, 1), (20, 20, 2), (30, 400, 3), (12, 13, 4)])
def test_time_warping_equals_transformers(rows, cols, seed):
    from transformers.models.whisper.generation_whisper import _dynamic_time_warping

    rng = np.random.default_rng(seed)
    matrix = rng.standard_normal((rows, cols))
    if seed == 4:  # ties everywhere: the order of ties must be transformers'
        matrix = np.round(matrix)
    text, time = dynamic_time_warping(matrix)
    expected_text, expected_time = _dynamic_time_warping(matrix)
    np.testing.assert_array_equal(text, expected_text)
    np.testing.assert_array_equal(time, expected_time)


# --- token times against generate ----------------------------------------------------------------


@pytest.mark.parametrize("heads", [[(1, 0), (1, 1)], [(0, 1)], [(0, 0), (1, 1), (1, 0)]])
@pytest.mark.parametrize("seconds,text", [(1.7, "Short one."), (4.0, TEXT), (12.5, TEXT + " " + TEXT),
                                          (29.5, "Near the end of the window, " * 3)])
def test_token_times_equal_transformers(rec, eager, heads, seconds, text):
    wav = speech_like(seconds, 16000, seed=int(seconds * 10))[0]
    ids = rec.text_tokens(text)
    lang = rec.lang_to_id["<|en|>"]
    rec.alignment_heads = heads
    try:
        ours, probabilities, _ = rec.align_window(wav, ids, lang)
    finally:
        rec.alignment_heads = [(1, 0), (1, 1)]
    expected = transformers_token_times(eager, rec, wav, ids, lang, heads)
    np.testing.assert_allclose(ours, expected, atol=1e-6)
    assert ours.max() > 0 and ours.max() <= seconds, "the times must lie in the clip"
    assert probabilities.shape == (len(ids),) and ((probabilities > 0) & (probabilities < 1)).all()


def test_default_heads_are_the_checkpoints(rec, whisper_checkpoint):
    generation = json.loads((whisper_checkpoint / "generation_config.json").read_text())
    assert [tuple(h) for h in generation["alignment_heads"]] == rec.alignment_heads == [(1, 0), (1, 1)]


# --- words ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("text,language", [(TEXT, "en"), ("“Well,” she said — ¿qué? 3.5 km/h...", "es"),
                                           ("我们今天去公园散步，好吗？", "zh"), ("東京は晴れです。", "ja")])
def test_words_are_grouped_as_whisper_groups_them(rec, whisper_checkpoint, text, language):
    from transformers import WhisperTokenizerFast
    from transformers.models.whisper.tokenization_whisper import LANGUAGES, _combine_tokens_into_words

    tokenizer = WhisperTokenizerFast.from_pretrained(str(whisper_checkpoint))
    ids = rec.text_tokens(text)
    expected_words, _, expected_indices = _combine_tokens_into_words(tokenizer, ids, LANGUAGES[language])
    ours = group_words(ids, lambda t: rec.tokenizer.decode(t, skip_special_tokens=False), language, rec.eos_id)
    assert [w for w, _ in ours] == expected_words
    assert [i for _, i in ours] == expected_indices


def test_align_gives_the_words_of_the_text_with_times(rec):
    wav = speech_like(4.0, 24000, seed=4)[0]
    words = rec.align(wav, 24000, TEXT, language="en")
    assert all(isinstance(w, WordTiming) for w in words)
    assert " ".join(w.word for w in words) == TEXT
    starts = [w.start for w in words]
    assert starts == sorted(starts) and all(w.start <= w.end <= 4.0 for w in words)
    assert all(0 < w.probability < 1 for w in words)
    assert words[0].to_dict()["word"] == "Hello" and "speaker" not in words[0].to_dict()
    detected = rec.align(wav, 24000, TEXT)
    assert [w.word for w in detected] == [w.word for w in words]


def test_the_recognisers_own_markers_in_the_text_are_aligned_as_the_characters_written(rec):
    """Issue 49: ``<|en|>`` or ``<|notimestamps|>`` in the text became Whisper's markers (ids at or past
    end-of-text), and the alignment's logits, cut at end-of-text, raised an IndexError (a 500).  They are
    text a person could read out, so they are aligned as their characters, every id a text token."""
    text = "Say <|en|> and <|notimestamps|> then <|0.00|><|endoftext|> done."
    ids = rec.text_tokens(text)
    assert ids and max(ids) < rec.eos_id
    assert rec.tokenizer.decode(ids, skip_special_tokens=False) == " " + text
    plain = "Hello there, a plain text."   # a text without markers keeps encode's ids
    assert rec.text_tokens(plain) == rec.tokenizer.encode(" " + plain, add_special_tokens=False).ids
    wav = speech_like(4.0, 16000, seed=49)[0]
    words = rec.align(wav, 16000, text, language="en")   # Whisper's grouping splits "|" and "<" off as words
    assert "".join(w.word for w in words) == text.replace(" ", "") and words[-1].word == "done."
    assert [w.start for w in words] == sorted(w.start for w in words)


def test_long_text_is_aligned_window_by_window(rec):
    """44 s of audio and text over one window: aligned in pieces, every word once, in order, in the clip."""
    wav = speech_like(44.0, 16000, seed=44)[0]
    text = " ".join(f"word{i}" for i in range(120))
    words = rec.align(wav, 16000, text, language="en")
    assert [w.word for w in words] == text.split()
    starts = [w.start for w in words]
    assert starts == sorted(starts) and starts[-1] <= 44.0
    assert starts[-1] > 30.0, "the words of the second window must be placed in it"


def test_more_tokens_than_one_window_holds(rec):
    wav = speech_like(20.0, 16000, seed=20)[0]
    text = " ".join(["one two three four five six seven eight nine ten"] * 50)  # 500 words
    assert len(rec.text_tokens(text)) > rec.max_text_tokens
    words = rec.align(wav, 16000, text, language="en")
    assert len(words) == 500 and [w.start for w in words] == sorted(w.start for w in words)


# --- bad input ------------------------------------------------------------------------------------


def test_bad_input_is_refused_with_what_to_do(rec):
    wav = speech_like(2.0, 16000, seed=2)[0]
    for text in ("", "   ", None):
        with pytest.raises(InvalidInput, match="no text to align"):
            rec.align(wav, 16000, text)
    with pytest.raises(InvalidInput, match="too short for its text"):
        rec.align(wav[:1600], 16000, TEXT)  # 0.1 s for ~25 tokens
    with pytest.raises(InvalidInput, match="Klingon"):
        rec.align(wav, 16000, TEXT, language="Klingon")
    with pytest.raises(InvalidInput, match="shape"):
        rec.align(np.zeros(0, np.float32), 16000, TEXT)


def test_text_not_in_the_audio_is_aligned_with_low_probability(rec):
    """Random weights cannot tell heard words from unheard ones; the contract is that any text is aligned
    and every word gets a probability (the guard's test plants low ones)."""
    silence = np.zeros(16000 * 3, np.float32)
    words = rec.align(silence, 16000, "Words nobody said.", language="en")
    assert [w.word for w in words] == ["Words", "nobody", "said."] and all(w.probability < 0.5 for w in words)


def test_folder_without_alignment_heads_says_what_to_do(tmp_path):
    from convert.whisper import convert_whisper
    from convert.whisper_checkpoint import build_checkpoint

    checkpoint = build_checkpoint("test", tmp_path / "ckpt", seed=1, max_length=20, alignment_heads=None)
    folder = convert_whisper(checkpoint, tmp_path / "onnx", ("fp32",))
    rec = SpeechRecognizer(folder, precision="fp32")
    assert rec.transcribe(speech_like(1.0, 16000, seed=1)[0], 16000).language  # transcription still works
    with pytest.raises(ModelFolderError, match="alignment_heads.*convert.whisper"):
        rec.align(speech_like(1.0, 16000, seed=1)[0], 16000, "Hello.")


# --- the graph with the attention -------------------------------------------------------------------


def test_built_folders_carry_the_alignment_graph(recognizer_folder):
    from omnivoice_demo.asr.folder import RECOGNIZER_MANIFEST

    manifest = json.loads((recognizer_folder / RECOGNIZER_MANIFEST).read_text())
    for suffix in ("", "_int8"):
        assert alignment_rel(suffix) in manifest["files"]
    rec = SpeechRecognizer(recognizer_folder, precision="int8", threads=1)
    words = rec.align(speech_like(3.0, 16000, seed=3)[0], 16000, "Three little words.", language="en")
    assert [w.word for w in words] == ["Three", "little", "words."]


def test_hub_layout_folder_gets_its_graph_built_once_in_the_cache(recognizer_folder, tmp_path, monkeypatch):
    """A folder without the alignment graph (the Hub's exports): the copy is built once into our cache,
    reused, and a changed copy is refused; the source folder is not written to."""
    from omnivoice_demo.asr.folder import REQUIRED_CONFIG

    hub_like = tmp_path / "hub"
    (hub_like / "onnx").mkdir(parents=True)
    for name in REQUIRED_CONFIG:
        shutil.copy2(recognizer_folder / name, hub_like / name)
    for name in ("encoder_model.onnx", "decoder_model.onnx", "decoder_with_past_model.onnx"):
        shutil.copy2(recognizer_folder / "onnx" / name, hub_like / "onnx" / name)
    before = sorted(p.name for p in hub_like.rglob("*"))
    monkeypatch.setenv("OMNIVOICE_CACHE", str(tmp_path / "cache"))
    wav = speech_like(3.0, 16000, seed=7)[0]
    expected = SpeechRecognizer(recognizer_folder, precision="fp32").align(wav, 16000, TEXT, language="en")
    assert SpeechRecognizer(hub_like, precision="fp32").align(wav, 16000, TEXT, language="en") == expected
    assert sorted(p.name for p in hub_like.rglob("*")) == before
    built = list((tmp_path / "cache" / "asr" / "alignment").rglob("*.onnx"))
    assert len(built) == 1 and (built[0].parent / RECORD_NAME).is_file()
    stamp = built[0].stat().st_mtime_ns
    assert SpeechRecognizer(hub_like, precision="fp32").align(wav, 16000, TEXT, language="en") == expected
    assert built[0].stat().st_mtime_ns == stamp, "the copy must be reused, not rebuilt"
    assert not [p for p in built[0].parent.iterdir() if p.name.endswith((".part", ".partial"))]
    built[0].write_bytes(built[0].read_bytes() + b"\0")
    with pytest.raises(ModelFolderError, match="does not match its record"):
        SpeechRecognizer(hub_like, precision="fp32").align(wav, 16000, TEXT, language="en")


def test_a_graph_with_fused_attention_is_named():
    from onnx import TensorProto, helper

    from omnivoice_demo.asr.attention_graph import add_cross_attention_outputs

    key = helper.make_tensor_value_info("present.0.encoder.key", TensorProto.FLOAT, None)
    graph = helper.make_graph([helper.make_node("Identity", ["x"], ["present.0.encoder.key"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, None)], [key])
    with pytest.raises(ModelFolderError, match="layer 0 cannot be found.*convert.whisper"):
        add_cross_attention_outputs(helper.make_model(graph), 1)


# --- through the post-processing ----------------------------------------------------------------------


def bursts(places: list[tuple[float, float]], seconds: float, rate: int = 24000) -> np.ndarray:
    audio = np.zeros(int(seconds * rate), np.float32)
    for start, end in places:
        n = int((end - start) * rate)
        audio[int(start * rate):int(start * rate) + n] = 0.5 * np.sin(np.arange(n) * 0.3)
    return audio


def test_silence_removal_positions_are_what_it_keeps():
    """The input samples ``remove_silence_positions`` names, in order, are ``remove_silence``'s output, sample for
    sample (both through pydub's 16-bit signal; a filler sample, -1, is silence), and a time moves with them."""
    from omnivoice_demo.audio import processing as audio_ops

    audio = bursts([(0.4, 1.0), (1.3, 1.8), (3.5, 4.1), (6.0, 6.2)], 7.0)[None]
    for mid in (500, 300):
        out = audio_ops.remove_silence(audio, 24000, mid_sil=mid, lead_sil=100, trail_sil=100)
        positions, replayed = audio_ops.remove_silence_positions(audio, 24000, mid_sil=mid, lead_sil=100,
                                                                 trail_sil=100)
        quantised = audio_ops.audiosegment_to_numpy(audio_ops.numpy_to_audiosegment(audio, 24000))
        named = np.where(positions >= 0, quantised[:, np.maximum(positions, 0)], 0.0)
        np.testing.assert_array_equal(named, out)
        np.testing.assert_array_equal(replayed, out)
        assert out.shape[-1] < audio.shape[-1]  # something was removed: the map is not the identity
        # a moment at a kept input sample lands on that very sample of the output
        for k in (0, len(positions) // 3, len(positions) - 1):
            if positions[k] >= 0:
                moved = audio_ops.map_through_positions([positions[k] / 24000], positions, 24000)[0]
                assert round(moved * 24000) == k


def test_word_times_follow_the_audio_through_post_processing():
    """Planted: 'words' are bursts between long silences; their times, placed on the final audio, must land on
    the same bursts after the cross-fade, the silence removal and the padding."""
    from omnivoice_demo.settings.generation import GenerationConfig
    from omnivoice_demo.engine.loop import join_chunks
    from omnivoice_demo.engine.word_times import place_words

    chunks = [bursts([(0.2, 0.6), (2.0, 2.5)], 3.0), bursts([(0.1, 0.4), (1.9, 2.2)], 2.6)]
    words = [[WordTiming("a", 0.2, 0.6, 0.9), WordTiming("b", 2.0, 2.5, 0.9)],
             [WordTiming("c", 0.1, 0.4, 0.9), WordTiming("d", 1.9, 2.2, 0.9)]]
    config = GenerationConfig()
    final = join_chunks(chunks, None, config)
    placed = place_words(words, chunks, config, len(final))
    frames = final[:len(final) // 24 * 24].reshape(-1, 24)  # 1 ms frames
    loud = np.concatenate([[False], np.sqrt((frames ** 2).mean(axis=1)) > 0.05])
    edges = np.flatnonzero(np.diff(loud.astype(np.int8)) == 1) / 1000  # where each burst starts in the final audio
    assert len(edges) == 4 and [w.word for w in placed] == ["a", "b", "c", "d"]
    np.testing.assert_allclose([w.start for w in placed], edges, atol=0.003)
    assert placed[-1].end <= len(final) / 24000


# --- the engine -------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def words_engine(tiny_fp32_folder, recognizer_folder):
    from omnivoice_demo.asr import LazyRecognizer
    from omnivoice_demo.engine.loop import OmniVoiceEngine

    return OmniVoiceEngine(tiny_fp32_folder, verify="size", calibrate=False, backbone="fp32",
                           recognizer=LazyRecognizer(str(recognizer_folder), "fp32", threads=1))


SENTENCES = ("The first sentence is here, and it is long enough to stand on its own. Then a second one follows it "
             "closely, with a comma, and it goes on for a while longer than the first.")


def test_generate_with_word_timestamps(words_engine):
    from omnivoice_demo.engine.word_times import place_words, stream_offsets

    events = list(words_engine.stream(SENTENCES, num_step=2, seed=3, word_timestamps=True, sentence_streaming=True))
    result = events[-1]
    chunks = [e for e in events if e.kind == "chunk"]
    assert len(chunks) == 2 and len(result.chunk_words) == 2
    assert [w.word for w in result.words] == SENTENCES.split()
    starts = [w.start for w in result.words]
    assert starts == sorted(starts) and 0 <= starts[0] and result.words[-1].end <= result.duration
    assert all(w.start <= w.end for w in result.words)
    # the stream: each chunk's words as it arrives, from the chunk's own start
    for event, own in zip(chunks, result.chunk_words):
        assert event.words == own and event.words[-1].end <= len(event.audio) / 24000 + 1e-6
    offsets = stream_offsets([e.audio for e in chunks])
    assert offsets[0] == 0 and offsets[1] == (len(chunks[0].audio) + 2400) / 24000  # the cross-fade's 0.1 s gap
    assert result.words == place_words(result.chunk_words, [e.audio for e in chunks], result.config,
                                       len(result.audio))
    assert "align" in result.timings

    plain = words_engine.generate(SENTENCES, num_step=2, seed=3, sentence_streaming=True)
    np.testing.assert_array_equal(plain.audio, result.audio)  # the words change nothing of the audio
    assert plain.words == [] and all(e.words is None for e in
                                     words_engine.stream("Short.", num_step=2, seed=3) if e.kind == "chunk")


def test_dialogue_words_carry_their_speaker(words_engine):
    from omnivoice_demo.text.script import Turn

    plan = words_engine.prepare_turns([Turn("Anna", "Hello there Ben."), Turn("Ben", "Hello Anna.")],
                                      num_step=2, seed=1, word_timestamps=True)
    result = list(words_engine.run(plan))[-1]
    assert [(w.word, w.speaker) for w in result.words] == [("Hello", "Anna"), ("there", "Anna"), ("Ben.", "Anna"),
                                                           ("Hello", "Ben"), ("Anna.", "Ben")]
    ben = result.turns[1]
    assert all(ben["start"] <= w.start <= ben["end"] for w in result.words if w.speaker == "Ben")
    assert result.words[3].to_dict()["speaker"] == "Ben"


def test_ssml_break_moves_the_words_after_it(words_engine):
    result = words_engine.generate('<speak>Before the pause.<break time="2s"/>After it.</speak>', ssml=True, num_step=2,
                                   seed=1, word_timestamps=True)
    assert [w.word for w in result.words] == ["Before", "the", "pause.", "After", "it."]
    second = result.segments[1]
    assert second["start"] >= 2.0 and all(second["start"] <= w.start <= second["end"] for w in result.words[3:])


def test_a_sentence_made_again_brings_its_own_words(words_engine):
    plan = words_engine.prepare_sentence(SENTENCES, None or words_engine.prepare(
        SENTENCES, sentence_streaming=True).chunks, 1, num_step=2, seed=9, word_timestamps=True)
    first = words_engine.generate(SENTENCES, num_step=2, seed=3, word_timestamps=True, sentence_streaming=True)
    events = list(words_engine.run_sentence(plan, 1, first.codes))
    again = events[-1]
    assert again.kind == "chunk" and [w.word for w in again.words] == plan.chunks[1].split()
    assert again.words[-1].end <= len(again.audio) / 24000 + 1e-6  # from the chunk's own start


def test_word_timestamps_without_alignment_heads_is_refused_before_work(tiny_fp32_folder, tmp_path):
    from convert.whisper import convert_whisper
    from convert.whisper_checkpoint import build_checkpoint
    from omnivoice_demo.asr import LazyRecognizer
    from omnivoice_demo.engine.loop import OmniVoiceEngine

    checkpoint = build_checkpoint("test", tmp_path / "ckpt", seed=1, max_length=20, alignment_heads=None)
    folder = convert_whisper(checkpoint, tmp_path / "onnx", ("fp32",))
    engine = OmniVoiceEngine(tiny_fp32_folder, verify="size", calibrate=False, backbone="fp32",
                             recognizer=LazyRecognizer(str(folder), "fp32"))
    with pytest.raises(ModelFolderError, match="alignment_heads"):
        engine.stream("Hello.", num_step=2, word_timestamps=True)


# --- subtitles and the command line ---------------------------------------------------------------------


def test_word_level_cues_and_karaoke_vtt():
    from omnivoice_demo.batch.subtitles import cues_for_words, parse_timestamps, to_karaoke_vtt, to_srt

    words = [WordTiming(w, 0.5 * i, 0.5 * i + 0.4, 0.9, "Anna" if i < 10 else "Ben")
             for i, w in enumerate("One two three. Four five six seven eight nine ten eleven twelve".split())]
    cues = cues_for_words(words, max_words=4)
    assert [c.text for c in cues] == ["One two three.", "Four five six seven", "eight nine ten", "eleven twelve"]
    assert cues[3].speaker == "Ben" and cues[2].speaker == "Anna"  # a new speaker starts a new cue
    assert all(c.end - c.start <= 1.2 for c in cues_for_words(words, max_words=20, max_seconds=1.2))
    srt = to_srt(cues)
    assert parse_timestamps(srt)[0] == (0.0, 1.4) and "Anna: One two three." in srt
    vtt = to_karaoke_vtt(cues)
    assert vtt.startswith("WEBVTT") and "<v Anna>One <00:00:00.500>two <00:00:01.000>three." in vtt
    assert "<v Ben>eleven <00:00:05.500>twelve" in vtt


def test_a_word_the_aligner_gave_no_length_still_has_a_cue_and_a_clip_with_one():
    """Issue 51: a word with start == end wrote ``00:00:00.100 --> 00:00:00.100`` (WebVTT wants the end after the
    start) and a read-along ``clipBegin == clipEnd``; every cue and every clip gets a length, and a clip stays
    inside its sentence's audio."""
    import re

    from omnivoice_demo.batch.subtitles import Cue, parse_timestamps, to_vtt, word_subtitles
    from omnivoice_demo.book.overlay import chapter_documents, units_of

    words = [WordTiming("Hello", 0.1, 0.1, 0.9), WordTiming("there.", 0.1, 0.6, 0.9), WordTiming("Bye.", 2.0, 2.0, 0.9)]
    documents = [word_subtitles(words, "srt"), word_subtitles(words, "vtt"), to_vtt([Cue(0.1, 0.1, "Hello.")])]
    for document in documents:
        times = parse_timestamps(document)
        assert times and all(end > start for start, end in times), document
    timed = [{"word": "Hello", "start": 0.1, "end": 0.1}, {"word": "there", "start": 0.1, "end": 0.6},
             {"word": "Bye", "start": 0.8, "end": 0.8}]
    units = units_of("c01s0001", "Hello there. Bye", 1.0, 1.8, timed)
    assert [u.id for u in units] == ["c01s0001w001", "c01s0001w002", "c01s0001w003"]
    assert all(1.0 <= u.start < u.end <= 1.8 for u in units), units
    assert all(a.end <= b.start for a, b in zip(units, units[1:])), units   # nor over the next word's clip
    assert all(u.start < u.end for u in units_of("c01s0002", "Gone.", 2.0, 2.0))
    _, smil = chapter_documents(1, "One", [[("c01s0001", "Hello there. Bye", units)]], "audio/01.m4a", "en")
    clips = re.findall(r'clipBegin="([\d:.]+)" clipEnd="([\d:.]+)"', smil)
    assert len(clips) == 3 and all(begin < end for begin, end in clips), clips


def test_sentences_of_subtitles_and_books_do_not_end_at_an_abbreviation_nor_lose_a_closing_quote():
    """A book's sentence items and a chunk's cues are cut by ``text.sentences``: "Mr." alone made an item of its
    own (spoken by itself), the quote closing "Why?" went missing, and a quoted question the sentence goes on
    from was cut from it (issue 50)."""
    from omnivoice_demo.batch.subtitles import cues_for_words
    from omnivoice_demo.text.sentences import sentence_texts

    text = 'Mr. Smith met Dr. Jones. "Why?" she asked. Then he left.'
    assert sentence_texts(text, "en") == ["Mr. Smith met Dr. Jones.", '"Why?" she asked.', "Then he left."]
    assert sentence_texts("你好。再见！") == ["你好。", "再见！"]
    assert sentence_texts("  ") == [""] and sentence_texts("no end") == ["no end"]
    words = [WordTiming(w, 0.3 * i, 0.3 * i + 0.2, 0.9) for i, w in enumerate("Mr. Smith left. Then rain.".split())]
    assert [c.text for c in cues_for_words(words)] == ["Mr. Smith left.", "Then rain."]


def test_cli_synth_writes_words_and_subtitles(tiny_fp32_folder, recognizer_folder, tmp_path):
    import subprocess
    import sys

    out, words, subtitles = tmp_path / "out.wav", tmp_path / "words.json", tmp_path / "out.vtt"
    base = [sys.executable, "-m", "omnivoice_demo", "synth", "--model", str(tiny_fp32_folder), "--precision",
            "fp32", "--text", "Words with their times.", "--asr-model", str(recognizer_folder), "--asr-precision",
            "fp32", "--steps", "2", "--seed", "1", "--output", str(out)]
    done = subprocess.run(base + ["--words", str(words), "--subtitles", str(subtitles)], capture_output=True,
                          text=True, timeout=600, env={**__import__("os").environ, "HF_HUB_OFFLINE": "1"})
    assert done.returncode == 0, done.stderr
    data = json.loads(words.read_text())
    assert [w["word"] for w in data["words"]] == ["Words", "with", "their", "times."]
    assert data["audio"] == "out.wav" and all(w["end"] <= data["duration"] for w in data["words"])
    assert subtitles.read_text().startswith("WEBVTT") and "<00:00:" in subtitles.read_text()
    bad = subprocess.run(base + ["--words", str(tmp_path / "words.txt")], capture_output=True, text=True, timeout=300)
    assert bad.returncode != 0 and "--words writes JSON" in bad.stderr and "Traceback" not in bad.stderr
    assert not (tmp_path / "words.txt").exists()


# --- the sentence check ------------------------------------------------------------------------------------


class PlantedRecognizer:
    """Planted behaviour (random weights cannot tell a heard word from a dropped one): the transcript is always
    the text, and the first take's second word is aligned with a very low probability."""

    def __init__(self, text: str):
        self.text, self.aligned = text, 0

    def transcribe(self, audio, sample_rate, language=None):
        from omnivoice_demo.asr import Transcript

        return Transcript(text=self.text, language="en", seconds=0.0)

    def align(self, audio, sample_rate, text, language=None):
        self.aligned += 1
        words, seconds = text.split(), len(audio) / sample_rate
        return [WordTiming(w, round(i * seconds / len(words), 3), round((i + 1) * seconds / len(words), 3),
                           0.001 if self.aligned == 1 and i == 1 else 0.9) for i, w in enumerate(words)]


def test_guard_fails_a_take_with_weak_words_and_names_them(tiny_fp32_folder):
    from omnivoice_demo.engine.loop import OmniVoiceEngine

    text = "Hello brave new world."
    planted = PlantedRecognizer(text)
    engine = OmniVoiceEngine(tiny_fp32_folder, verify="size", calibrate=False, backbone="fp32", recognizer=planted)
    result = engine.generate(text, num_step=2, seed=4, guard=True, guard_cer=0.5, guard_tries=3, word_timestamps=True)
    check = result.checks[0]
    assert [t.problems for t in check.takes][0][-1] == "weak words" and check.takes[0].weak_words == ("brave",)
    assert check.kept == 2 and check.passed and "weak_words" in check.to_dict()["takes"][0]
    assert "(brave)" not in check.line() and planted.aligned == 2  # the kept take's words are not aligned again
    assert [w.word for w in result.words] == text.split() and all(w.probability == 0.9 for w in result.words)
    assert result.chunk_words[0] == list(check.takes[1].words)
    without = engine.generate(text, num_step=2, seed=4, guard=True, guard_cer=0.5, guard_tries=3)
    assert "weak words" not in without.checks[0].takes[0].problems  # word timing off: nothing aligned


def test_batch_item_with_word_timestamps_writes_word_subtitles(tiny_fp32_folder, recognizer_folder, tmp_path,
                                                                monkeypatch):
    from omnivoice_demo.batch.items import read_items
    from omnivoice_demo.batch.local import InlineBackend
    from omnivoice_demo.batch.plan import BatchPlan
    from omnivoice_demo.batch.runner import run_batch
    from omnivoice_demo.batch.subtitles import parse_timestamps
    from omnivoice_demo.batch.worker import Job, ModelSpec
    from omnivoice_demo.settings.generation import GenerationConfig

    monkeypatch.setenv("OMNIVOICE_ASR_MODEL", str(recognizer_folder))
    source = tmp_path / "items.jsonl"
    source.write_text(json.dumps({"id": "a", "text": "Batch words have times.", "seed": 1, "word_timestamps": True})
                      + "\n" + json.dumps({"id": "b", "text": "No words here.", "seed": 2}) + "\n")
    items = read_items(source, base=GenerationConfig(num_step=2))
    job = Job(output=str(tmp_path / "out"), subtitles=("srt", "vtt"))
    summary = run_batch(BatchPlan(items=tuple(items), job=job),
                        backend=lambda: InlineBackend(ModelSpec(model=str(tiny_fp32_folder))), progress=False).summary
    assert summary.done == 2
    out = tmp_path / "out"
    sidecar = json.loads((out / "a.json").read_text())
    assert [w["word"] for w in sidecar["words"]] == ["Batch", "words", "have", "times."]
    assert "Batch words have times." in (out / "a.words.srt").read_text()
    karaoke = (out / "a.words.vtt").read_text()
    assert karaoke.startswith("WEBVTT") and "<00:00:" in karaoke
    assert all(end <= sidecar["seconds"] + 1e-3 for _, end in parse_timestamps(karaoke))
    assert not (out / "b.words.srt").exists() and "words" not in json.loads((out / "b.json").read_text())
