"""How close a candidate's output is to the exact model's: codes, sound, words.

* ``codes_agreement``: the share of the 8 x T code cells equal to the exact run's
  at the same seed (chunks joined in order), overall and per codebook.  When the
  lengths differ, the cells past the shorter run count as disagreeing: the
  denominator is the longer run's.
* the log-mel distance (``audio_metrics.log_mel_distance``) over the common length,
  and the duration ratio (candidate seconds / exact seconds).
* ``error_rates``: word and character error rates of a transcript against the text
  that was spoken, counted by ``jiwer`` after ``normalise_text`` (both in
  ``omnivoice_demo.asr.scoring``, which the engine's sentence check shares).

Numbers stay as written by the normalisation: "5" and "five" differ, so the built-in
sentences spell their numbers out.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ..asr.scoring import (JIWER_INSTALL, UNSPACED_LANGUAGES, ErrorRates, MissingEvalDependency, error_rates,
                           normalise_text, require_jiwer)

__all__ = ["JIWER_INSTALL", "UNSPACED_LANGUAGES", "ErrorRates", "MissingEvalDependency", "codes_agreement", "corpus_rates",
           "cosine", "error_rates", "normalise_text", "require_jiwer"]


def codes_agreement(exact: np.ndarray, candidate: np.ndarray) -> tuple[float, list[float]]:
    """(share of equal cells, share per codebook) of two ``[codebooks, frames]`` code arrays."""
    exact, candidate = np.asarray(exact), np.asarray(candidate)
    frames = max(exact.shape[-1], candidate.shape[-1])
    if frames == 0:
        return 1.0, [1.0] * exact.shape[0]
    common = min(exact.shape[-1], candidate.shape[-1])
    equal = exact[:, :common] == candidate[:, :common]
    per_codebook = (equal.sum(axis=-1) / frames).astype(float).tolist()
    return float(equal.sum() / (frames * exact.shape[0])), per_codebook


def corpus_rates(rates: Sequence[ErrorRates]) -> ErrorRates:
    """All items' edits over all items' words and characters (the published way to average)."""
    return ErrorRates(sum(r.word_errors for r in rates), sum(r.words for r in rates),
                      sum(r.char_errors for r in rates), sum(r.chars for r in rates))


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    a, b = np.asarray(a, dtype=np.float64).reshape(-1), np.asarray(b, dtype=np.float64).reshape(-1)
    norm = float(np.linalg.norm(a) * np.linalg.norm(b))
    return float(a @ b / norm) if norm else 0.0
