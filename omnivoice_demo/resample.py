"""Band-limited resampling in NumPy, equal to ``torchaudio.functional.resample``.

The codec's semantic branch hears the 24 kHz waveform resampled to 16 kHz by
``torchaudio.functional.resample`` (inside ``HiggsAudioV2TokenizerModel``), and
the reference resamples a voice-clone prompt of any rate to 24 kHz the same
way.  For the ONNX codes to match the PyTorch ones the resampler must compute
the same function, so this is a port of torchaudio's default method
(``sinc_interp_hann``, ``lowpass_filter_width=6``, ``rolloff=0.99``):

* both rates are divided by their gcd: ``orig = orig_freq // g``,
  ``new = new_freq // g``;
* a bank of ``new`` windowed-sinc filters of ``2*width + orig`` taps is built
  in float32 exactly as torchaudio builds it (same operation order, float32
  index grid), where ``width = ceil(6 * orig / (0.99 * min(orig, new)))``;
* the signal is zero-padded by ``width`` on the left and ``width + orig`` on
  the right, every filter is applied at stride ``orig`` (one matrix product
  over strided windows, no Python loop over samples), the ``new`` phases are
  interleaved, and the result is cut to ``ceil(new * length / orig)`` samples.

The result agrees with torchaudio to float32 rounding (about 1e-7 for signals
of unit scale): only the summation order inside the convolution differs.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from .errors import InvalidInput

__all__ = ["resample", "resampled_length"]

LOWPASS_FILTER_WIDTH = 6
ROLLOFF = 0.99


def resampled_length(length: int, orig_freq: int, new_freq: int) -> int:
    """Number of samples ``resample`` returns for ``length`` input samples."""
    if orig_freq == new_freq:
        return int(length)
    g = math.gcd(int(orig_freq), int(new_freq))
    orig, new = int(orig_freq) // g, int(new_freq) // g
    # torchaudio: ceil(new * length / orig), evaluated in double precision
    return int(math.ceil(new * length / orig))


@lru_cache(maxsize=16)
def _sinc_resample_kernel(orig: int, new: int) -> tuple[np.ndarray, int]:
    """The filter bank ``[new, 2*width + orig]`` (float32) and ``width``, for gcd-reduced rates.

    Mirrors ``torchaudio.functional.functional._get_sinc_resample_kernel`` with
    ``dtype=float32`` (torchaudio passes the waveform's dtype, so the index
    grid and every intermediate are float32 there too).
    """
    f32 = np.float32
    base_freq = min(orig, new) * ROLLOFF  # Python float, as in torchaudio
    width = math.ceil(LOWPASS_FILTER_WIDTH * orig / base_freq)

    idx = (np.arange(-width, width + orig, dtype=f32) / f32(orig))[None, :]
    t = (np.arange(0, -new, -1, dtype=f32) / f32(new))[:, None] + idx
    t = (t * f32(base_freq)).astype(f32)
    t = np.clip(t, -LOWPASS_FILTER_WIDTH, LOWPASS_FILTER_WIDTH).astype(f32)

    window = np.cos(t * f32(math.pi) / f32(LOWPASS_FILTER_WIDTH) / f32(2)) ** 2
    t = (t * f32(math.pi)).astype(f32)
    scale = f32(base_freq / orig)
    with np.errstate(divide="ignore", invalid="ignore"):
        kernels = np.where(t == 0, f32(1.0), np.sin(t) / t).astype(f32)
    kernels = kernels * (window * scale)
    kernels = np.ascontiguousarray(kernels.astype(f32))
    kernels.setflags(write=False)
    return kernels, width


def resample(waveform: np.ndarray, orig_freq: int, new_freq: int) -> np.ndarray:
    """Resample ``waveform`` (time on the last axis) from ``orig_freq`` to ``new_freq`` Hz.

    Any leading shape is kept (mono ``[N]``, stereo ``[2, N]``, batches
    ``[B, C, N]``).  The output is float32 with
    ``resampled_length(N, orig_freq, new_freq)`` samples on the last axis; equal
    rates return the input (as float32) unchanged, as torchaudio does.
    """
    if int(orig_freq) != orig_freq or int(new_freq) != new_freq:
        raise InvalidInput(f"sample rates must be integers, got {orig_freq} and {new_freq}")
    if orig_freq <= 0 or new_freq <= 0:
        raise InvalidInput(f"sample rates must be positive, got {orig_freq} and {new_freq}")
    waveform = np.asarray(waveform)
    if waveform.ndim == 0:
        raise InvalidInput("waveform must have at least one axis (time)")
    if not np.issubdtype(waveform.dtype, np.floating):
        raise TypeError(f"waveform must be floating point, got {waveform.dtype}")
    waveform = waveform.astype(np.float32, copy=False)
    if orig_freq == new_freq:
        return waveform

    g = math.gcd(int(orig_freq), int(new_freq))
    orig, new = int(orig_freq) // g, int(new_freq) // g
    kernel, width = _sinc_resample_kernel(orig, new)

    shape = waveform.shape
    length = shape[-1]
    flat = waveform.reshape(-1, length)
    padded = np.pad(flat, ((0, 0), (width, width + orig)))
    taps = kernel.shape[1]  # 2 * width + orig
    # windows[b, f, :] = padded[b, f*orig : f*orig + taps]  (a strided view, no copy)
    windows = np.lib.stride_tricks.sliding_window_view(padded, taps, axis=-1)[:, ::orig, :]
    # [B, frames, taps] @ [taps, new] -> [B, frames, new]; phases interleave in time
    out = np.matmul(windows, kernel.T).reshape(flat.shape[0], -1)
    out = out[:, : resampled_length(length, orig_freq, new_freq)]
    return np.ascontiguousarray(out.reshape(shape[:-1] + (out.shape[-1],)), dtype=np.float32)
