"""Loudness for delivery: integrated loudness to a target (EBU R128 / ITU-R BS.1770-4) under a true-peak ceiling.

``normalise_loudness(audio, rate, target_lufs)`` measures the integrated loudness with
``pyloudnorm`` (the BS.1770-4 meter: K-weighting, 400 ms gated blocks), applies the gain that
brings it to the target, then measures the true peak (the signal 4x oversampled, BS.1770-4
Annex 2) and, when it is over the ceiling (``TRUE_PEAK_CEILING`` dBTP, EBU R128's -1), lowers the
gain until it is not: the ceiling wins over the target, so a very peaky clip comes out quieter
than asked rather than clipped.  No limiter or compressor changes the sound.

It is off by default (the exact output); ``pyloudnorm`` (with scipy) is the ``loudness`` extra.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ..errors import InvalidInput, ModelNotAvailable

#: EBU R128's maximum true peak for delivery, dBTP
TRUE_PEAK_CEILING = -1.0
#: BS.1770-4's oversampling for the true peak at 48 kHz and below
OVERSAMPLE = 4
LOUDNESS_INSTALL = "pip install 'omnivoice-onnx-studio[loudness]' (or: pip install pyloudnorm)"


@dataclasses.dataclass(frozen=True)
class Loudness:
    """What normalisation did: the loudness before and after (LUFS), the true peak after (dBTP), the gain (dB)."""

    before: float
    after: float
    true_peak: float
    gain_db: float


def require_pyloudnorm():
    try:
        import pyloudnorm
    except ImportError:
        raise ModelNotAvailable(f"Loudness normalisation needs pyloudnorm, which is not installed: "
                                f"{LOUDNESS_INSTALL}.") from None
    return pyloudnorm


def integrated_loudness(audio: np.ndarray, rate: int) -> float:
    """LUFS of mono ``audio`` (BS.1770-4); -inf for silence or audio shorter than one 400 ms block."""
    wav = np.asarray(audio, dtype=np.float64).reshape(-1)
    if wav.size < int(0.4 * rate):
        return float("-inf")
    import warnings

    with warnings.catch_warnings():  # pyloudnorm warns about clipping; the true peak is ours to judge
        warnings.simplefilter("ignore")
        return float(require_pyloudnorm().Meter(rate).integrated_loudness(wav))


def true_peak(audio: np.ndarray, rate: int) -> float:
    """dBTP of mono ``audio``: the largest magnitude of the signal oversampled 4x (BS.1770-4 Annex 2)."""
    from scipy.signal import resample_poly

    wav = np.asarray(audio, dtype=np.float64).reshape(-1)
    if not wav.size:
        return float("-inf")
    factor = OVERSAMPLE if rate <= 48000 else 2
    peak = max(float(np.abs(resample_poly(wav, factor, 1)).max()), float(np.abs(wav).max()))
    return float(20 * np.log10(peak)) if peak > 0 else float("-inf")


def normalise_loudness(audio: np.ndarray, rate: int, target_lufs: float,
                       ceiling_dbtp: float = TRUE_PEAK_CEILING) -> tuple[np.ndarray, Loudness]:
    """``audio`` (float32 mono) at ``target_lufs`` integrated loudness, its true peak at most ``ceiling_dbtp``.

    Audio without measurable loudness (silence, under 0.4 s) is returned as it is."""
    if not np.isfinite(target_lufs):
        raise InvalidInput(f"loudness must be a number of LUFS, got {target_lufs!r}.", param="loudness")
    wav = np.asarray(audio, dtype=np.float32).reshape(-1)
    before = integrated_loudness(wav, rate)
    if not np.isfinite(before):
        peak = true_peak(wav, rate)
        return wav.copy(), Loudness(before=before, after=before, true_peak=peak, gain_db=0.0)
    gain_db = float(target_lufs) - before
    peak = true_peak(wav, rate) + gain_db
    if peak > ceiling_dbtp:
        gain_db -= peak - ceiling_dbtp + 1e-3  # a thousandth of a dB under, whatever the rounding
    out = (wav.astype(np.float64) * 10 ** (gain_db / 20)).astype(np.float32)
    return out, Loudness(before=before, after=integrated_loudness(out, rate), true_peak=true_peak(out, rate),
                         gain_db=float(gain_db))
