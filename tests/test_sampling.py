"""The sampler against the reference math, fed the same logits and the same uniform noise.

``torch.rand_like`` is patched to hand the reference the noise our functions
get, so token and position choices can be compared exactly.
"""

from __future__ import annotations

import math
import types
import warnings

import numpy as np
import pytest

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    import torch
    from omnivoice.models import omnivoice as ref

from omnivoice_demo.engine import sampling

V = 1025
MASK = 1024


class NoiseFeed:
    """Stands in for ``torch.rand_like``: returns the queued arrays (shape-checked), or draws from a generator."""

    def __init__(self, arrays=None, rng=None):
        self.arrays = list(arrays or [])
        self.rng = rng
        self.calls = 0

    def __call__(self, like):
        self.calls += 1
        if self.rng is not None:
            return torch.from_numpy(self.rng.random(tuple(like.shape), dtype=np.float32))
        arr = self.arrays.pop(0)
        assert arr.size == like.numel()
        return torch.from_numpy(np.ascontiguousarray(arr, dtype=np.float32)).reshape(like.shape)


def _ref_model():
    m = types.SimpleNamespace(config=types.SimpleNamespace(audio_mask_id=MASK, num_audio_codebook=8))
    return m


def _ref_predict(c, u, g, ct):
    cfg = types.SimpleNamespace(guidance_scale=g, class_temperature=ct)
    tokens, conf = ref.OmniVoice._predict_tokens_with_scoring(
        _ref_model(), torch.from_numpy(c)[None], torch.from_numpy(u)[None], cfg)
    return tokens[0].numpy(), conf[0].numpy()


def _ref_select(conf, tokens, k, factor, temp):
    """The position choice of ``_generate_iterative``, verbatim."""
    layer_ids = torch.arange(8).view(1, -1, 1)
    scores = torch.from_numpy(conf)[None] - (layer_ids * factor)
    if temp > 0.0:
        scores = ref._gumbel_sample(scores, temp)
    sample_tokens = torch.from_numpy(tokens)[None]
    scores.masked_fill_(sample_tokens != MASK, -float("inf"))
    _, topk_idx = torch.topk(scores.flatten(), k)
    out = np.zeros(tokens.size, dtype=bool)
    out[topk_idx.numpy()] = True
    return out.reshape(tokens.shape)


def _logits(rng, t, scale=3.0):
    return (rng.standard_normal((8, t, V)) * scale).astype(np.float32)


# ---------------------------------------------------------------------------
# Schedule
# ---------------------------------------------------------------------------


def test_time_steps_equal_torch_float32():
    for num_step in list(range(1, 130)) + [200, 256, 500]:
        for t_shift in (0.1, 0.05, 0.2, 0.33, 0.5, 1.0, 1.7):
            expected = ref._get_time_steps(0.0, 1.0, num_step, t_shift).numpy()
            got = sampling.time_steps(num_step, t_shift)
            assert got.dtype == np.float32
            assert np.array_equal(got, expected), (num_step, t_shift)


def _ref_schedule(t_len, num_step, t_shift):
    """The schedule loop of ``_generate_iterative``, verbatim."""
    timesteps = ref._get_time_steps(t_start=0.0, t_end=1.0, num_step=num_step, t_shift=t_shift).tolist()
    total_mask = t_len * 8
    rem = total_mask
    sched = []
    for step in range(num_step):
        num = rem if step == num_step - 1 else min(math.ceil(total_mask * (timesteps[step + 1] - timesteps[step])), rem)
        sched.append(int(num))
        rem -= int(num)
    return sched


def test_unmask_schedule_matches_reference():
    for t_len in list(range(1, 60)) + [100, 137, 250, 375, 512, 750, 1000, 1500]:
        for num_step, t_shift in [(32, 0.1), (16, 0.1), (8, 0.3), (64, 0.1), (1, 0.1), (2, 0.5), (32, 1.0)]:
            got = sampling.unmask_schedule(t_len, 8, num_step, t_shift)
            assert got == _ref_schedule(t_len, num_step, t_shift), (t_len, num_step, t_shift)
            assert sum(got) == 8 * t_len and all(n >= 0 for n in got)


# ---------------------------------------------------------------------------
# Token scoring
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("g", [0.0, 2.0, 3.5])
@pytest.mark.parametrize("ct", [0.0, 0.7, 1.0])
def test_score_tokens_matches_predict_tokens_with_scoring(monkeypatch, g, ct):
    rng = np.random.default_rng(int(g * 10 + ct * 100))
    for t in (1, 9, 40):
        c, u = _logits(rng, t), _logits(rng, t)
        noise = rng.random((8, t, V), dtype=np.float32)
        monkeypatch.setattr(torch, "rand_like", NoiseFeed([noise]))
        exp_tok, exp_conf = _ref_predict(c, u, g, ct)
        tok, conf = sampling.score_tokens(c, u, g, ct, noise)
        assert tok.dtype == np.int64 and tok.shape == (8, t)
        np.testing.assert_array_equal(tok, exp_tok)
        np.testing.assert_allclose(conf, exp_conf, rtol=1e-5, atol=1e-5)
        assert (tok != MASK).all()


def test_score_tokens_generator_equals_its_noise_and_overwrite_equals_copy():
    rng = np.random.default_rng(0)
    c, u = _logits(rng, 12), _logits(rng, 12)
    noise = np.random.default_rng(42).random((8, 12, V), dtype=np.float32)
    a = sampling.score_tokens(c, u, 2.0, 0.8, noise)
    b = sampling.score_tokens(c, u, 2.0, 0.8, np.random.default_rng(42))
    c2, u2 = c.copy(), u.copy()
    d = sampling.score_tokens(c2, u2, 2.0, 0.8, noise, overwrite=True)
    for x, y in [(a, b), (a, d)]:
        np.testing.assert_array_equal(x[0], y[0])
        np.testing.assert_array_equal(x[1], y[1])
    assert not np.array_equal(c2, c)  # overwrite really computed in place
    e = sampling.score_tokens(c, u, 2.0, 0.0)
    assert np.array_equal(e[0], sampling.score_tokens(c, u, 2.0, 0.0, noise)[0])  # greedy draws nothing


def test_score_tokens_never_predicts_the_mask_and_rejects_nan():
    rng = np.random.default_rng(1)
    c, u = _logits(rng, 5), _logits(rng, 5)
    c[..., MASK] = 1e4  # the model insists on the mask id
    tok, conf = sampling.score_tokens(c, u, 2.0, 0.0)
    assert (tok != MASK).all() and np.isfinite(conf).all()
    tok, _ = sampling.score_tokens(c, u, 0.0, 1.0, rng)
    assert (tok != MASK).all()
    c[3, 2, 7] = np.nan
    with pytest.raises(FloatingPointError):
        sampling.score_tokens(c, u, 2.0, 0.0)


# ---------------------------------------------------------------------------
# Position selection
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("temp", [0.0, 5.0, 1.0])
@pytest.mark.parametrize("factor", [5.0, 0.0, 0.3])
def test_select_positions_matches_reference(monkeypatch, temp, factor):
    rng = np.random.default_rng(int(temp * 7 + factor * 13))
    for t in (1, 6, 50):
        for decided_fraction in (0.0, 0.3, 0.9):
            conf = (-np.abs(rng.standard_normal((8, t))) * 2).astype(np.float32)
            tokens = np.full((8, t), MASK, dtype=np.int64)
            done = rng.random((8, t)) < decided_fraction
            tokens[done] = rng.integers(0, 1024, int(done.sum()))
            undecided = int((~done).sum())
            for k in sorted({1, max(1, undecided // 3), undecided}):
                if undecided == 0:
                    continue
                noise = rng.random((8, t), dtype=np.float32)
                monkeypatch.setattr(torch, "rand_like", NoiseFeed([noise]))
                expected = _ref_select(conf, tokens, k, factor, temp)
                got = sampling.select_positions(conf, tokens, k, factor, temp, noise)
                np.testing.assert_array_equal(got, expected)
                assert got.sum() == k and not (got & done).any()


def test_select_positions_ties_and_limits():
    tokens = np.full((8, 4), MASK, dtype=np.int64)
    conf = np.zeros((8, 4), dtype=np.float32)
    # without temperature or penalty all scores tie: the lowest flat indices win (documented)
    got = sampling.select_positions(conf, tokens, 5, 0.0, 0.0)
    assert np.flatnonzero(got).tolist() == [0, 1, 2, 3, 4]
    # the layer penalty alone orders codebook 0 first
    got = sampling.select_positions(conf, tokens, 4, 5.0, 0.0)
    assert got[0].all() and got.sum() == 4
    assert not sampling.select_positions(conf, tokens, 0, 5.0, 5.0).any()
    tokens[:, :2] = 3
    with pytest.raises(ValueError, match="only 16 are still masked"):
        sampling.select_positions(conf, tokens, 17, 5.0, 0.0)


# ---------------------------------------------------------------------------
# The whole loop
# ---------------------------------------------------------------------------


class LoopModel:
    """``_generate_iterative`` around a fake forward that returns recorded random logits."""

    _generate_iterative = ref.OmniVoice._generate_iterative
    _predict_tokens_with_scoring = ref.OmniVoice._predict_tokens_with_scoring

    def __init__(self, seed, prefix_len=6):
        self.config = types.SimpleNamespace(num_audio_codebook=8, audio_mask_id=MASK)
        self.device = torch.device("cpu")
        self.rng = np.random.default_rng(seed)
        self.prefix_len = prefix_len
        self.logits = []

    def _prepare_inference_inputs(self, text, num_target_tokens, ref_text, ref_audio_tokens, lang, instruct, denoise):
        ids = torch.cat([torch.full((1, 8, self.prefix_len), 5), torch.full((1, 8, num_target_tokens), MASK)], dim=2)
        mask = torch.zeros(1, ids.shape[2], dtype=torch.bool)
        mask[0, self.prefix_len:] = True
        return {"input_ids": ids, "audio_mask": mask}

    def __call__(self, input_ids, audio_mask, attention_mask):
        shape = (input_ids.shape[0], 8, input_ids.shape[2], V)
        logits = (self.rng.standard_normal(shape) * 3).astype(np.float32)
        self.logits.append(logits)
        return types.SimpleNamespace(logits=torch.from_numpy(logits))


@pytest.mark.parametrize("cfg", [
    dict(num_step=8, guidance_scale=2.0, t_shift=0.1, layer_penalty_factor=5.0, position_temperature=5.0,
         class_temperature=0.0),
    dict(num_step=6, guidance_scale=0.0, t_shift=0.3, layer_penalty_factor=5.0, position_temperature=0.0,
         class_temperature=0.0),
    dict(num_step=5, guidance_scale=3.0, t_shift=0.1, layer_penalty_factor=1.0, position_temperature=2.0,
         class_temperature=0.9),
])
def test_decode_loop_matches_generate_iterative(monkeypatch, cfg):
    target_lens = [9, 23]
    model = LoopModel(seed=11)
    gen_config = ref.OmniVoiceGenerationConfig(**cfg)
    task = types.SimpleNamespace(batch_size=2, texts=["a", "b"], target_lens=target_lens, ref_texts=[None, None],
                                 ref_audio_tokens=[None, None], langs=[None, None], instructs=[None, None])
    feed = NoiseFeed(rng=np.random.default_rng(99))
    monkeypatch.setattr(torch, "rand_like", feed)
    with torch.inference_mode():
        expected = [t.numpy() for t in model._generate_iterative(task, gen_config)]

    # our loop over the same logits, drawing the same noise in the same order
    rng = np.random.default_rng(99)
    c_lens = [model.prefix_len + n for n in target_lens]
    tokens = [np.full((8, n), MASK, dtype=np.int64) for n in target_lens]
    schedules = [sampling.unmask_schedule(n, 8, cfg["num_step"], cfg["t_shift"]) for n in target_lens]
    for step, logits in enumerate(model.logits):
        for i, n in enumerate(target_lens):
            cond = logits[i, :, c_lens[i] - n:c_lens[i]]
            uncond = logits[2 + i, :, :n]
            sampling.decode_step(
                tokens[i], cond, uncond, schedules[i][step], guidance_scale=cfg["guidance_scale"],
                class_temperature=cfg["class_temperature"], layer_penalty_factor=cfg["layer_penalty_factor"],
                position_temperature=cfg["position_temperature"], rng=rng)
    assert rng.random() == feed.rng.random()  # both drew the same amount of noise
    for ours, theirs in zip(tokens, expected):
        assert (ours != MASK).all()
        np.testing.assert_array_equal(ours, theirs)
