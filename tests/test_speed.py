"""Sentence streaming, guidance reuse, presets and time estimates (issue 10).

Behaviour only: chunk order and content, the voice carried across chunks,
token-exact chunks against the reference, presets applied, how many
unconditional forwards run and what is reused, and that estimates count the
work the engine really does.  No wall-clock time is asserted.
"""

from __future__ import annotations

import argparse
import json
import threading
import time

import numpy as np
import pytest

from omnivoice_demo import OmniVoiceEngine
from omnivoice_demo.engine import loop as engine_module
from omnivoice_demo.backbones import choice as backbone_choice
from omnivoice_demo.backbones.probe import ProbeResult
from omnivoice_demo.audio.processing import cross_fade_chunks
from omnivoice_demo.settings.generation import GenerationConfig, add_config_arguments, config_from_arguments
from omnivoice_demo.errors import InvalidInput
from omnivoice_demo.engine.estimate import PipelineEstimator, fit_forward_curve
from omnivoice_demo.engine.work import plan_work
from omnivoice_demo.settings.presets import PRESETS, matching_preset
from omnivoice_demo.engine.sampling import decode_step, guidance_schedule
from omnivoice_demo.engine.streaming import playback_piece, sentence_chunks

PARAGRAPH = ("The old lighthouse stood at the edge of the cliff. Every night its lamp turned slowly over the water. "
             "Sailors far from home looked for it in the dark. One winter the keeper fell ill and the light went "
             "out. A girl from the village climbed the stairs with a lantern. By morning every boat was safe in "
             "the harbour.")
GREEDY = dict(position_temperature=0.0, class_temperature=0.0)


@pytest.fixture(scope="module")
def engine(tiny_fp32_folder):
    return OmniVoiceEngine(tiny_fp32_folder)


# --- sentence planning -------------------------------------------------------------------

def test_first_chunk_is_the_first_sentence_and_nothing_is_lost():
    chunks = sentence_chunks(PARAGRAPH, target_frames=500)
    assert chunks[0] == "The old lighthouse stood at the edge of the cliff."
    assert len(chunks) >= 2
    assert " ".join(chunks).split() == PARAGRAPH.split()


def test_later_chunks_are_grouped_up_to_the_chunk_size():
    chunks = sentence_chunks(PARAGRAPH, target_frames=500, chunk_duration=15.0)
    # 500 frames for 311 characters: 15 s = 375 frames = 233 characters per chunk, filled greedily
    chunk_len = int(15.0 * 25 / (500 / len(PARAGRAPH)))
    assert len(chunks) == 3 and all(len(c) <= chunk_len for c in chunks[1:])
    assert len(chunks[1]) + 1 + len(chunks[2]) > chunk_len
    small = sentence_chunks(PARAGRAPH, target_frames=500, chunk_duration=2.0)
    assert small == [s.strip() + "." for s in PARAGRAPH.rstrip(".").split(". ")]  # one sentence each


def test_a_long_first_sentence_is_cut_at_a_clause_boundary():
    text = ("When the morning light finally came through the old kitchen window, the whole family gathered "
            "around the table, and nobody said a word. Then it rained.")
    chunks = sentence_chunks(text, target_frames=230, first_chunk_seconds=3.0)
    assert chunks[0] == "When the morning light finally came through the old kitchen window,"
    assert " ".join(chunks).split() == text.split()


def test_a_short_first_sentence_takes_more_so_later_chunks_keep_the_speaking_rate():
    """Below 50 frames the duration estimator lengthens a text; later chunks take their rate from the first."""
    from omnivoice_demo.engine.duration import chunk_target_frames, estimate_target_frames, total_weight

    text = "Hi there. The weather today is bright and calm, and the birds are singing. We will walk to the lake."
    chunks = sentence_chunks(text, estimate_target_frames(text))
    assert chunks[0].startswith("Hi there. The weather") and len(chunks) >= 2
    frames = chunk_target_frames(chunks, estimate_target_frames(text))
    rates = [f / total_weight(c) for f, c in zip(frames, chunks)]
    assert frames[0] >= 50 and max(rates) / min(rates) < 1.05
    assert sentence_chunks("Hello there. Bye now.", 40) == ["Hello there. Bye now."]  # too short to stream


def test_one_sentence_stays_one_chunk():
    assert sentence_chunks("Just one sentence, with a comma.", 40) == ["Just one sentence, with a comma."]


def test_first_sentence_is_its_own_chunk_past_the_chunking_threshold_too(engine):
    """Issue 18: a text over 30 s used to stream nothing until a 15 s chunk was done."""
    from omnivoice_demo.engine.duration import chunk_for_generation

    text = " ".join([PARAGRAPH] * 4)  # about a minute of speech at the default rate
    unstreamed = engine.prepare(text)
    assert unstreamed.target_frames > 30 * 25 and len(unstreamed.chunks) >= 3  # the reference's chunking
    assert unstreamed.chunks == chunk_for_generation(text, unstreamed.target_frames, 15.0)
    streamed = engine.prepare(text, sentence_streaming=True)
    assert streamed.chunks[0] == "The old lighthouse stood at the edge of the cliff."
    assert " ".join(streamed.chunks).split() == text.split()
    chunk_len = int(15.0 * 25 / (streamed.target_frames / len(text)))
    assert all(len(chunk) <= chunk_len for chunk in streamed.chunks[1:])  # later chunks: the reference's sizes
    assert len(streamed.chunks) >= len(unstreamed.chunks)
    one_long_sentence = "and then " * 120 + "the end."  # no sentence to cut: chunked as the reference does
    plan = engine.prepare(one_long_sentence, sentence_streaming=True)
    assert plan.target_frames > 30 * 25 and len(plan.chunks) > 1


def test_playback_pieces_join_as_the_reference_cross_fade():
    rng = np.random.default_rng(0)
    audios = [rng.uniform(-0.05, 0.05, n).astype(np.float32) for n in (9600, 4800, 7200)]
    pieces = [playback_piece(a, i, 3, ref_rms=0.2) for i, a in enumerate(audios)]  # loud voice: no scaling
    joined = cross_fade_chunks([a[np.newaxis] for a in audios])[0]
    np.testing.assert_allclose(np.concatenate(pieces), joined, atol=1e-7)
    # without a voice each piece is brought to the final peak level
    assert np.abs(playback_piece(audios[0], 0, 3, None)).max() == pytest.approx(0.5, rel=1e-5)


# --- streaming in the engine -------------------------------------------------------------

def test_streaming_off_is_one_chunk_and_on_emits_chunks_in_order(engine):
    assert engine.prepare(PARAGRAPH).chunks == [PARAGRAPH]
    plan = engine.prepare(PARAGRAPH, sentence_streaming=True)
    assert len(plan.chunks) >= 2
    events = list(engine.stream(PARAGRAPH, sentence_streaming=True, num_step=4, seed=1))
    done = 0
    for event in events[:-1]:
        if event.kind == "step":  # a chunk's steps come after the previous chunk's audio, before its own
            assert event.chunk == done
        else:
            assert event.kind == "chunk" and event.chunk == done
            done += 1
    assert done == len(plan.chunks)
    for event in events:
        if event.kind != "chunk":
            continue
        np.testing.assert_array_equal(event.audio, engine.decode(event.codes))
        assert event.playback is not None and event.playback.dtype == np.float32
    result = events[-1]
    assert result.chunks == plan.chunks and len(result.codes) == len(plan.chunks)


def rows_spy(engine, monkeypatch):
    seen = []
    original = engine._rows

    def spy(text, frames, ref_text, ref_codes, plan):
        seen.append((text, ref_text, None if ref_codes is None else np.array(ref_codes)))
        return original(text, frames, ref_text, ref_codes, plan)

    monkeypatch.setattr(engine, "_rows", spy)
    return seen


def test_without_a_voice_the_first_chunk_is_the_voice_of_the_later_ones(engine, monkeypatch):
    seen = rows_spy(engine, monkeypatch)
    result = engine.generate(PARAGRAPH, sentence_streaming=True, chunk_duration=4.0, num_step=4, seed=2)
    assert len(result.chunks) >= 3
    assert seen[0][1] is None and seen[0][2] is None
    for _text, ref_text, ref_codes in seen[1:]:
        assert ref_text == result.chunks[0]
        np.testing.assert_array_equal(ref_codes, result.codes[0])


def test_with_a_voice_every_chunk_uses_the_voice(engine, monkeypatch):
    from tests.support.signals import speech_like

    voice = engine.clone_voice(speech_like(2.0, 16000, seed=3), 16000, "A short reference clip")
    seen = rows_spy(engine, monkeypatch)
    result = engine.generate(PARAGRAPH, voice=voice, sentence_streaming=True, num_step=4, seed=2)
    assert len(result.chunks) >= 2
    for _, ref_text, ref_codes in seen:
        assert ref_text == voice.transcript
        np.testing.assert_array_equal(ref_codes, voice.codes)


def test_streamed_chunks_are_token_exact_with_the_reference_chunk_loop(engine, reference_model, monkeypatch):
    """The reference's _generate_chunked, handed our sentence chunks, makes the same codes and audio."""
    import torch
    from omnivoice.models import omnivoice as reference_module

    text = ". ".join(PARAGRAPH.split(". ")[:3]) + "."
    chunks = engine.prepare(text, sentence_streaming=True).chunks
    assert len(chunks) >= 2
    monkeypatch.setattr(reference_module, "chunk_text_punctuation", lambda **kwargs: list(chunks))
    with torch.no_grad():
        reference_codes = []
        iterate = reference_model._generate_iterative
        monkeypatch.setattr(reference_model, "_generate_iterative",
                            lambda task, config: reference_codes.extend(iterate(task, config)) or
                            reference_codes[-task.batch_size:])
        reference_audio = reference_model.generate(text=text, audio_chunk_threshold=0.1, **GREEDY)[0]
    monkeypatch.undo()
    events = list(engine.stream(text, sentence_streaming=True, **GREEDY))
    ours, raw = events[-1], [e.audio for e in events if e.kind == "chunk"]
    assert len(ours.codes) == len(reference_codes) == len(chunks)
    for mine, theirs in zip(ours.codes, reference_codes):
        np.testing.assert_array_equal(mine, theirs.numpy())
    # same codes: the audio differs only by the codec's float error and pydub's 16-bit rounding, scaled
    # by the loudness gain (the tolerance of test_engine.assert_same_model_output)
    peak = max(float(np.abs(np.concatenate(raw)).max()), 1e-6)
    tolerance = 0.5 / peak * (2 * 2.0**-15 + 1e-4 * peak)
    reference_audio = np.asarray(reference_audio).reshape(-1)
    assert ours.audio.shape == reference_audio.shape
    assert np.abs(ours.audio - reference_audio).max() <= tolerance


# --- guidance reuse ----------------------------------------------------------------------

def test_no_session_spins_between_runs(engine):
    """ONNX Runtime's workers block when idle (``runtime.sessions.SESSION_CONFIG``) in every session of the engine,
    whose options are copied to hand over the weights in memory: spinning workers of the sessions not
    running took the 2 cores from numpy's sampling (issue 20: 3x the CPU seconds of a generation)."""
    for session in [engine.model.embeddings, engine.model.backbone, engine.model.heads,
                    *engine.codec.sessions.values()]:
        options = session.get_session_options()
        for key in ("session.intra_op.allow_spinning", "session.inter_op.allow_spinning"):
            assert options.get_session_config_entry(key) == "0", (session, key)


# --- a step's two forwards side by side ------------------------------------------------------

def two_rows(model):
    rng = np.random.default_rng(0)
    return ((rng.standard_normal((1, 21, model.hidden_size)).astype(np.float32), [21]),
            (rng.standard_normal((1, 13, model.hidden_size)).astype(np.float32), [13]))


def test_a_steps_two_forwards_run_at_once_and_compute_what_they_compute_alone(engine, monkeypatch):
    model = engine.model
    first, second = two_rows(model)
    alone = model.hidden_states(*first), model.hidden_states(*second)
    monkeypatch.setattr(model, "overlap_forwards", True)
    together = model.hidden_states_pair(first, second)
    np.testing.assert_array_equal(together[0], alone[0])
    np.testing.assert_array_equal(together[1], alone[1])
    # at once: each forward waits at a barrier for the other (one after the other would break it)
    barrier, threads = threading.Barrier(2, timeout=20), []
    original = model.hidden_states

    def meet(embeds, lengths):
        threads.append(threading.current_thread().name)
        barrier.wait()
        return original(embeds, lengths)

    monkeypatch.setattr(model, "hidden_states", meet)
    model.hidden_states_pair(first, second)
    assert len(set(threads)) == 2
    # without overlap (one thread), one after the other on the caller's thread
    threads.clear()
    monkeypatch.setattr(model, "hidden_states", lambda e, n: threads.append(threading.current_thread().name) or
                        original(e, n))
    monkeypatch.setattr(model, "overlap_forwards", False)
    model.hidden_states_pair(first, second)
    assert threads == [threading.current_thread().name] * 2


def test_a_failing_forward_raises_after_the_other_has_finished(engine, monkeypatch):
    model = engine.model
    first, second = two_rows(model)
    original, finished = model.hidden_states, []

    def first_fails(embeds, lengths):
        if lengths == first[1]:
            raise RuntimeError("first forward failed")
        time.sleep(0.3)
        finished.append(lengths[0])
        return original(embeds, lengths)

    monkeypatch.setattr(model, "overlap_forwards", True)
    monkeypatch.setattr(model, "hidden_states", first_fails)
    with pytest.raises(RuntimeError, match="first forward failed"):
        model.hidden_states_pair(first, second)
    assert finished == [13]  # nothing left running behind the error


def test_overlapping_the_forwards_leaves_every_code_unchanged(engine, monkeypatch):
    runs = {}
    for overlap in (True, False):
        monkeypatch.setattr(engine.model, "overlap_forwards", overlap)
        runs[overlap] = engine.generate("Side by side or one after the other.", seed=3, num_step=8)
    np.testing.assert_array_equal(runs[True].codes[0], runs[False].codes[0])


def test_one_thread_runs_the_forwards_one_after_the_other(tiny_fp32_folder):
    one = OmniVoiceEngine(tiny_fp32_folder, threads=1, verify="none", calibrate=False)
    two = OmniVoiceEngine(tiny_fp32_folder, threads=2, verify="none", calibrate=False)
    assert not one.model.overlap_forwards and two.model.overlap_forwards


def test_the_estimate_counts_a_pair_of_forwards_at_its_measured_share():
    from omnivoice_demo.engine.work import RATE_STAGES, ChunkWork, PlanWork

    estimator = PipelineEstimator()
    estimator.rates = dict.fromkeys(RATE_STAGES, 0.0)
    for positions, seconds in ((10, 1.0), (20, 2.0), (40, 4.0)):
        estimator.observe_forward(positions, seconds)
    work = PlanWork(chunks=[ChunkWork(prefix=10, frames=10, schedule=[5, 5], uncond=[True, False])], guided=True)
    cond, uncond = estimator.forward_seconds(20), estimator.forward_seconds(10)
    assert estimator.estimate(work).stages["backbone"] == pytest.approx(2 * cond + uncond)
    estimator.observe_pair(20, 10, 0.6 * (cond + uncond))
    assert estimator.pair_share == pytest.approx(0.95 + 0.05 * 0.6)
    assert estimator.estimate(work).stages["backbone"] == pytest.approx(estimator.pair_share * (cond + uncond) + cond)
    # with nothing measured alone yet, a pair starts the curve
    fresh = PipelineEstimator()
    fresh.observe_pair(20, 10, 3.0)
    assert sorted(fresh.forwards) == [(10, pytest.approx(1.0)), (20, pytest.approx(2.0))]


def test_guidance_schedule():
    assert guidance_schedule([3, 3, 3, 3], 1) == [True] * 4
    assert guidance_schedule([3, 3, 3, 3, 3], 2) == [True, False, True, False, True]
    # a step that decides nothing runs no forward and does not count
    assert guidance_schedule([0, 3, 3, 0, 3], 2) == [False, True, False, False, True]


def count_forwards(engine, monkeypatch, text, **kwargs):
    """(conditional, unconditional) forward counts of one run, and the unconditional logits each step saw."""
    lengths, seen = [], []
    original = engine.model.hidden_states
    monkeypatch.setattr(engine.model, "hidden_states", lambda embeds, lens: lengths.append(lens[0]) or
                        original(embeds, lens))

    def spy_step(tokens, cond, uncond, k, **options):
        seen.append(None if uncond is None else uncond.copy())
        return decode_step(tokens, cond, uncond, k, **options)

    monkeypatch.setattr(engine_module, "decode_step", spy_step)
    result = engine.generate(text, **kwargs)
    monkeypatch.undo()
    frames = result.frames
    return sum(1 for n in lengths if n != frames), sum(1 for n in lengths if n == frames), seen, result


def test_guidance_every_runs_the_unconditional_forward_every_kth_step(engine, monkeypatch):
    text = "Guidance reuse is counted here."
    cond1, uncond1, _, _ = count_forwards(engine, monkeypatch, text, num_step=8, seed=4)
    cond2, uncond2, seen, result = count_forwards(engine, monkeypatch, text, num_step=8, seed=4,
                                                  guidance_every=2)
    assert cond1 == cond2 == 8 and uncond1 == 8
    assert uncond2 == 4
    # on the steps between, the last unconditional logits are reused as they were computed
    for step in (1, 3, 5, 7):
        np.testing.assert_array_equal(seen[step], seen[step - 1])
    assert not np.array_equal(seen[2], seen[1])
    # the work model counts the same forwards
    work = plan_work(engine.prepare(text, num_step=8, seed=4, guidance_every=2), engine.tokenizer, 8)
    assert sum(work.chunks[0].uncond) == uncond2


def test_guidance_every_one_runs_the_unconditional_forward_on_every_step(engine, monkeypatch):
    """At k=1 the loop's recorded forwards are the reference's: both rows on every step, and every step's guidance
    from its own unconditional forward (no step reuses the logits of the one before)."""
    cond, uncond, seen, _ = count_forwards(engine, monkeypatch, "Fresh guidance on each step.", num_step=8, seed=9,
                                           guidance_every=1)
    assert cond == uncond == 8 and len(seen) == 8 and all(s is not None for s in seen)
    assert not any(np.array_equal(seen[step], seen[step - 1]) for step in range(1, 8))


# --- presets -----------------------------------------------------------------------------

def test_presets_set_their_values_and_keep_the_rest():
    assert GenerationConfig().num_step == 32 and matching_preset(GenerationConfig()) == "reference"
    assert GenerationConfig.preset("balanced").num_step == 16
    fast = GenerationConfig.preset("Fast")
    assert (fast.num_step, fast.guidance_every) == (8, 2)
    assert fast.replace(num_step=8).guidance_scale == GenerationConfig().guidance_scale
    assert matching_preset(fast) == "fast" and matching_preset(fast.replace(num_step=9)) is None
    with pytest.raises(InvalidInput, match="presets are"):
        GenerationConfig.preset("turbo")
    for values in PRESETS.values():
        GenerationConfig().replace(**values).validate()


def cli(*flags) -> GenerationConfig:
    parser = argparse.ArgumentParser()
    add_config_arguments(parser)
    return config_from_arguments(parser.parse_args(list(flags)))


def test_cli_preset_and_flags_on_top():
    assert cli() == GenerationConfig()
    assert cli("--preset", "fast") == GenerationConfig.preset("fast")
    assert cli("--preset", "fast", "--num-step", "12").num_step == 12
    assert cli("--preset", "fast", "--num-step", "12").guidance_every == 2
    assert cli("--preset", "balanced", "--sentence-streaming").sentence_streaming is True
    assert cli("--steps", "5").num_step == 5
    with pytest.raises(InvalidInput, match="guidance_every"):
        cli("--guidance-every", "0")


# --- estimates ---------------------------------------------------------------------------

def test_forward_curve_fit_recovers_its_coefficients():
    samples = [(n, 0.01 + 0.002 * n + 1e-6 * n * n) for n in (10, 50, 100, 400, 800)]
    a, b, c = fit_forward_curve(samples)
    assert (a, b, c) == pytest.approx((0.01, 0.002, 1e-6), rel=1e-6)
    assert fit_forward_curve([(10, 0.1), (10, 0.1)]) == pytest.approx((0.0, 0.01, 0.0))
    # far beyond the measured rows the line extrapolates, not a quadratic fitted on noise
    estimator = PipelineEstimator()
    for n in (16, 64, 100):  # short rows on a strongly curved line
        estimator.observe_forward(n, 0.05 + 0.001 * n + 2e-5 * n * n)
    a1, b1, _ = fit_forward_curve(estimator.forwards, quadratic=False)
    assert estimator.forward_seconds(700) == pytest.approx(a1 + b1 * 700)
    a, b, c = fit_forward_curve(estimator.forwards)
    assert c > 0 and estimator.forward_seconds(100) == pytest.approx(a + b * 100 + c * 100 ** 2)


def test_forward_curve_with_the_models_attention_shape_extrapolates(tiny_fp32_folder):
    from omnivoice_demo.engine.onnx_model import attention_ratio

    kappa = attention_ratio(tiny_fp32_folder)
    # tiny: 2 layers of 4 heads x 16, weights 64x(4+2*2)*16 + 64x64 + 3 x 64x128 per layer
    assert kappa == pytest.approx((2 * 2 * 4 * 16) / (2 * (64 * 128 + 64 * 64 + 3 * 64 * 128)))
    truth = lambda n: 0.02 + 0.004 * (n + kappa * n * n)  # noqa: E731
    estimator = PipelineEstimator(attention_ratio=kappa)
    for n in (16, 64, 256):                                  # the warm-up's lengths only
        estimator.observe_forward(n, truth(n))
    assert estimator.forward_seconds(1300) == pytest.approx(truth(1300), rel=1e-9)   # 5x beyond them
    assert fit_forward_curve([(10, 0.1)], kappa=kappa)[1] == pytest.approx(0.1 / (10 + kappa * 100))
    assert attention_ratio(tiny_fp32_folder.parent / "no-such-folder") is None


def test_estimates_are_ready_at_load_and_follow_the_work(engine):
    assert engine.estimator.ready
    reference = engine.estimate_seconds(engine.prepare(PARAGRAPH))
    fast = engine.estimate_seconds(engine.prepare(PARAGRAPH, config=GenerationConfig.preset("fast")))
    short = engine.estimate_seconds(engine.prepare("Hi there."))
    assert 0 < short < reference and 0 < fast < reference
    estimate = engine.estimate(engine.prepare(PARAGRAPH, sentence_streaming=True, num_step=4))
    marks = sorted(estimate.marks.values())
    assert marks == sorted(marks) and marks[-1] <= estimate.total
    lefts = [estimate.seconds_left(0, s) for s in range(5)]
    assert lefts == sorted(lefts, reverse=True) and lefts[-1] < estimate.total


def test_without_calibration_there_is_no_estimate_until_a_run(tiny_fp32_folder):
    fresh = OmniVoiceEngine(tiny_fp32_folder, verify="none", calibrate=False)
    plan = fresh.prepare("Not measured yet.", num_step=2)
    assert fresh.estimate_seconds(plan) is None
    fresh.generate("Not measured yet.", num_step=2)
    assert fresh.estimate_seconds(plan) > 0  # a run measures every stage


def test_a_run_refines_the_stage_rates():
    estimator = PipelineEstimator()
    estimator.rates = dict.fromkeys(("prompt", "embeddings", "heads", "sampling", "codec_decode", "postprocess"), 1.0)
    estimator.observe_forward(10, 1.0)
    from omnivoice_demo.engine.work import ChunkWork, PlanWork

    work = PlanWork(chunks=[ChunkWork(prefix=5, frames=10, schedule=[40, 40], uncond=[True, True])], guided=True)
    before = estimator.estimate(work).stages["heads"]
    estimator.observe_run(work, {"heads": 0.0, "sampling": 40.0})
    assert estimator.estimate(work).stages["heads"] == pytest.approx(before * 0.5)
    assert estimator.rates["sampling"] == pytest.approx(0.5 * 1.0 + 0.5 * 40.0 / 40)


def test_estimates_learn_the_pace_of_a_busier_machine_from_the_last_runs():
    """Under load a run took 4x its estimate: the next estimate of the same work is higher, by the measured
    pace (half way at ``PACE_WEIGHT`` 0.5), and it comes back down once runs keep to the model again."""
    from omnivoice_demo.engine.estimate import PACE_WEIGHT
    from omnivoice_demo.engine.work import ChunkWork, PlanWork

    estimator = PipelineEstimator()
    estimator.rates = dict.fromkeys(("prompt", "embeddings", "heads", "sampling", "codec_decode", "postprocess"), 0.01)
    estimator.observe_forward(10, 0.1)
    estimator.observe_forward(40, 0.4)
    work = PlanWork(chunks=[ChunkWork(prefix=30, frames=10, schedule=[40, 40], uncond=[True, True])], guided=True)
    calm = estimator.estimate(work).total
    estimator.observe_run(work, {"total": 4 * calm})
    busy = estimator.estimate(work)
    assert busy.total == pytest.approx(calm * (1 - PACE_WEIGHT + PACE_WEIGHT * 4))
    assert busy.marks[(0, 2)] == pytest.approx(busy.total - busy.stages["codec_decode"] - busy.stages["postprocess"])
    for _ in range(8):  # runs on a calm machine again
        estimator.observe_run(work, {"total": calm})
    assert estimator.estimate(work).total == pytest.approx(calm, rel=0.02)


# --- int4 weights as fp32 MatMuls ----------------------------------------------------------

def test_dequantized_weights_are_the_int4_weights_exactly():
    from omnivoice_demo.backbones.dequantize import dequantize_weight

    rng = np.random.default_rng(0)
    n, k, block = 6, 70, 32                       # K not a multiple of the block: the tail is cut
    blocks = -(-k // block)
    q = rng.integers(0, 16, (n, blocks, block), dtype=np.uint8)
    scales = rng.uniform(0.01, 0.1, (n, blocks)).astype(np.float32)
    packed = (q[..., 0::2] | (q[..., 1::2] << 4)).astype(np.uint8)
    expected = ((q.astype(np.float32) - 8) * scales[..., None]).reshape(n, -1)[:, :k].T
    np.testing.assert_array_equal(dequantize_weight(packed, scales, k, n, block), expected)
    zeros = rng.integers(0, 16, (n, blocks), dtype=np.uint8)
    packed_zeros = np.zeros((n, -(-blocks // 2)), dtype=np.uint8)
    packed_zeros[:, : (blocks + 1) // 2] = zeros[:, 0::2]
    packed_zeros[:, : blocks // 2] |= zeros[:, 1::2] << 4
    with_zeros = ((q.astype(np.float32) - zeros[..., None]) * scales[..., None]).reshape(n, -1)[:, :k].T
    np.testing.assert_array_equal(dequantize_weight(packed, scales, k, n, block, packed_zeros.ravel()), with_zeros)


def test_fp32_backbone_of_an_int4_folder_computes_the_same_model(tiny_int4_folder):
    int4 = OmniVoiceEngine(tiny_int4_folder, verify="none", calibrate=False, backbone="int4")
    fp32 = OmniVoiceEngine(tiny_int4_folder, verify="none", calibrate=False, backbone="fp32")
    assert int4.backbone_choice["compute"] == "as built" and int4.backbone_choice["choice"] == "as built"
    assert fp32.backbone_choice["compute"].startswith("fp32") and fp32.backbone_choice["added_mb"] > 0
    embeds = np.random.default_rng(1).standard_normal((1, 24, int4.model.hidden_size)).astype(np.float32)
    a, b = int4.model.hidden_states(embeds, [24]), fp32.model.hidden_states(embeds, [24])
    # the int4 graph quantizes activations to int8 (accuracy level 4); the weights are the same
    assert np.abs(a - b).max() < 0.01 * np.abs(a).max()
    with pytest.raises(InvalidInput, match="backbone"):
        OmniVoiceEngine(tiny_int4_folder, verify="none", calibrate=False, backbone="int3")


def test_auto_backbone_measures_once_then_remembers(tiny_int4_folder, tiny_fp32_folder, tmp_path, monkeypatch):


    monkeypatch.setenv("OMNIVOICE_CACHE", str(tmp_path))
    # remembered only when the machine counts as quiet: this shared VM's load is set aside here
    # (tests/test_backbone_auto.py covers contended probes)
    monkeypatch.setattr(ProbeResult, "contention", lambda self, decisive=None: None)
    probes = []
    real_probe = backbone_choice.backbone_probe
    monkeypatch.setattr(backbone_choice, "backbone_probe", lambda *a, **k: probes.append(1) or real_probe(*a, **k))
    first = OmniVoiceEngine(tiny_int4_folder, verify="none", calibrate=False)          # auto is the default
    assert first.backbone_choice["mode"] == "auto" and not first.backbone_choice["remembered"]
    gated = {c for c in backbone_choice.EIGHT_BIT + ("fp32",) if backbone_choice.passes_gate("int4", c)}
    assert set(first.backbone_choice["probe_s"]) == {"int4"} | gated and probes == [1]
    stored = json.loads((tmp_path / "backbone-choice.json").read_text())
    (entry,) = stored.values()
    assert entry["probe"]["kind"] == "step" and entry["agreement"]["agreement"] > 0.5
    assert entry["choice"] == first.backbone_choice["choice"].replace("as built", "int4")
    again = OmniVoiceEngine(tiny_int4_folder, verify="none", calibrate=False)
    assert probes == [1] and again.backbone_choice["remembered"]
    assert again.backbone_choice["choice"] in (entry["choice"], "as built")
    # what is remembered decides: a stored fp32 outcome dequantizes without a new probe
    (key,) = stored
    stored[key]["choice"] = "fp32"
    (tmp_path / "backbone-choice.json").write_text(json.dumps(stored))
    remembered = OmniVoiceEngine(tiny_int4_folder, verify="none", calibrate=False)
    assert probes == [1] and remembered.backbone_choice["compute"].startswith("fp32")
    assert remembered.backbone_choice["added_mb"] > 0 and "rss_added_mb" in remembered.backbone_choice
    # a damaged file only costs a new probe; a folder built in fp32 is the exact model: auto keeps it
    (tmp_path / "backbone-choice.json").write_text("{not json")
    OmniVoiceEngine(tiny_int4_folder, verify="none", calibrate=False)
    assert probes == [1, 1]
    fp32_folder = OmniVoiceEngine(tiny_fp32_folder, verify="none", calibrate=False)
    assert probes == [1, 1] and fp32_folder.backbone_choice["compute"] == "as built"


def test_auto_probes_only_the_choices_that_pass_the_fidelity_gate(tiny_int4_folder, tmp_path, monkeypatch):
    from omnivoice_demo.backbones import choice as backbone_choice, fidelity

    table = {"from_int4": {"int4": {"cosine": 0.9, "agreement": 0.8}, "fp32": {"cosine": 0.95, "agreement": 0.9},
                           "int8-block": {"cosine": 0.9, "agreement": 0.8},     # equal to int4's: passes
                           "int8": {"cosine": 0.9, "agreement": 0.79},          # codes below int4's: fails
                           "int8-tensor": {"cosine": 0.7, "agreement": 0.5}}}   # int8-row: not measured, fails
    monkeypatch.setattr(fidelity, "published_table", lambda: table)
    assert [c for c in backbone_choice.EIGHT_BIT if fidelity.passes_gate("int4", c)] == ["int8-block"]
    monkeypatch.setattr(backbone_choice, "backbone_probe", lambda model, sessions, **k: ProbeResult.given({
        label: {"int4": 1.0, "fp32": 0.99, "int8-block": 0.5}[label] for label in sessions}, k["baseline"]))
    monkeypatch.setenv("OMNIVOICE_CACHE", str(tmp_path))
    engine = OmniVoiceEngine(tiny_int4_folder, verify="none", calibrate=False)       # auto, nothing remembered
    choice = engine.backbone_choice
    assert set(choice["probe_s"]) == {"int4", "fp32", "int8-block"} and choice["choice"] == "int8-block"
    assert choice["fidelity"] == fidelity.fidelity_of("int4", "int8-block", table)
    assert "from the int4 folder, never better than int4" in choice["compute"]
    # an unmeasured table admits nothing but the int4 graph's own weights
    assert not fidelity.passes_gate("int4", "int8", {})


def test_a_remembered_choice_is_keyed_on_the_session_settings(tiny_int4_folder, monkeypatch):
    """Spinning or not changes the probe's timings: a choice timed with other session settings is not reused."""

    from omnivoice_demo.runtime import sessions

    path = tiny_int4_folder / "llm_decoder.onnx"
    key = backbone_choice.choice_key(path, ["CPUExecutionProvider"], 2)
    assert key == backbone_choice.choice_key(path, ["CPUExecutionProvider"], 2)
    monkeypatch.setattr(sessions, "SESSION_CONFIG", dict(sessions.SESSION_CONFIG,
                                                         **{"session.intra_op.allow_spinning": "1"}))
    assert backbone_choice.choice_key(path, ["CPUExecutionProvider"], 2) != key


def test_the_fastest_is_kept_only_when_clearly_faster_than_int4():
    from omnivoice_demo.backbones.choice import KEEP_MARGIN

    def fastest(seconds):
        return backbone_choice.fastest(ProbeResult.given(seconds, "int4"))

    assert fastest({"int4": 1.0, "fp32": 0.8}) == "fp32"
    assert fastest({"int4": 1.0, "fp32": 1.0 - KEEP_MARGIN / 2}) == "int4"   # a near tie keeps int4's memory
    assert fastest({"int4": 1.0, "fp32": 1.2, "int8": 0.4, "int8-block": 0.6}) == "int8"


# --- the app's speed controls (plain functions) ---------------------------------------------

def test_speed_controls_presets_streaming_default_and_estimates(engine):
    from omnivoice_demo.ui import speed_controls as sc

    assert [value for _, value in sc.preset_choices()] == list(PRESETS) + [sc.CUSTOM]
    assert sc.preset_controls("fast") == {"num_step": 8, "guidance_every": 2, "prompt_refresh": 4}
    assert sc.preset_of({"num_step": 16, "guidance_every": 1, "prompt_refresh": 8}) == "balanced"
    assert sc.preset_of({"num_step": 16, "guidance_every": 1, "prompt_refresh": 1}) == sc.CUSTOM
    assert sc.preset_of({"num_step": 12, "guidance_every": 1, "prompt_refresh": 4}) == sc.CUSTOM
    assert sc.more_than_one_sentence("Hi there. How are you?")
    assert not sc.more_than_one_sentence("Hello, world.") and not sc.more_than_one_sentence("")
    line = sc.preset_estimates(engine, PARAGRAPH, sentence_streaming=True)
    assert all(label in line for label, value in sc.preset_choices() if value != sc.CUSTOM)
    assert "first audio after" in line
    assert sc.preset_estimates(engine, "   ") == ""
    estimate = engine.estimate(engine.prepare("Time left is shown.", num_step=4))
    assert sc.time_left(estimate, 0, 0, 0.0).startswith("about ") and sc.time_left(None, 0, 0, 1.0) == ""


def test_clone_tab_length_estimate_counts_the_reference(engine, tmp_path):
    """Before cloning, the Clone tab estimates the length from the reference's transcript and frames, as the
    reference's duration estimator does: the same target as with the cloned voice."""
    import soundfile
    from tests.support.signals import speech_like

    from omnivoice_demo.studio.models import ModelManager
    from omnivoice_demo.studio.state import Studio
    from omnivoice_demo.ui.tabs.clone import reference_for_estimate
    from omnivoice_demo.studio.voices import VoiceLibrary

    clip = tmp_path / "ref.wav"
    soundfile.write(str(clip), np.asarray(speech_like(4.0, 16000, seed=5), dtype=np.float32).reshape(-1), 16000)
    studio = Studio(models=ModelManager(cache_dir=tmp_path / "cache", offline=True),
                    voices=VoiceLibrary(tmp_path / "voices"), out_dir=tmp_path / "out")
    transcript = "A slow and careful reference sentence"
    stand_in = reference_for_estimate(studio, str(clip), transcript, True)
    cloned = engine.clone_voice(str(clip), transcript=transcript)
    assert stand_in.frames == cloned.frames and stand_in.transcript == cloned.transcript
    text = "The cloned voice will say this sentence."
    with_reference = engine.prepare(text, voice=stand_in).target_frames
    assert with_reference == engine.prepare(text, voice=cloned).target_frames
    assert with_reference != engine.prepare(text).target_frames  # the reference sets the speaking rate
    assert reference_for_estimate(studio, str(clip), "  ", True) is None
    assert reference_for_estimate(studio, None, transcript, True) is None
