"""Whisper's log-mel front end in NumPy, equal to ``transformers.WhisperFeatureExtractor``.

Hand-written because the runtime has no torch, and the feature extractor of
``transformers`` (which does the same in NumPy) would pull ``transformers`` into the
runtime.  The recipe is the feature extractor's, with its defaults from
``preprocessor_config.json``:

* 16 kHz audio is zero-padded (or cut) to ``n_samples`` (30 s = 480000 samples);
* periodic Hann window of ``n_fft`` = 400, hop 160, centred frames with reflect
  padding; power spectrum; the last frame is dropped (3000 frames remain);
* slaney-style mel filters (``mel_filter_bank(..., norm="slaney", mel_scale="slaney")``,
  0 to 8 kHz); ``log10(max(mel, 1e-10))``, floored at its maximum - 8, then
  ``(x + 4) / 4``.

The tests compare it with the feature extractor of ``transformers`` on the same audio.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np


def _hertz_to_mel(freq):
    freq = np.asarray(freq, dtype=np.float64)
    min_log_hertz, min_log_mel, logstep = 1000.0, 15.0, 27.0 / np.log(6.4)
    mels = 3.0 * freq / 200.0
    return np.where(freq >= min_log_hertz, min_log_mel + np.log(np.maximum(freq, 1e-10) / min_log_hertz) * logstep,
                    mels)


def _mel_to_hertz(mels):
    mels = np.asarray(mels, dtype=np.float64)
    min_log_hertz, min_log_mel, logstep = 1000.0, 15.0, np.log(6.4) / 27.0
    freq = 200.0 * mels / 3.0
    return np.where(mels >= min_log_mel, min_log_hertz * np.exp(logstep * (mels - min_log_mel)), freq)


@lru_cache(maxsize=4)
def mel_filters(n_fft: int, n_mels: int, sampling_rate: int) -> np.ndarray:
    """``[n_fft // 2 + 1, n_mels]`` slaney mel filter bank (float64), 0 .. sampling_rate / 2."""
    bins = n_fft // 2 + 1
    mel_freqs = np.linspace(_hertz_to_mel(0.0), _hertz_to_mel(sampling_rate / 2), n_mels + 2)
    filter_freqs = _mel_to_hertz(mel_freqs)
    fft_freqs = np.linspace(0, sampling_rate // 2, bins)
    diff = np.diff(filter_freqs)
    slopes = filter_freqs[None, :] - fft_freqs[:, None]
    down = -slopes[:, :-2] / diff[:-1]
    up = slopes[:, 2:] / diff[1:]
    filters = np.maximum(0.0, np.minimum(down, up))
    enorm = 2.0 / (filter_freqs[2:n_mels + 2] - filter_freqs[:n_mels])
    return filters * enorm[None, :]


@lru_cache(maxsize=2)
def _hann(n_fft: int) -> np.ndarray:
    return np.hanning(n_fft + 1)[:-1]  # periodic


def log_mel(audio_16k: np.ndarray, n_mels: int = 80, n_fft: int = 400, hop_length: int = 160,
            n_samples: int = 480000, sampling_rate: int = 16000) -> np.ndarray:
    """``[n_mels, n_samples // hop_length]`` float32 features of one 16 kHz clip (padded or cut to 30 s)."""
    wave = np.zeros(n_samples, dtype=np.float64)
    clip = np.asarray(audio_16k, dtype=np.float64)[:n_samples]
    wave[:clip.shape[0]] = clip
    half = n_fft // 2
    padded = np.pad(wave, half, mode="reflect")
    frames = 1 + (padded.shape[0] - n_fft) // hop_length
    # a frame that starts past the clip sees only the zero padding (the reflection at the end is of zeros
    # too while the clip ends before it): its power is exactly 0, so only the frames over the clip are
    # transformed (a 5 s clip: a sixth of the window) and the rest get the value of a zero frame
    used = frames
    if clip.shape[0] + half + 1 < n_samples:
        used = min(frames, -(-(clip.shape[0] + half) // hop_length))
    index = np.arange(n_fft)[None, :] + hop_length * np.arange(used)[:, None]
    spectrum = np.abs(np.fft.rfft(padded[index] * _hann(n_fft), n=n_fft, axis=-1)) ** 2  # [used, bins]
    mel = np.zeros((n_mels, frames))
    mel[:, :used] = mel_filters(n_fft, n_mels, sampling_rate).T @ spectrum.T  # [n_mels, frames]
    log_spec = np.log10(np.maximum(mel, 1e-10))[:, :-1]
    log_spec = np.maximum(log_spec, log_spec.max() - 8.0)
    return ((log_spec + 4.0) / 4.0).astype(np.float32)
