"""Synthetic test audio: speech-like signals, made from numbers, no files."""

from __future__ import annotations

import numpy as np


def speech_like(seconds: float, sample_rate: int = 24000, seed: int = 0, channels: int = 1,
                level: float = 0.3) -> np.ndarray:
    """Voiced 'syllables': a harmonic tone with vibrato under a syllable envelope, with
    short noise bursts (consonants) and pauses.  float32 ``[channels, samples]``."""
    rng = np.random.default_rng(seed)
    n = int(seconds * sample_rate)
    t = np.arange(n) / sample_rate
    f0 = 110 + 40 * rng.random() + 12 * np.sin(2 * np.pi * 5.5 * t)
    phase = 2 * np.pi * np.cumsum(f0) / sample_rate
    voiced = sum(np.sin(h * phase) / h for h in range(1, 9))
    syllable_rate = 3.5 + rng.random()
    envelope = np.clip(np.sin(np.pi * syllable_rate * t) ** 2 * 1.4 - 0.2, 0, 1)
    bursts = rng.standard_normal(n) * (np.sin(np.pi * syllable_rate * t + 1.3) ** 16)
    signal = (voiced * envelope + 0.3 * bursts) * level / 1.5
    out = np.stack([signal * (1.0 - 0.1 * c) for c in range(channels)])
    return out.astype(np.float32)


def write_speech_like(path, seconds: float, sample_rate: int, seed: int = 0, channels: int = 1, **write_options) -> str:
    """``speech_like`` written to ``path`` (frames x channels, any soundfile format); returns the path as str."""
    import soundfile as sf

    sf.write(path, speech_like(seconds, sample_rate, seed=seed, channels=channels).T, sample_rate, **write_options)
    return str(path)
