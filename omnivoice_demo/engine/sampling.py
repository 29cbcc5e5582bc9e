"""One step of OmniVoice's iterative unmasking, in NumPy.

Mirrors, in float32, what ``OmniVoice._generate_iterative`` does with the
logits of one step:

* ``time_steps`` / ``unmask_schedule``: ``_get_time_steps`` and the
  per-step token counts;
* ``score_tokens``: ``_predict_tokens_with_scoring`` (classifier-free
  guidance on log-probabilities, the mask id forbidden, argmax or top-k +
  Gumbel at the class temperature; confidence = best log-probability);
* ``select_positions``: the layer penalty, Gumbel noise at the position
  temperature, decided cells excluded, top-k of the flattened 8 x T grid.

Randomness is injectable so that a test can hand the reference the very same
uniform noise: every ``noise`` argument is either an array of uniforms in
[0, 1) of the shape the reference draws with ``torch.rand_like`` (``[8, T, V]``
for the classes, ``[8, T]`` for the positions), a ``numpy.random.Generator``
(which then draws that full array, so passing a generator or what it would
draw gives the same result), or ``None`` for a fresh unseeded generator.

Ties.  ``torch.topk`` does not document which of equal values it returns.
Here the top-k positions are taken by a stable sort, so among equal scores
the lower flat index (codebook-major, then frame) wins, and argmax returns the
first maximum, as ``torch.argmax`` does.  With a position temperature the
scores are continuous and ties have probability zero; the -inf scores of
decided cells are never reached because the schedule never asks for more
cells than remain undecided.
"""

from __future__ import annotations

import math
from typing import Optional, Union

import numpy as np

__all__ = [
    "Noise",
    "decode_step",
    "guidance_schedule",
    "gumbel_noise",
    "log_softmax_",
    "score_tokens",
    "select_positions",
    "time_steps",
    "unmask_schedule",
]

#: Uniform noise in [0, 1) of the right shape, a generator to draw it, or None.
Noise = Union[np.ndarray, np.random.Generator, None]

_F32 = np.float32


# ---------------------------------------------------------------------------
# Schedule
# ---------------------------------------------------------------------------


def time_steps(num_step: int, t_shift: float) -> np.ndarray:
    """The ``num_step + 1`` shifted time steps, float32 (reference: ``_get_time_steps``).

    ``t = torch.linspace(0, 1, num_step + 1)`` then
    ``t = t_shift * t / (1 + (t_shift - 1) * t)``, all in float32.

    ``torch.linspace`` on CPU computes ``start + step*i`` for the first half
    and ``end - step*(n-1-i)`` for the second, with ``step`` rounded to
    float32, and its vectorised kernels contract each into one fused
    multiply-add (a single rounding).  That is what this reproduces (exactly:
    the product of a float32 and a small integer is exact in float64, and so
    is the sum for values in [0, 1]).  A CPU without FMA (torch capability
    "DEFAULT") rounds twice and can differ in the last bit of a few steps.
    """
    n = num_step + 1
    step = _F32(1.0) / _F32(num_step)  # float32 step, as torch
    idx = np.arange(n, dtype=np.float64)
    half = n // 2
    lin64 = np.where(idx < half, 0.0 + float(step) * idx, 1.0 - float(step) * (n - 1 - idx))
    t = lin64.astype(_F32)
    # The shift, op by op in float32 (a Python scalar meets a float32 tensor as float32).
    return (_F32(t_shift) * t) / (_F32(1.0) + _F32(t_shift - 1.0) * t)


def unmask_schedule(num_frames: int, num_codebooks: int = 8, num_step: int = 32, t_shift: float = 0.1) -> list[int]:
    """How many cells of the ``num_codebooks x num_frames`` grid each step decides.

    From ``_generate_iterative``: step ``s`` takes
    ``min(ceil(total * (t[s+1] - t[s])), remaining)``, the last step takes
    what remains; the differences are taken in Python floats, as the
    reference does after ``.tolist()``.  The counts sum to ``total``.
    """
    t = time_steps(num_step, t_shift).tolist()
    total = num_frames * num_codebooks
    remaining = total
    schedule = []
    for step in range(num_step):
        if step == num_step - 1:
            num = remaining
        else:
            num = min(math.ceil(total * (t[step + 1] - t[step])), remaining)
        schedule.append(int(num))
        remaining -= int(num)
    return schedule


def guidance_schedule(schedule: list[int], every: int = 1) -> list[bool]:
    """Which steps run the unconditional forward when it runs only every ``every``-th step.

    Steps that decide nothing (``k <= 0``) run no forward at all.  Of the
    others, the first runs it, then every ``every``-th after the last run; in
    between its last logits are reused.  ``every=1`` is the reference (every step).
    """
    runs, since = [], None
    for k in schedule:
        if k <= 0:
            runs.append(False)
            continue
        run = since is None or since >= every
        since = 1 if run else since + 1
        runs.append(run)
    return runs


# ---------------------------------------------------------------------------
# Scoring
# ---------------------------------------------------------------------------


def log_softmax_(x: np.ndarray, scratch: Optional[np.ndarray] = None) -> np.ndarray:
    """``log_softmax`` over the last axis, in place: ``x - max - log(sum(exp(x - max)))``.

    ``scratch`` (same shape and dtype) holds the exponentials; without it one
    temporary array is allocated.
    """
    x -= x.max(axis=-1, keepdims=True)
    e = np.exp(x, out=scratch)
    x -= np.log(e.sum(axis=-1, keepdims=True))
    return x


def _uniform(noise: Noise, shape: tuple[int, ...]) -> np.ndarray:
    """Uniform [0, 1) noise of ``shape``: the given array, or drawn from a generator."""
    if noise is None:
        noise = np.random.default_rng()
    if isinstance(noise, np.random.Generator):
        return noise.random(shape, dtype=_F32)
    noise = np.asarray(noise)
    if noise.shape != shape:
        raise ValueError(f"noise has shape {noise.shape}, expected {shape}")
    return noise


def gumbel_noise(u: np.ndarray) -> np.ndarray:
    """``-log(-log(u + 1e-10) + 1e-10)`` in float32 (the noise of ``_gumbel_sample``)."""
    eps = _F32(1e-10)
    u = np.asarray(u, dtype=_F32)
    return -np.log(-np.log(u + eps) + eps)


def score_tokens(
    cond_logits: np.ndarray,
    uncond_logits: Optional[np.ndarray],
    guidance_scale: float = 2.0,
    class_temperature: float = 0.0,
    noise: Noise = None,
    *,
    mask_id: int = 1024,
    overwrite: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """Predicted token and its confidence for every cell (reference: ``_predict_tokens_with_scoring``).

    ``cond_logits``, ``uncond_logits``: float32 ``[C, T, V]`` logits of the
    target frames from the conditional and unconditional rows.  With
    ``c = log_softmax(cond)``, ``u = log_softmax(uncond)`` the log-probabilities
    are ``lp = log_softmax(c + g * (c - u))`` (``g = 0``: ``lp = c`` and
    ``uncond_logits`` is not used), and ``lp[..., mask_id] = -inf``.

    Tokens: ``argmax(lp)`` when ``class_temperature`` is 0; otherwise the
    ``ceil(0.1 * V)`` best classes are kept (``_filter_top_k``) and
    ``argmax(lp / class_temperature + gumbel(noise))`` is taken over them
    (``_gumbel_sample``; ``noise`` is ``[C, T, V]``, see the module doc).
    Confidence: ``max(lp)``.

    ``overwrite=True`` lets the function compute in the logits arrays
    themselves (they must be writable float32 arrays the caller no longer
    needs), saving two copies of ``[C, T, V]``.

    Returns ``(tokens int64 [C, T], confidence float32 [C, T])``.
    """
    copy = None if overwrite else True  # None: only when not already float32
    c = np.array(cond_logits, dtype=_F32, copy=copy)
    scratch = np.empty_like(c)
    log_softmax_(c, scratch)
    if guidance_scale != 0:
        u = np.array(uncond_logits, dtype=_F32, copy=copy)
        log_softmax_(u, scratch)
        # lp = c + g * (c - u), built in u's buffer, same operation order as the reference
        np.subtract(c, u, out=u)
        u *= _F32(guidance_scale)
        np.add(c, u, out=u)
        lp = log_softmax_(u, scratch)
    else:
        lp = c
    del scratch
    lp[..., mask_id] = -np.inf

    confidence = lp.max(axis=-1)
    if np.isnan(confidence).any():
        raise FloatingPointError("the model's logits contain NaN (an overflow in the ONNX graph?)")

    if class_temperature > 0.0:
        vocab = lp.shape[-1]
        k = math.ceil(0.1 * vocab)  # _filter_top_k(ratio=0.1)
        u_all = _uniform(noise, lp.shape)
        if k < vocab:
            top = np.argpartition(lp, vocab - k, axis=-1)[..., vocab - k :]
            top.sort(axis=-1)  # so that a tie goes to the lowest class id, as torch.argmax
        else:
            top = np.broadcast_to(np.arange(vocab), lp.shape).copy()
        kept = np.take_along_axis(lp, top, axis=-1)
        kept /= _F32(class_temperature)
        kept += gumbel_noise(np.take_along_axis(u_all, top, axis=-1))
        tokens = np.take_along_axis(top, kept.argmax(axis=-1)[..., None], axis=-1)[..., 0]
    else:
        tokens = lp.argmax(axis=-1)
    return tokens.astype(np.int64), confidence


# ---------------------------------------------------------------------------
# Position selection
# ---------------------------------------------------------------------------


def select_positions(
    confidence: np.ndarray,
    tokens: np.ndarray,
    k: int,
    layer_penalty_factor: float = 5.0,
    position_temperature: float = 5.0,
    noise: Noise = None,
    *,
    mask_id: int = 1024,
) -> np.ndarray:
    """The ``k`` cells decided this step, as a boolean ``[C, T]`` mask (from ``_generate_iterative``).

    ``score = confidence - codebook_index * layer_penalty_factor``; when
    ``position_temperature > 0``, ``score = score / position_temperature +
    gumbel(noise)`` (``noise`` is ``[C, T]``); cells already decided
    (``tokens != mask_id``) get -inf; the ``k`` best of the flattened grid
    win (ties: lower flat index, see the module doc).  ``k`` must not exceed
    the number of undecided cells (``unmask_schedule`` guarantees it).
    """
    confidence = np.asarray(confidence, dtype=_F32)
    num_codebooks = confidence.shape[0]
    penalty = np.arange(num_codebooks, dtype=_F32)[:, None] * _F32(layer_penalty_factor)
    scores = confidence - penalty
    if position_temperature > 0.0:
        scores /= _F32(position_temperature)
        scores += gumbel_noise(_uniform(noise, scores.shape))
    undecided = tokens == mask_id
    scores[~undecided] = -np.inf

    decided = np.zeros(scores.shape, dtype=bool)
    if k <= 0:
        return decided
    if k > int(undecided.sum()):
        raise ValueError(f"cannot decide {k} cells: only {int(undecided.sum())} are still masked")
    flat = scores.ravel()
    order = np.argsort(-flat, kind="stable")[:k]  # descending, ties -> lower index
    decided.ravel()[order] = True
    return decided


def decode_step(
    tokens: np.ndarray,
    cond_logits: np.ndarray,
    uncond_logits: Optional[np.ndarray],
    k: int,
    *,
    guidance_scale: float = 2.0,
    class_temperature: float = 0.0,
    layer_penalty_factor: float = 5.0,
    position_temperature: float = 5.0,
    rng: Optional[np.random.Generator] = None,
    mask_id: int = 1024,
    overwrite: bool = False,
) -> np.ndarray:
    """One step of ``_generate_iterative`` for one item: decide ``k`` cells of ``tokens`` in place.

    ``tokens``: int64 ``[C, T]``, ``mask_id`` where undecided.  Draws the
    class noise (when ``class_temperature > 0``) and then the position noise
    (when ``position_temperature > 0``) from ``rng``, in the reference's
    order; nothing happens, and nothing is drawn, when ``k <= 0``.  Returns
    the boolean mask of the cells decided.

    Only the undecided cells are scored (the reference scores every cell, then
    gives the decided ones -inf): ``score_tokens`` runs on their logits alone,
    which gives each of them the same bits (every operation is per cell, along
    the classes), and the noise is drawn over the whole grid as the reference
    draws it, then read at those cells, so the random stream is the same.  The
    logits of decided cells are never read (they may be anything finite).
    ``overwrite``: the logits may be computed in when every cell is undecided
    (else the undecided cells' logits are a copy and the arrays are left as given).
    """
    if k <= 0:
        return np.zeros(tokens.shape, dtype=bool)
    if rng is None:
        rng = np.random.default_rng()
    undecided = tokens == mask_id
    noise = _uniform(rng, tuple(np.shape(cond_logits))) if class_temperature > 0.0 else None
    if undecided.all():   # the first step: every cell, the arrays as they are (flattened views where contiguous)
        cells = [np.reshape(a, (-1, np.shape(a)[-1])) if a is not None else None
                 for a in (cond_logits, uncond_logits, noise)]
    else:
        cells = [np.asarray(a)[undecided] if a is not None else None for a in (cond_logits, uncond_logits, noise)]
        overwrite = True   # copies of their own
    pred_cells, confidence_cells = score_tokens(cells[0], cells[1], guidance_scale, class_temperature, cells[2],
                                                mask_id=mask_id, overwrite=overwrite)
    confidence = np.full(tokens.shape, -np.inf, dtype=_F32)
    confidence[undecided] = confidence_cells
    decided = select_positions(
        confidence, tokens, k, layer_penalty_factor, position_temperature, rng, mask_id=mask_id
    )
    pred = np.full(tokens.shape, mask_id, dtype=np.int64)
    pred[undecided] = pred_cells
    tokens[decided] = pred[decided]
    return decided
