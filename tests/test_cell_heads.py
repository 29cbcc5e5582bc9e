"""The heads and the scoring at the masked cells only (issue 59, item 2): the same bits and the same random stream
as the whole grid's."""

from __future__ import annotations

import numpy as np
import pytest

from omnivoice_demo.engine import sampling, steps
from omnivoice_demo.engine.steps import CellHeads
from omnivoice_demo.runtime.sessions import session_options


def whole_grid(tokens, cond, uncond, k, rng, **options):
    """``decode_step`` as it was: every cell scored, the decided ones then given -inf."""
    pred, confidence = sampling.score_tokens(cond.copy(), None if uncond is None else uncond.copy(),
                                             options["guidance_scale"], options["class_temperature"], rng)
    decided = sampling.select_positions(confidence, tokens, k, 5.0, options["position_temperature"], rng)
    tokens[decided] = pred[decided]
    return decided, confidence


@pytest.mark.parametrize("guidance_scale,class_temperature,position_temperature",
                         [(2.0, 0.0, 5.0), (2.0, 0.7, 5.0), (0.0, 0.0, 0.0), (2.0, 0.9, 0.0)])
def test_masked_cells_score_as_the_whole_grid(guidance_scale, class_temperature, position_temperature):
    options = dict(guidance_scale=guidance_scale, class_temperature=class_temperature,
                   position_temperature=position_temperature)
    data = np.random.default_rng(3)
    frames = 23
    ours, theirs = (np.full((8, frames), 1024, dtype=np.int64) for _ in range(2))
    for step, k in enumerate(sampling.unmask_schedule(frames, 8, 8, 0.1)):
        cond = (data.standard_normal((8, frames, 1025)) * 3).astype(np.float32)
        uncond = (data.standard_normal((8, frames, 1025)) * 3).astype(np.float32)
        masked = ours == 1024
        seed = int(data.integers(2**31))
        rng_mine, rng_theirs = np.random.default_rng(seed), np.random.default_rng(seed)
        expected, confidence = whole_grid(theirs, cond, None if guidance_scale == 0 else uncond, k, rng_theirs,
                                          **options)
        # the decided cells' logits are never read: garbage there changes nothing
        cond[~masked], uncond[~masked] = 1e30, -1e30
        got = sampling.decode_step(ours, cond, None if guidance_scale == 0 else uncond, k, rng=rng_mine,
                                   mask_id=1024, layer_penalty_factor=5.0, **options)
        np.testing.assert_array_equal(got, expected)
        np.testing.assert_array_equal(ours, theirs)
        # the same draws, in the same order: the streams are at the same place
        assert rng_mine.random() == rng_theirs.random(), f"step {step + 1}: the random stream moved otherwise"
        # the masked cells' confidence, bit for bit (score_tokens on the cells alone)
        _, cells = sampling.score_tokens(cond[masked][None], None if guidance_scale == 0 else uncond[masked][None],
                                         guidance_scale, 0.0)
        np.testing.assert_array_equal(cells[0], confidence[masked])


def test_cell_heads_give_the_whole_graphs_bits(engine):
    heads = CellHeads(engine.folder, ["CPUExecutionProvider"], session_options(None))
    assert heads.available
    data = np.random.default_rng(5)
    hidden = data.standard_normal((2, 17, engine.model.hidden_size)).astype(np.float32)
    whole = engine.model.audio_logits(hidden)
    for share in (0.05, 0.3, 0.9):
        masked = data.random((8, 17)) < share
        masked[3] = False   # a codebook with no masked cell
        got = heads.logits([hidden[:1], hidden[1:]], masked)
        assert got.shape == whole.shape
        np.testing.assert_array_equal(got[:, masked], whole[:, masked])
        assert not got[:, ~masked].any()


def test_the_loop_runs_the_cell_heads_on_late_steps_with_the_same_codes(engine, monkeypatch):
    calls = []
    original = CellHeads.logits
    monkeypatch.setattr(CellHeads, "logits", lambda self, rows, masked: calls.append(masked.mean()) or
                        original(self, rows, masked))
    text = "Cells still masked are scored."
    cells = engine.generate(text, seed=7)
    assert calls and max(calls) < steps.CELL_SHARE   # only where few cells are left
    monkeypatch.setattr(steps, "CELL_SHARE", 0.0)
    whole = engine.generate(text, seed=7)
    for a, b in zip(cells.codes, whole.codes):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(cells.audio, whole.audio)
