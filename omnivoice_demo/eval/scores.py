"""How close a candidate's output is to the exact model's: codes, sound, words.

* ``codes_agreement``: the share of the 8 x T code cells equal to the exact run's
  at the same seed (chunks joined in order), overall and per codebook.  When the
  lengths differ, the cells past the shorter run count as disagreeing: the
  denominator is the longer run's.
* the log-mel distance (``audio_metrics.log_mel_distance``) over the common length,
  and the duration ratio (candidate seconds / exact seconds).
* ``error_rates``: word and character error rates of a transcript against the text
  that was spoken, counted by ``jiwer`` after ``normalise_text``.

Text normalisation (the one rule for every language): Unicode NFKC, case folded,
apostrophes removed (``don't`` -> ``dont``), every other punctuation mark or symbol
replaced by a space, whitespace collapsed.  Numbers stay as written: "5" and "five"
differ, so the built-in sentences spell their numbers out.  Words are split at
spaces; characters are counted with the spaces removed, so the character error
rate means the same for Chinese or Japanese (written without spaces, where the
word error rate is not meaningful) as for English.
"""

from __future__ import annotations

import dataclasses
import unicodedata
from typing import Sequence

import numpy as np

from ..errors import OmniVoiceError

APOSTROPHES = "'\u2019\u02bc"
JIWER_INSTALL = "pip install 'omnivoice-onnx-studio[eval]' (or: pip install jiwer)"
#: languages written without spaces between words: read their character error rate
UNSPACED_LANGUAGES = frozenset({"zh", "ja", "yue", "th", "lo", "km", "my", "bo"})


class MissingEvalDependency(OmniVoiceError):
    """A package the evaluation needs is not installed; the message names the install."""


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


def normalise_text(text: str) -> str:
    """The one normalisation applied to both the spoken text and the transcript (see the module)."""
    text = unicodedata.normalize("NFKC", text).casefold()
    for mark in APOSTROPHES:
        text = text.replace(mark, "")
    text = "".join(" " if unicodedata.category(c)[0] in "PS" else c for c in text)
    return " ".join(text.split())


@dataclasses.dataclass(frozen=True)
class ErrorRates:
    """Edits of the transcript against the reference text: words and characters."""

    word_errors: int
    words: int
    char_errors: int
    chars: int

    @property
    def wer(self) -> float:
        return self.word_errors / self.words if self.words else 0.0

    @property
    def cer(self) -> float:
        return self.char_errors / self.chars if self.chars else 0.0

    def to_dict(self) -> dict:
        return dict(dataclasses.asdict(self), wer=self.wer, cer=self.cer)


def require_jiwer():
    try:
        import jiwer
    except ImportError:
        raise MissingEvalDependency(f"Word error rates need jiwer, which is not installed: {JIWER_INSTALL}.") from None
    return jiwer


def error_rates(reference: str, transcript: str) -> ErrorRates:
    """Word and character edits (substitutions + deletions + insertions) counted by ``jiwer``."""
    jiwer = require_jiwer()
    ref, hyp = normalise_text(reference), normalise_text(transcript)
    ref_chars, hyp_chars = ref.replace(" ", ""), hyp.replace(" ", "")
    return ErrorRates(_edits(jiwer.process_words, ref, hyp, len(ref.split()), len(hyp.split())), len(ref.split()),
                      _edits(jiwer.process_characters, ref_chars, hyp_chars, len(ref_chars), len(hyp_chars)),
                      len(ref_chars))


def _edits(process, reference: str, hypothesis: str, reference_units: int, hypothesis_units: int) -> int:
    """Substitutions + deletions + insertions; jiwer refuses empty strings, whose counts are plain."""
    if not reference or not hypothesis:  # all inserted, or all deleted
        return hypothesis_units if not reference else reference_units
    out = process(reference, hypothesis)
    return int(out.substitutions + out.deletions + out.insertions)


def corpus_rates(rates: Sequence[ErrorRates]) -> ErrorRates:
    """All items' edits over all items' words and characters (the published way to average)."""
    return ErrorRates(sum(r.word_errors for r in rates), sum(r.words for r in rates),
                      sum(r.char_errors for r in rates), sum(r.chars for r in rates))


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    a, b = np.asarray(a, dtype=np.float64).reshape(-1), np.asarray(b, dtype=np.float64).reshape(-1)
    norm = float(np.linalg.norm(a) * np.linalg.norm(b))
    return float(a @ b / norm) if norm else 0.0
