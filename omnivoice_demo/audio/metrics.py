"""How close a codec round trip is: signal-to-noise ratio and log-mel distance (NumPy only)."""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from ..constants import SAMPLE_RATE


def _aligned(reference: np.ndarray, estimate: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    reference = np.asarray(reference, dtype=np.float64).reshape(-1)
    estimate = np.asarray(estimate, dtype=np.float64).reshape(-1)
    n = min(len(reference), len(estimate))
    return reference[:n], estimate[:n]


def snr_db(reference: np.ndarray, estimate: np.ndarray) -> float:
    """10 log10(|x|^2 / |x - y|^2) over the common length (higher is closer).

    A neural codec does not keep the waveform's phase exactly, so this is often
    low (even negative) for output that sounds close; the log-mel distance is
    the better measure of what is heard.
    """
    x, y = _aligned(reference, estimate)
    noise = float(np.sum((x - y) ** 2))
    signal = float(np.sum(x ** 2))
    if signal == 0.0:
        return float("nan")
    if noise == 0.0:
        return float("inf")
    return 10.0 * np.log10(signal / noise)


def _hz_to_mel(hz):
    return 2595.0 * np.log10(1.0 + np.asarray(hz, dtype=np.float64) / 700.0)


def _mel_to_hz(mel):
    return 700.0 * (10.0 ** (np.asarray(mel, dtype=np.float64) / 2595.0) - 1.0)


@lru_cache(maxsize=4)
def mel_filterbank(sample_rate: int, n_fft: int, n_mels: int, fmin: float = 0.0, fmax: float | None = None) -> np.ndarray:
    """Triangular HTK-mel filters ``[n_mels, n_fft // 2 + 1]`` (slaney-style area normalisation)."""
    fmax = fmax or sample_rate / 2
    freqs = np.linspace(0.0, sample_rate / 2, n_fft // 2 + 1)
    edges = _mel_to_hz(np.linspace(_hz_to_mel(fmin), _hz_to_mel(fmax), n_mels + 2))
    bank = np.zeros((n_mels, len(freqs)))
    for m in range(n_mels):
        lo, mid, hi = edges[m], edges[m + 1], edges[m + 2]
        rising = (freqs - lo) / max(mid - lo, 1e-9)
        falling = (hi - freqs) / max(hi - mid, 1e-9)
        bank[m] = np.maximum(0.0, np.minimum(rising, falling)) * 2.0 / max(hi - lo, 1e-9)
    return bank


def log_mel(audio: np.ndarray, sample_rate: int = SAMPLE_RATE, n_fft: int = 1024, hop: int = 256,
            n_mels: int = 80) -> np.ndarray:
    """log10 mel power spectrogram ``[frames, n_mels]`` (Hann window, no centre padding)."""
    audio = np.asarray(audio, dtype=np.float64).reshape(-1)
    if len(audio) < n_fft:
        audio = np.pad(audio, (0, n_fft - len(audio)))
    count = 1 + (len(audio) - n_fft) // hop
    index = np.arange(n_fft)[np.newaxis, :] + hop * np.arange(count)[:, np.newaxis]
    frames = audio[index] * np.hanning(n_fft)[np.newaxis, :]
    power = np.abs(np.fft.rfft(frames, axis=-1)) ** 2
    return np.log10(np.maximum(power @ mel_filterbank(sample_rate, n_fft, n_mels).T, 1e-10))


def log_mel_distance(reference: np.ndarray, estimate: np.ndarray, sample_rate: int = SAMPLE_RATE) -> float:
    """Mean absolute difference of the log10 mel spectrograms (0 is identical; lower is closer)."""
    x, y = _aligned(reference, estimate)
    return float(np.mean(np.abs(log_mel(x, sample_rate) - log_mel(y, sample_rate))))
