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

Bounded for any pair of rates.  torchaudio's bank has ``new`` rows of
``2*width + orig`` taps, which for co-prime rates (12001 Hz -> 24 kHz: 24000 x
12015 floats, then a product over all of them) costs gigabytes and minutes.
Yet each row is non-zero only on ``2*width + 1`` consecutive taps (``|t| < 6``;
outside, the clipped window is ``cos(pi/2)**2``, about 1e-15, times a sinc of
about 1e-7), starting at ``floor(phase * orig / new)``.  When the full bank is
large, only those taps are computed (with the same float32 operations, so the
same values) and the output is produced in blocks of bounded size.  The tiny
taps left out change the result by less than 1e-20.  Both paths are tested
against torchaudio.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Optional

import numpy as np

from ..errors import InvalidInput

__all__ = ["resample", "resampled_length"]

LOWPASS_FILTER_WIDTH = 6
ROLLOFF = 0.99
#: Above this many taps (rows x columns) the full bank is not built: the banded path runs instead.
DENSE_KERNEL_LIMIT = 1 << 18
#: The banded bank may hold at most this many floats (about 12 x the reduced input rate): 16 MB.
BANDED_KERNEL_LIMIT = 1 << 22
#: Floats gathered per block of the banded path (16 MB).
BLOCK_FLOATS = 1 << 22


def resampled_length(length: int, orig_freq: int, new_freq: int) -> int:
    """Number of samples ``resample`` returns for ``length`` input samples."""
    if orig_freq == new_freq:
        return int(length)
    g = math.gcd(int(orig_freq), int(new_freq))
    orig, new = int(orig_freq) // g, int(new_freq) // g
    # torchaudio: torch.ceil(torch.as_tensor(new * length / orig)): the double quotient rounded to float32
    # first (24000 * 24000 / 12001 = 47996.0003 becomes 47996.0)
    return int(math.ceil(np.float32(new * length / orig)))


def _width(orig: int, new: int) -> int:
    return math.ceil(LOWPASS_FILTER_WIDTH * orig / (min(orig, new) * ROLLOFF))


@lru_cache(maxsize=16)  # each bank has at most DENSE_KERNEL_LIMIT floats, so the cache stays under 16 MB
def _sinc_resample_kernel(orig: int, new: int) -> tuple[np.ndarray, int]:
    """The filter bank ``[new, 2*width + orig]`` (float32) and ``width``, for gcd-reduced rates.

    Mirrors ``torchaudio.functional.functional._get_sinc_resample_kernel`` with
    ``dtype=float32`` (torchaudio passes the waveform's dtype, so the index
    grid and every intermediate are float32 there too).
    """
    f32 = np.float32
    width = _width(orig, new)
    idx = (np.arange(-width, width + orig, dtype=f32) / f32(orig))[None, :]
    t = (np.arange(0, -new, -1, dtype=f32) / f32(new))[:, None] + idx
    kernels = _windowed_sinc(t, orig, new)
    kernels.setflags(write=False)  # shared through the cache
    return kernels, width


def _banded_kernel(orig: int, new: int) -> tuple[np.ndarray, np.ndarray, int]:
    """The non-zero band of torchaudio's bank: taps ``[new, 2*width + 2]``, their first column per row, width.

    Row ``p``'s band starts at column ``floor(p * orig / new)``; each tap is
    computed from its column index exactly as in the full bank.  Columns past
    the bank's last (``2*width + orig``) get weight 0.
    """
    f32 = np.float32
    width = _width(orig, new)
    band = 2 * width + 2
    starts = np.arange(new, dtype=np.int64) * orig // new
    columns = starts[:, None] + np.arange(band, dtype=np.int64)[None, :]
    # the same float32 values as the full grid: arange(-width, width+orig) / orig at these columns
    idx = (columns - width).astype(f32) / f32(orig)
    t = (np.arange(0, -new, -1, dtype=f32) / f32(new))[:, None] + idx
    kernel = _windowed_sinc(t, orig, new)
    kernel[columns >= 2 * width + orig] = 0.0
    return kernel, starts, width


def _windowed_sinc(t: np.ndarray, orig: int, new: int) -> np.ndarray:
    """torchaudio's ``sinc_interp_hann`` taps at time offsets ``t`` (in input samples), float32 throughout."""
    f32 = np.float32
    base_freq = min(orig, new) * ROLLOFF  # Python float, as in torchaudio
    t = (t * f32(base_freq)).astype(f32)
    t = np.clip(t, -LOWPASS_FILTER_WIDTH, LOWPASS_FILTER_WIDTH).astype(f32)

    window = np.cos(t * f32(math.pi) / f32(LOWPASS_FILTER_WIDTH) / f32(2)) ** 2
    t = (t * f32(math.pi)).astype(f32)
    scale = f32(base_freq / orig)
    with np.errstate(divide="ignore", invalid="ignore"):
        kernels = np.where(t == 0, f32(1.0), np.sin(t) / t).astype(f32)
    kernels = kernels * (window * scale)
    return np.ascontiguousarray(kernels.astype(f32))


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
    shape = waveform.shape
    length = shape[-1]
    flat = waveform.reshape(-1, length)
    out_length = resampled_length(length, orig_freq, new_freq)
    width = _width(orig, new)
    if new * (2 * width + orig) > DENSE_KERNEL_LIMIT:
        if new * (2 * width + 2) > BANDED_KERNEL_LIMIT:
            raise InvalidInput(f"Resampling from {orig_freq} Hz to {new_freq} Hz is not supported (the filter "
                               "would be too large); convert the audio to a common rate such as 48000 Hz first.")
        out = _resample_banded(flat, orig, new, out_length)
        return np.ascontiguousarray(out.reshape(shape[:-1] + (out.shape[-1],)), dtype=np.float32)
    kernel, width = _sinc_resample_kernel(orig, new)
    padded = np.pad(flat, ((0, 0), (width, width + orig)))
    taps = kernel.shape[1]  # 2 * width + orig
    # windows[b, f, :] = padded[b, f*orig : f*orig + taps]  (a strided view, no copy)
    windows = np.lib.stride_tricks.sliding_window_view(padded, taps, axis=-1)[:, ::orig, :]
    # [B, frames, taps] @ [taps, new] -> [B, frames, new]; phases interleave in time
    out = np.matmul(windows, kernel.T).reshape(flat.shape[0], -1)
    out = out[:, :out_length]
    return np.ascontiguousarray(out.reshape(shape[:-1] + (out.shape[-1],)), dtype=np.float32)


def _resample_banded(flat: np.ndarray, orig: int, new: int, out_length: int,
                     block: Optional[int] = None) -> np.ndarray:
    """``[B, N] -> [B, out_length]`` with the banded bank, a bounded block of outputs at a time.

    Output ``j`` (frame ``f = j // new``, phase ``p = j % new``) is the band of
    row ``p`` applied at ``f * orig + start[p]`` of the padded signal, which is
    what the full bank computes at stride ``orig`` (less the ~1e-22 taps).
    """
    kernel, starts, width = _banded_kernel(orig, new)
    band = kernel.shape[1]
    padded = np.pad(flat, ((0, 0), (width, width + orig + band)))
    block = block or max(1, BLOCK_FLOATS // (band * flat.shape[0]))
    out = np.empty((flat.shape[0], out_length), dtype=np.float32)
    offsets = np.arange(band, dtype=np.int64)
    for first in range(0, out_length, block):
        j = np.arange(first, min(first + block, out_length), dtype=np.int64)
        phase = j % new
        at = (j // new) * orig + starts[phase]
        windows = padded[:, at[:, None] + offsets[None, :]]          # [B, block, band]
        out[:, first:first + len(j)] = np.einsum("bjk,jk->bj", windows, kernel[phase])
    return out
