"""The prompt's keys and values kept across steps (``GenerationConfig.prompt_refresh``).

The mechanism is exact: a forward of the target positions on the keys and values a whole forward kept
of the same row's prompt gives that forward's target hidden states.  Kept across steps it is an
approximation, measured by ``benchmarks/prompt_refresh_fidelity.py``; ``prompt_refresh=1`` (the default)
is the reference's loop, which the parity tests of test_engine.py check.
"""

from __future__ import annotations

import os
import pathlib

import numpy as np
import pytest

from omnivoice_demo import OmniVoiceEngine
from omnivoice_demo.engine.estimate import PipelineEstimator
from omnivoice_demo.engine.work import RATE_STAGES, ChunkWork, PlanWork, plan_work
from omnivoice_demo.engine.onnx_model import PromptPast
from omnivoice_demo.errors import InvalidInput


@pytest.fixture(scope="module")
def engine(tiny_fp32_folder):
    return OmniVoiceEngine(tiny_fp32_folder, threads=2, verify="none")


def split_and_whole(model, length: int = 60, prefix: int = 35, seed: int = 0):
    """(target hidden states on the kept prompt, the whole forward's target hidden states, the kept prompt)."""
    rng = np.random.default_rng(seed)
    embeds = rng.standard_normal((1, length, model.hidden_size)).astype(np.float32)
    prompt = PromptPast(prefix)
    whole = model.hidden_states(embeds, [length], keep=prompt)
    split = model.hidden_states(embeds[:, prefix:], [length - prefix], past=prompt)
    return split.astype(np.float32), whole[:, prefix:].astype(np.float32), prompt


def relative_gap(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.abs(a - b).max() / np.abs(b).max())


def test_the_target_on_its_own_forwards_prompt_is_the_whole_forwards_target(engine):
    """Rotary positions past the prompt and attention over past and new positions, both directions: equal to
    fp32 rounding.  The past is really used: the same target on another row's prompt moves."""
    model = engine.model
    split, whole, prompt = split_and_whole(model)
    assert all(t.shape[2] == 35 for t in prompt.tensors.values()) and len(prompt.tensors) == len(model.past_names)
    assert relative_gap(split, whole) < 1e-5
    rng = np.random.default_rng(0)
    embeds = rng.standard_normal((1, 60, model.hidden_size)).astype(np.float32)
    _, _, foreign = split_and_whole(model, seed=1)  # another row's prompt under our target
    moved = model.hidden_states(embeds[:, 35:], [25], past=foreign).astype(np.float32)
    assert relative_gap(moved, whole) > 1e-3  # a hundred times the tolerance above
    # a shorter prompt is not the same row either: positions and attention follow the past's length
    short = PromptPast(30)
    model.hidden_states(embeds[:, :30], [30], keep=short)
    assert relative_gap(model.hidden_states(embeds[:, 35:], [25], past=short).astype(np.float32), whole) > 1e-3


def test_the_embeddings_of_the_target_alone_are_its_embeddings_in_the_row(engine):
    rng = np.random.default_rng(2)
    ids = rng.integers(0, 1024, (1, 8, 40))
    mask = np.zeros((1, 40), dtype=bool)
    mask[0, 12:] = True
    np.testing.assert_array_equal(engine.model.embed(ids[:, :, 25:], mask[:, 25:]),
                                  engine.model.embed(ids, mask)[:, 25:])


@pytest.mark.parametrize("mode,tolerance", [("int4", 1e-5), ("fp32", 1e-5), ("int8-block", 1e-5), ("int8-row", 1e-5),
                                            # one activation scale per tensor: the target's rows alone have
                                            # another scale than the whole row's
                                            ("int8", 2e-3), ("int8-tensor", 2e-3)])
def test_every_backbone_choice_keeps_the_prompt(tiny_int4_folder, mode, tolerance):
    model = OmniVoiceEngine(tiny_int4_folder, threads=2, verify="none", calibrate=False, backbone=mode).model
    assert model.keeps_prompt
    split, whole, _ = split_and_whole(model)
    assert relative_gap(split, whole) < tolerance


def reference_voice(engine, seconds: float = 4.0, seed: int = 0):
    """A cloned voice of ``seconds`` (random codes: the forwards' count and kind depend on the length only)."""
    from omnivoice_demo.constants import FRAME_RATE
    from omnivoice_demo.storage.voice_file import Voice

    codes = np.random.default_rng(seed).integers(0, engine.mask_id, size=(engine.num_codebooks,
                                                                         round(seconds * FRAME_RATE)))
    return Voice(codes=codes.astype(np.int64), transcript="A reference clip of a few seconds, spoken slowly.", rms=0.1)


def forwards_of(engine, monkeypatch, text, **kwargs):
    """Each conditional/unconditional forward of one run as (positions, kind): kind 'keep', 'past' or 'whole'."""
    calls = []
    original = engine.model.hidden_states

    def spy(embeds, lengths, past=None, keep=None):
        calls.append((lengths[0], "keep" if keep is not None else "past" if past is not None else "whole"))
        return original(embeds, lengths, past, keep)

    monkeypatch.setattr(engine.model, "hidden_states", spy)
    result = engine.generate(text, **kwargs)
    monkeypatch.undo()
    return calls, result


def test_the_row_runs_whole_every_kth_step_and_its_target_alone_between(engine, monkeypatch):
    text = "The prompt is kept between refreshes."
    voice = reference_voice(engine)
    calls, result = forwards_of(engine, monkeypatch, text, num_step=8, seed=4, prompt_refresh=3, voice=voice)
    frames = result.frames
    cond = [kind for n, kind in calls if not (kind == "whole" and n == frames)]
    assert cond == ["keep", "past", "past", "keep", "past", "past", "keep", "past"]
    assert all(n == frames for n, kind in calls if kind == "past")
    assert sum(1 for n, kind in calls if kind == "whole" and n == frames) == 8  # the unconditional row unchanged
    # the work model counts the same forwards
    work = plan_work(engine.prepare(text, num_step=8, seed=4, prompt_refresh=3, voice=voice), engine.tokenizer, 8)
    assert work.chunks[0].whole == [True, False, False, True, False, False, True, False]
    # with guidance_every: both schedules hold, each on its own
    calls, _ = forwards_of(engine, monkeypatch, text, num_step=8, seed=4, prompt_refresh=4, guidance_every=2,
                           voice=voice)
    assert [kind for n, kind in calls if kind != "whole"] == ["keep", "past", "past", "past"] * 2
    assert sum(1 for n, kind in calls if kind == "whole") == 4


def test_the_first_step_is_the_exact_loops_and_one_runs_every_forward_whole(engine, monkeypatch):
    """Step 1 runs whole at any k; at k=1 the loop's recorded forwards are the reference's: every step's
    conditional row whole (its full length, nothing kept or given as a past) and the codes those forwards make."""
    text = "Only the steps between refreshes approximate."
    voice = reference_voice(engine)
    exact = list(engine.stream(text, num_step=8, seed=6, voice=voice))
    kept = list(engine.stream(text, num_step=8, seed=6, prompt_refresh=4, voice=voice))
    np.testing.assert_array_equal(exact[0].codes, kept[0].codes)  # step 1 runs whole
    assert not np.array_equal(exact[-1].codes, kept[-1].codes)   # and the kept steps do move it (a live switch)
    calls, once = forwards_of(engine, monkeypatch, text, num_step=8, seed=6, prompt_refresh=1, voice=voice)
    frames = once.frames
    conditional = [(n, kind) for n, kind in calls if n != frames]
    assert len(conditional) == 8 and {kind for _, kind in calls} == {"whole"}
    plan = engine.prepare(text, num_step=8, seed=6, voice=voice)
    row, _ = engine._rows(plan.chunks[0], frames, voice.transcript, voice.codes, plan)
    assert {n for n, _ in conditional} == {row.shape[-1]}   # instruct, text, reference and target: the whole row
    np.testing.assert_array_equal(once.codes[0], exact[-1].codes[0])


def test_a_design_and_a_short_reference_run_every_forward_whole_at_every_preset(engine, monkeypatch):
    """Prompt reuse only where it pays (``presets.prompt_refresh_for``): a voice design's prompt is the
    instruct and the text alone, and a reference under ``MIN_KEPT_REFERENCE_SECONDS`` is short; every
    forward of both runs whole at Fast and Balanced, as the loop records, and the estimate counts the same."""
    from omnivoice_demo.settings.presets import MIN_KEPT_REFERENCE_SECONDS, preset_values

    text = "A designed voice runs whole."
    short = reference_voice(engine, seconds=MIN_KEPT_REFERENCE_SECONDS - 0.5)
    long = reference_voice(engine, seconds=MIN_KEPT_REFERENCE_SECONDS)
    for preset in ("fast", "balanced"):
        values = preset_values(preset)
        for voice, whole in ((None, True), (short, True), (long, False)):
            options = dict(values, seed=3, voice=voice, instruct=None if voice else "female, low pitch")
            calls, _ = forwards_of(engine, monkeypatch, text, **options)
            kinds = {kind for _, kind in calls}
            assert (kinds == {"whole"}) == whole, (preset, voice and voice.frames, kinds)
            work = plan_work(engine.prepare(text, **options), engine.tokenizer, 8)
            assert all(work.chunks[0].whole) == whole


def test_a_graph_without_a_past_runs_every_step_whole(engine, monkeypatch):
    text = "No past inputs, no kept prompt."
    exact = engine.generate(text, num_step=8, seed=2, voice=reference_voice(engine))
    monkeypatch.setattr(type(engine.model), "keeps_prompt", False)
    calls, result = forwards_of(engine, monkeypatch, text, num_step=8, seed=2, prompt_refresh=4,
                                voice=reference_voice(engine))
    monkeypatch.undo()
    assert {kind for _, kind in calls} == {"whole"}
    np.testing.assert_array_equal(result.codes[0], exact.codes[0])


def test_each_chunk_keeps_its_own_prompt(engine, monkeypatch):
    """Chunked texts and sentence streaming: every chunk's first step runs its own row whole."""
    from tests.test_speed import PARAGRAPH as text

    for options in ({"chunk_threshold": 1.0, "chunk_duration": 1.0}, {"sentence_streaming": True}):
        calls, result = forwards_of(engine, monkeypatch, text, num_step=4, seed=1, prompt_refresh=4,
                                    voice=reference_voice(engine), **options)
        chunks = len(result.chunks)
        assert chunks > 1, options
        assert [kind for _, kind in calls].count("keep") == chunks
        assert [kind for _, kind in calls].count("past") == 3 * chunks


@pytest.mark.parametrize("value,message", [(0, "between 1 and"), (1.5, "whole number"), (float("nan"), "whole number"),
                                           ("four", "must be a number"), (9, "at most num_step")])
def test_bad_values_name_the_setting(engine, value, message):
    with pytest.raises(InvalidInput, match=message) as caught:
        engine.prepare("Some text.", num_step=8, prompt_refresh=value)
    assert "prompt_refresh" in str(caught.value) and caught.value.param == "prompt_refresh"


def test_the_estimate_counts_the_split_forwards_at_their_learned_share():
    estimator = PipelineEstimator(attention_ratio=0.01)
    estimator.rates = dict.fromkeys(RATE_STAGES, 0.0)
    for positions, seconds in ((10, 0.11), (20, 0.24), (40, 0.56)):
        estimator.observe_forward(positions, seconds)
    estimator.forward_seconds(1)  # fits the curve
    (a, b, c), _, _ = estimator._curve
    split = a + b * 10 + c * 10 * 40  # 10 target positions over a prompt of 30
    assert estimator.split_seconds(30, 10) == pytest.approx(split)
    work = PlanWork(chunks=[ChunkWork(prefix=30, frames=10, schedule=[5, 5, 5], uncond=[False] * 3,
                                      whole=[True, False, False])], guided=False)
    assert estimator.estimate(work).stages["backbone"] == pytest.approx(estimator.forward_seconds(40) + 2 * split)
    # a split step that took half its predicted time moves the share as a pair moves the pair's
    estimator.observe_step(40, 10, 0.5 * split, paired=False, whole=False)
    assert estimator.split_share == pytest.approx(0.95 + 0.05 * 0.5)
    # paired with the unconditional row, the pair's share and the unconditional forward are taken out
    before = estimator.split_share
    estimator.observe_step(40, 10, estimator.pair_share * (split * before + estimator.forward_seconds(10)),
                           paired=True, whole=False)
    assert estimator.split_share == pytest.approx(before)


def test_the_warm_up_measures_the_split_forward_and_the_estimate_counts_it(engine):
    estimator = engine.estimator
    assert estimator.split_share != 1.0  # measured at load
    text = "Fewer whole forwards cost less."
    voice = reference_voice(engine)
    plan = engine.prepare(text, num_step=8, seed=1, prompt_refresh=4, voice=voice)
    exact = engine.estimate(engine.prepare(text, num_step=8, seed=1, voice=voice))
    kept = engine.estimate(plan)
    chunk = plan_work(plan, engine.tokenizer, 8).chunks[0]
    splits = chunk.whole.count(False)
    assert splits == 6
    saved = estimator.pair_share * (estimator.forward_seconds(chunk.length)
                                    - estimator.split_seconds(chunk.prefix, chunk.frames))
    # both estimates are scaled by the pace of this engine's earlier runs (estimate.py), the saving too
    assert kept.stages["backbone"] == pytest.approx(exact.stages["backbone"] - splits * saved * estimator.pace)
    assert kept.stages["embeddings"] < exact.stages["embeddings"]


#: the full-size model folders these tests run on: ``OMNIVOICE_FULL_MODELS``, paths separated by the platform's
#: path separator (``:``), e.g. ``OMNIVOICE_FULL_MODELS=/models/full-int4:/models/full-fp32`` (built as
#: docs/building-models.md says); unset, the tests are skipped, saying so
FULL_SIZE = [pathlib.Path(path) for path in os.environ.get("OMNIVOICE_FULL_MODELS", "").split(os.pathsep) if path]


@pytest.mark.slow
@pytest.mark.parametrize("folder", FULL_SIZE or [None], ids=lambda p: p.name if p else "unset")
def test_a_full_size_split_forward_is_exact(folder):
    """One full-size forward (a 10 s reference's prompt, 250 + 30 positions, and 125 target frames) on the
    folder's own backbone: the target on the same forward's kept prompt is its target to fp32 rounding."""
    if folder is None:
        pytest.skip("no full-size folder given: set OMNIVOICE_FULL_MODELS to the folders, separated by ':'")
    if not (folder / "llm_decoder.onnx").is_file():
        pytest.fail(f"OMNIVOICE_FULL_MODELS names {folder}, which is no model folder (no llm_decoder.onnx)")
    model = OmniVoiceEngine(folder, threads=2, verify="none", calibrate=False, backbone="int4").model
    split, whole, _ = split_and_whole(model, length=405, prefix=280)
    assert relative_gap(split, whole) < 1e-4


def test_a_presets_refresh_is_kept_within_the_steps_given_and_a_given_one_is_checked():
    """Fast refreshes every 4th step: with fewer steps given (flag, HTTP ``steps``) its refresh follows them
    instead of failing the request; a ``prompt_refresh`` given over the steps is still refused by name."""
    import argparse

    from omnivoice_demo.api import speech
    from omnivoice_demo.settings.generation import add_config_arguments, config_from_arguments

    parser = argparse.ArgumentParser()
    add_config_arguments(parser)
    config = config_from_arguments(parser.parse_args(["--preset", "fast", "--num-step", "2"]))
    assert (config.num_step, config.prompt_refresh, config.guidance_every) == (2, 2, 2)
    assert config_from_arguments(parser.parse_args(["--preset", "fast"])).prompt_refresh == 4
    with pytest.raises(InvalidInput, match="prompt_refresh") as caught:
        config_from_arguments(parser.parse_args(["--preset", "fast", "--num-step", "2", "--prompt-refresh", "4"]))
    assert caught.value.param == "prompt_refresh"
    settings = speech.parse({"input": "Hi.", "preset": "fast", "steps": 3}).settings
    assert (settings["num_step"], settings["prompt_refresh"]) == (3, 3)
    assert speech.parse({"input": "Hi.", "preset": "balanced"}).settings["prompt_refresh"] == 8
