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


def bursts(layout: list[tuple[str, float]], sample_rate: int, level: float = 0.3,
           seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(audio float32 [1, N], speech mask [N]) of ``layout``: ("s", seconds) a voiced burst (140 Hz and its
    octave), ("p", seconds) a pause of noise 60 dB under the bursts; where speech is, exactly."""
    rng = np.random.default_rng(seed)
    pieces, mask = [], []
    for kind, seconds in layout:
        n = int(round(seconds * sample_rate))
        t = np.arange(n) / sample_rate
        if kind == "s":
            pieces.append(level * (np.sin(2 * np.pi * 140 * t) + 0.5 * np.sin(2 * np.pi * 280 * t)) / 1.5)
        else:
            pieces.append(level * 1e-3 * rng.standard_normal(n))
        mask.append(np.full(n, kind == "s"))
    return np.concatenate(pieces)[None].astype(np.float32), np.concatenate(mask)


#: 27 s: three 3 s bursts close together in the middle (9.6 s with their short pauses), short ones around them
DENSE_MIDDLE = [("p", 2.0), ("s", 1.0), ("p", 2.5), ("s", 1.0), ("p", 1.5),
                ("s", 3.0), ("p", 0.3), ("s", 3.0), ("p", 0.3), ("s", 3.0),
                ("p", 2.0), ("s", 1.0), ("p", 2.0), ("s", 1.5), ("p", 3.0)]
