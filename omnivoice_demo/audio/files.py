"""Audio files and arrays of samples in and out, checked: a file read within its limits, audio written as a
WAV or FLAC file, an array of samples checked and scaled to float32 ``[channels, samples]``.

Every check raises ``InvalidInput`` (or ``ResourceLimitExceeded``) that names the problem and the fix, and
names a file by its base name only (never a server folder).
"""

from __future__ import annotations

import io
import os
import pathlib
from typing import Optional

import numpy as np

from ..constants import SAMPLE_RATE
from ..errors import InvalidInput, ResourceLimitExceeded, excerpt
from ..storage.atomic import write_atomically

#: The longest reference input accepted (seconds; ``Limits.max_reference_seconds``, public default).
MAX_REFERENCE_SECONDS = 60.0
#: Sample rates read from files and accepted with arrays (Hz): telephone speech up to studio masters.
MIN_SAMPLE_RATE = 4000
MAX_SAMPLE_RATE = 192000
#: A decoded file holds at most this many samples (all channels) per second of the limit:
#: 48 kHz stereo; a 96 kHz stereo file may be half as long.
SAMPLES_PER_LIMIT_SECOND = 48000 * 2


def check_sample_rate(sample_rate, what: str = "audio") -> int:
    """The rate as an int when it is a whole number in ``MIN_SAMPLE_RATE..MAX_SAMPLE_RATE``, else ``InvalidInput``."""
    if isinstance(sample_rate, bool) or not isinstance(sample_rate, (int, np.integer)) and not (
            isinstance(sample_rate, float) and sample_rate.is_integer()):
        raise InvalidInput(f"The {what}'s sample rate must be a whole number of Hz, got {excerpt(sample_rate)}.",
                           param="sample_rate")
    if not MIN_SAMPLE_RATE <= sample_rate <= MAX_SAMPLE_RATE:
        raise InvalidInput(f"The {what} has a sample rate of {int(sample_rate)} Hz; supported rates are "
                           f"{MIN_SAMPLE_RATE}..{MAX_SAMPLE_RATE} Hz. Convert it (e.g. to 48000 Hz) first.",
                           param="sample_rate")
    return int(sample_rate)


def load_audio_file(path, max_seconds: float = MAX_REFERENCE_SECONDS, max_bytes: Optional[int] = None,
                    what: str = "audio file") -> tuple[np.ndarray, int]:
    """Read an audio file (WAV, FLAC, OGG, MP3, ... what libsndfile reads) -> (float32 ``[C, N]``, rate).

    Like the reference's ``load_waveform`` without its librosa fallback (so no
    M4A/AAC), and bounded: the file's size (``max_bytes``), then its header
    (sample rate in the supported range, at most ``max_seconds``, at most
    ``SAMPLES_PER_LIMIT_SECOND * max_seconds`` samples over all channels) are
    checked before anything is decoded, and at most that many frames are
    decoded (a header may lie).  Raises ``InvalidInput`` naming the file's
    base name (never a server folder) when it is missing, unreadable, empty or
    over a limit.
    """
    import soundfile as sf

    name = os.fspath(path)
    shown = os.path.basename(name) or name
    if not os.path.isfile(name):
        raise InvalidInput(f"Audio file {excerpt(shown)} does not exist.")
    if max_bytes is not None and os.path.getsize(name) > max_bytes:
        raise ResourceLimitExceeded(f"The {what} {excerpt(shown)} is {os.path.getsize(name) / 2**20:.1f} MB; the limit is "
                           f"{max_bytes / 2**20:.0f} MB. Upload a shorter clip.", param="max_upload_bytes")
    try:
        info = sf.info(name)
    except Exception as err:  # soundfile raises LibsndfileError, RuntimeError, TypeError...
        raise InvalidInput(f"Cannot read audio file {excerpt(shown)} ({_short(err)}). Use a WAV, FLAC, OGG or MP3 file.") from err
    rate = check_sample_rate(info.samplerate, f"{what} {excerpt(shown)}")
    if info.channels < 1:
        raise InvalidInput(f"Audio file {excerpt(shown)} has no channels.")
    max_frames = int(max_seconds * rate)
    if info.frames > max_frames:
        raise ResourceLimitExceeded(f"The {what} {excerpt(shown)} is {info.frames / rate:.1f} s long; the limit is {max_seconds:g} s. "
                           "Trim it (3-10 s of clear speech is best for a reference).", param="max_reference_seconds")
    max_samples = int(SAMPLES_PER_LIMIT_SECOND * max_seconds)
    if max(info.frames, 1) * info.channels > max_samples:
        raise InvalidInput(f"The {what} {excerpt(shown)} has {info.channels} channels at {rate} Hz: too much data for "
                           f"{info.frames / rate:.1f} s. Convert it to mono or stereo at 48000 Hz or less.")
    try:
        data, sr = sf.read(name, frames=min(max_frames, max_samples // info.channels) + 1, dtype="float32",
                           always_2d=True)
    except Exception as err:
        raise InvalidInput(f"Cannot read audio file {excerpt(shown)} ({_short(err)}). Use a WAV, FLAC, OGG or MP3 file.") from err
    if data.shape[0] == 0:
        raise InvalidInput(f"Audio file {excerpt(shown)} contains no samples.")
    if data.shape[0] > max_frames:  # the header under-stated the length
        raise ResourceLimitExceeded(f"The {what} {excerpt(shown)} is longer than the limit of {max_seconds:g} s; trim it.",
                           param="max_reference_seconds")
    return np.ascontiguousarray(data.T), int(sr)


def _short(err: BaseException) -> str:
    """An error of a decoding library in one short line, without the file's full path."""
    return " ".join(str(err).split())[:160]


#: the loudest floating-point sample accepted (a float WAV is -1..1; some headroom for clipped exports)
MAX_FLOAT_PEAK = 100.0


def audio_bytes(audio: np.ndarray, sample_rate: int = SAMPLE_RATE, format: str = "WAV") -> bytes:
    """``audio`` as a 16-bit ``format`` file (``WAV``, ``FLAC``), in memory."""
    import soundfile as sf

    buffer = io.BytesIO()
    sf.write(buffer, np.asarray(audio, dtype=np.float32), sample_rate, format=format, subtype="PCM_16")
    return buffer.getvalue()


def save_audio(path, audio: np.ndarray, sample_rate: int = SAMPLE_RATE, format: str = "WAV") -> pathlib.Path:
    """``audio_bytes`` into ``path``, whole or not at all (``write_atomically``): a full or unwritable folder is
    an ``InvalidInput`` that says so, and leaves no partial file."""
    return write_atomically(path, audio_bytes(audio, sample_rate, format), "audio file")


def as_float_audio(audio, what: str) -> np.ndarray:
    """An array of samples as float32 ``[C, N]`` (integer PCM scaled to [-1, 1]); ``InvalidInput`` names the fault."""
    array = np.asarray(audio)
    if array.size == 0:
        raise InvalidInput(f"The {what} has no samples.")
    if np.issubdtype(array.dtype, np.integer):
        # integer PCM (as from a microphone): scale to [-1, 1]
        array = array.astype(np.float32) / float(np.iinfo(array.dtype).max + 1)
    elif not np.issubdtype(array.dtype, np.floating):
        raise InvalidInput(f"The {what} must be numbers, got {array.dtype}.")
    array = array.astype(np.float32, copy=False)
    if array.ndim == 1:
        array = array[np.newaxis, :]
    if array.ndim != 2:
        raise InvalidInput(f"The {what} must be [samples] or [channels, samples], got shape {array.shape}.")
    if not np.isfinite(array).all():
        raise InvalidInput(f"The {what} contains NaN or infinite samples (a corrupt file?); export it again.")
    peak = float(np.abs(array).max())
    if peak > MAX_FLOAT_PEAK:  # its loudness would overflow (rms inf): not audio scaled to [-1, 1]
        raise InvalidInput(f"The {what} has samples up to {peak:.3g}; audio in floating point runs from -1 to 1 "
                           f"(at most {MAX_FLOAT_PEAK:g} is accepted). Export it again, normalised.")
    return array
