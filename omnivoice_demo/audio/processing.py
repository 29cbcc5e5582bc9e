"""Audio in and out: loading, the voice-clone reference, post-processing.

Ports of ``omnivoice/utils/audio.py`` (silence removal through pydub, exactly
as the reference does it, fades, padding, chunk joining) and of the audio
steps of ``OmniVoice.create_voice_clone_prompt`` and
``OmniVoice._post_process_audio``.  Arrays are float32 ``[channels, samples]``.

``prepare_reference`` also validates the clip, raising ``ValueError`` with the
problem and the fix (the reference accepts anything and fails later, or
silently, on NaN, silence, or clips too short or too long).
"""

from __future__ import annotations

import io
import os
import pathlib
import warnings
from typing import Optional

import numpy as np

from ..constants import HOP_LENGTH, SAMPLE_RATE
from ..errors import InvalidInput, ResourceLimitExceeded, excerpt
from ..storage.atomic import write_atomically

__all__ = [
    "audio_bytes",
    "save_audio",
    "HOP_LENGTH",
    "MAX_REFERENCE_SECONDS",
    "MIN_REFERENCE_SECONDS",
    "SAMPLE_RATE",
    "as_float_audio",
    "audiosegment_to_numpy",
    "check_sample_rate",
    "cross_fade_chunks",
    "fade_and_pad_audio",
    "frame_power",
    "load_audio_file",
    "numpy_to_audiosegment",
    "postprocess_audio",
    "prepare_reference",
    "remove_silence",
    "remove_silence_edges",
    "remove_silence_positions",
    "map_through_positions",
    "to_mono",
    "trim_long_audio",
]


#: Accepted reference lengths (seconds): the input at most (``Limits.max_reference_seconds``, public
#: default), the cleaned clip at least.
MAX_REFERENCE_SECONDS = 60.0
MIN_REFERENCE_SECONDS = 0.5
#: Sample rates read from files and accepted with arrays (Hz): telephone speech up to studio masters.
MIN_SAMPLE_RATE = 4000
MAX_SAMPLE_RATE = 192000
#: A decoded file holds at most this many samples (all channels) per second of the limit:
#: 48 kHz stereo; a 96 kHz stereo file may be half as long.
SAMPLES_PER_LIMIT_SECOND = 48000 * 2
#: Below this RMS (-80 dBFS) a reference counts as silent.
SILENT_RMS = 1e-4


def _pydub():
    """``pydub`` (imported late, without its warning that ffmpeg is missing: we never need ffmpeg)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        import pydub
        import pydub.silence  # noqa: F401
    return pydub


# ---------------------------------------------------------------------------
# Loading
# ---------------------------------------------------------------------------


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


def to_mono(audio: np.ndarray) -> np.ndarray:
    """``[C, N]`` -> ``[1, N]`` by averaging the channels (``[N]`` becomes ``[1, N]``)."""
    audio = np.asarray(audio)
    if audio.ndim == 1:
        audio = audio[np.newaxis, :]
    if audio.shape[0] > 1:
        audio = np.mean(audio, axis=0, keepdims=True)
    return audio


def frame_power(samples: np.ndarray, hop: int) -> np.ndarray:
    """The mean square of each whole frame of ``hop`` samples of ``samples`` (``[N]``; a partial last frame is
    left out; in ``samples``' own dtype): the energy the pause searches and the sentence check read."""
    usable = samples.shape[0] // hop * hop
    return (samples[:usable].reshape(-1, hop) ** 2).mean(axis=1)


# ---------------------------------------------------------------------------
# Silence removal and friends (omnivoice/utils/audio.py)
# ---------------------------------------------------------------------------


def numpy_to_audiosegment(audio: np.ndarray, sample_rate: int):
    """float32 ``[C, N]`` -> 16-bit pydub ``AudioSegment``."""
    AudioSegment = _pydub().AudioSegment
    audio_int = (audio * 32768.0).clip(-32768, 32767).astype(np.int16)
    if audio_int.shape[0] > 1:
        audio_int = audio_int.T.flatten()  # interleave channels
    return AudioSegment(data=audio_int.tobytes(), sample_width=2, frame_rate=sample_rate, channels=audio.shape[0])


def audiosegment_to_numpy(aseg) -> np.ndarray:
    """pydub ``AudioSegment`` -> float32 ``[C, N]``."""
    data = np.array(aseg.get_array_of_samples()).astype(np.float32) / 32768.0
    if aseg.channels == 1:
        return data[np.newaxis, :]
    return data.reshape(-1, aseg.channels).T


def remove_silence_edges(audio, lead_sil: int = 100, trail_sil: int = 300, silence_threshold: float = -50):
    """Trim leading/trailing silence of an ``AudioSegment``, keeping ``lead_sil``/``trail_sil`` ms."""
    detect_leading_silence = _pydub().silence.detect_leading_silence
    start = detect_leading_silence(audio, silence_threshold=silence_threshold)
    audio = audio[max(0, start - lead_sil) :]
    audio = audio.reverse()
    start = detect_leading_silence(audio, silence_threshold=silence_threshold)
    audio = audio[max(0, start - trail_sil) :]
    return audio.reverse()


#: ``remove_silence``'s silence: below this level (dBFS) of the 16-bit signal, searched in steps of this many ms
SILENCE_THRESHOLD_DB = -50
SEEK_STEP_MS = 10


def remove_silence(
    audio: np.ndarray, sampling_rate: int, mid_sil: int = 300, lead_sil: int = 100, trail_sil: int = 300
) -> np.ndarray:
    """Shorten inner silences longer than ``mid_sil`` ms and trim the edges (reference: ``remove_silence``).

    Silence is below -50 dBFS on the 16-bit signal, searched in 10 ms steps
    by pydub's ``split_on_silence``; each kept piece keeps up to ``mid_sil``
    ms of silence on each side; then ``lead_sil``/``trail_sil`` ms are kept
    at the edges.
    """
    pydub = _pydub()
    wave = numpy_to_audiosegment(audio, sampling_rate)
    if mid_sil > 0:
        pieces = pydub.silence.split_on_silence(
            wave, min_silence_len=mid_sil, silence_thresh=-50, keep_silence=mid_sil, seek_step=10
        )
        wave = pydub.AudioSegment.silent(duration=0)
        for piece in pieces:
            wave += piece
    wave = remove_silence_edges(wave, lead_sil, trail_sil, -50)
    return audiosegment_to_numpy(wave)


def trim_long_audio(
    audio: np.ndarray,
    sampling_rate: int,
    max_duration: float = 15.0,
    min_duration: float = 3.0,
    trim_threshold: float = 20.0,
) -> np.ndarray:
    """Cut audio longer than ``trim_threshold`` s at a pause (reference: ``trim_long_audio``).

    The cut is at the start of the last speech segment (-40 dBFS, 100 ms
    pauses) that begins before ``max_duration``; when that is before
    ``min_duration``, at ``max_duration``.
    """
    duration = audio.shape[-1] / sampling_rate
    if duration <= trim_threshold:
        return audio
    seg = numpy_to_audiosegment(audio, sampling_rate)
    nonsilent = _pydub().silence.detect_nonsilent(seg, min_silence_len=100, silence_thresh=-40, seek_step=10)
    if not nonsilent:
        return audio
    max_ms = int(max_duration * 1000)
    min_ms = int(min_duration * 1000)
    best_split = 0
    for start, end in nonsilent:
        if start > best_split and start <= max_ms:
            best_split = start
        if end > max_ms:
            break
    if best_split < min_ms:
        best_split = min(max_ms, len(seg))
    return audiosegment_to_numpy(seg[:best_split])


def fade_and_pad_audio(
    audio: np.ndarray, pad_duration: float = 0.1, fade_duration: float = 0.1, sample_rate: int = SAMPLE_RATE
) -> np.ndarray:
    """Linear fade in/out of ``fade_duration`` s, then ``pad_duration`` s of silence on each side."""
    if audio.shape[-1] == 0:
        return audio
    fade_samples = int(fade_duration * sample_rate)
    pad_samples = int(pad_duration * sample_rate)
    processed = audio.copy()
    if fade_samples > 0:
        k = min(fade_samples, processed.shape[-1] // 2)
        if k > 0:
            processed[..., :k] *= np.linspace(0, 1, k, dtype=np.float32)[np.newaxis, :]
            processed[..., -k:] *= np.linspace(1, 0, k, dtype=np.float32)[np.newaxis, :]
    if pad_samples > 0:
        silence = np.zeros((processed.shape[0], pad_samples), dtype=processed.dtype)
        processed = np.concatenate([silence, processed, silence], axis=-1)
    return processed


def cross_fade_chunks(chunks: list[np.ndarray], sample_rate: int = SAMPLE_RATE, silence_duration: float = 0.3) -> np.ndarray:
    """Join chunk audios: fade out, silence, fade in, each a third of ``silence_duration``.

    Reference: ``cross_fade_chunks`` (0.1 s + 0.1 s + 0.1 s at the default).
    """
    if len(chunks) == 1:
        return chunks[0]
    fade_n = int(silence_duration * sample_rate) // 3
    silence_n = fade_n
    merged = chunks[0].copy()
    for chunk in chunks[1:]:
        fout_n = min(fade_n, merged.shape[-1])
        if fout_n > 0:
            merged[..., -fout_n:] *= np.linspace(1, 0, fout_n, dtype=np.float32)[np.newaxis, :]
        fade_in = chunk.copy()
        fin_n = min(fade_n, fade_in.shape[-1])
        if fin_n > 0:
            fade_in[..., :fin_n] *= np.linspace(0, 1, fin_n, dtype=np.float32)[np.newaxis, :]
        silence = np.zeros((chunks[0].shape[0], silence_n), dtype=np.float32)
        merged = np.concatenate([merged, silence, fade_in], axis=-1)
    return merged


def cross_fade_starts(lengths: list[int], sample_rate: int = SAMPLE_RATE, silence_duration: float = 0.3) -> list[int]:
    """Where each of ``cross_fade_chunks``'s pieces (of ``lengths`` samples) starts in the joined audio."""
    gap = int(silence_duration * sample_rate) // 3 if len(lengths) > 1 else 0
    return [int(start) for start in np.cumsum([0] + [n + gap for n in lengths[:-1]])]


# ---------------------------------------------------------------------------
# OmniVoice steps
# ---------------------------------------------------------------------------


def prepare_reference(
    audio: np.ndarray,
    sample_rate: int,
    transcript_given: bool,
    *,
    preprocess: bool = True,
    max_seconds: float = MAX_REFERENCE_SECONDS,
) -> tuple[np.ndarray, float]:
    """A voice-clone reference clip, ready for the codec: ``(wav_24k [1, N], rms)``.

    Mirrors the audio steps of ``OmniVoice.create_voice_clone_prompt``:
    channels averaged; resampled to 24 kHz (``omnivoice_demo.audio.resample``, a
    port of ``torchaudio.functional.resample``); ``rms`` measured; a clip with
    ``rms < 0.1`` scaled up to RMS 0.1; with ``preprocess`` (the reference's
    ``preprocess_prompt``): cut near 15 s when longer than 20 s and no
    transcript is given (so a transcript stays aligned), silences shortened
    (inner > 200 ms, 100 ms kept before, 200 ms after); finally cut to a
    multiple of 960 samples.  ``rms`` is that of the resampled input, before
    any change: the output's loudness follows it (``postprocess_audio``).

    ``audio`` is ``[C, N]`` (channels first) or ``[N]``.  Raises
    ``InvalidInput`` for: a sample rate outside the supported range, no
    samples, NaN/inf samples, more than ``max_seconds``, a silent clip,
    nothing left after silence removal, less than 0.5 s left.
    """
    sample_rate = check_sample_rate(sample_rate, "reference audio")
    wav = np.asarray(audio)
    if wav.ndim == 1:
        wav = wav[np.newaxis, :]
    if wav.ndim != 2:
        raise InvalidInput(f"The reference audio must be [channels, samples] or [samples], got shape {wav.shape}.")
    if wav.shape[0] > 16 and wav.shape[1] <= 16:
        raise InvalidInput(
            f"The reference audio has shape {wav.shape}: that looks like [samples, channels]; "
            "pass it channels first ([channels, samples])."
        )
    if wav.shape[-1] == 0:
        raise InvalidInput("The reference audio has no samples; record or upload a clip of 3-10 s of speech.")
    if not np.issubdtype(wav.dtype, np.floating):
        raise InvalidInput(f"The reference audio must be floating point in [-1, 1], got {wav.dtype}.")
    wav = wav.astype(np.float32, copy=False)
    if not np.isfinite(wav).all():
        raise InvalidInput(
            "The reference audio contains NaN or infinite samples (a corrupt file?); "
            "re-export it as WAV or FLAC and try again."
        )
    seconds = wav.shape[-1] / sample_rate
    if seconds > max_seconds:
        raise ResourceLimitExceeded(
            f"The reference audio is {seconds:.1f} s long; the limit is {max_seconds:g} s. "
            "Trim it to 3-10 s of clear speech.", param="max_reference_seconds"
        )

    wav = to_mono(wav)
    if sample_rate != SAMPLE_RATE:
        from .resample import resample  # another module of this package, imported when needed

        wav = resample(wav, sample_rate, SAMPLE_RATE)

    rms = float(np.sqrt(np.mean(wav**2)))
    if rms < SILENT_RMS:
        raise InvalidInput(
            f"The reference audio is silent (RMS {rms:.1e}); check the recording or the file and "
            "upload a clip where the speaker is audible."
        )
    if 0 < rms < 0.1:
        wav = wav * 0.1 / rms

    if preprocess:
        if not transcript_given:
            wav = trim_long_audio(wav, SAMPLE_RATE, trim_threshold=20.0)
        wav = remove_silence(wav, SAMPLE_RATE, mid_sil=200, lead_sil=100, trail_sil=200)
        if wav.shape[-1] == 0:
            raise InvalidInput(
                "The reference audio is empty after silence removal (it is all below -50 dBFS); "
                "upload a louder clip of speech, or turn off reference preprocessing."
            )

    clip = wav.shape[-1] % HOP_LENGTH
    if clip > 0:
        wav = wav[:, :-clip]
    seconds = wav.shape[-1] / SAMPLE_RATE
    if seconds < MIN_REFERENCE_SECONDS:
        raise InvalidInput(
            f"The reference audio has only {seconds:.2f} s of sound"
            + (" after silence removal" if preprocess else "")
            + f"; it needs at least {MIN_REFERENCE_SECONDS} s (3-10 s of speech works best)."
        )
    return wav, rms


def postprocess_audio(
    audio: np.ndarray,
    ref_rms: Optional[float],
    postprocess: bool = True,
    pad_duration: float = 0.1,
    fade_duration: float = 0.1,
    sample_rate: int = SAMPLE_RATE,
) -> np.ndarray:
    """The decoded waveform -> the output (reference: ``OmniVoice._post_process_audio``).

    ``audio``: float32 ``[1, N]``.  With ``postprocess`` (``postprocess_output``),
    inner silences over 500 ms are shortened and the edges trimmed to 100 ms.
    Loudness: with a reference quieter than RMS 0.1 the audio is scaled by
    ``ref_rms / 0.1`` (the reference was scaled up by the inverse); without a
    reference (``ref_rms is None``) it is peak-normalised to 0.5.  Then
    ``fade_and_pad_audio``.  Returns ``[1, N']``; audio that was all silence
    comes back empty (where the reference raises on the empty array).
    """
    if postprocess:
        audio = remove_silence(audio, sample_rate, mid_sil=500, lead_sil=100, trail_sil=100)
    if ref_rms is not None and ref_rms < 0.1:
        audio = audio * ref_rms / 0.1
    elif ref_rms is None and audio.size > 0:  # the reference fails on empty (all-silent) audio
        peak = np.abs(audio).max()
        if peak > 1e-6:
            audio = audio / peak * 0.5
    return fade_and_pad_audio(audio, pad_duration=pad_duration, fade_duration=fade_duration, sample_rate=sample_rate)


def remove_silence_positions(audio: np.ndarray, sample_rate: int, mid_sil: int = 300, lead_sil: int = 100,
                             trail_sil: int = 300) -> tuple[np.ndarray, np.ndarray]:
    """``remove_silence``, also returning for each output sample the input sample it is (-1 for filler).

    Returns ``(positions int64 [M], audio float32 [1, M])``, the audio exactly what ``remove_silence`` gives.
    The one replay of pydub's cuts (chunk times in batch, word times): the same pydub steps run on an index
    track (an int32 ``AudioSegment`` whose sample ``k`` holds ``k + 1``) cut at the places the audio is cut,
    so it holds where every output sample came from, exact to the sample.  pydub's length in ms is rounded:
    a cut that ends at the audio's end can ask for up to half a ms past its last sample, which pydub fills
    with silence; those filler samples are -1.  ``split_on_silence`` returns only the pieces, not where they
    were, so its lines that compute the ranges are repeated here (``_split_ranges``)."""
    pydub = _pydub()
    wave = numpy_to_audiosegment(audio, sample_rate)
    track = pydub.AudioSegment(data=np.arange(1, audio.shape[-1] + 1, dtype=np.int32).tobytes(), sample_width=4,
                               frame_rate=sample_rate, channels=1)
    if mid_sil > 0:
        ranges = _split_ranges(wave, mid_sil, mid_sil)
        wave = _join(wave, [wave[max(s, 0):min(e, len(wave))] for s, e in ranges])
        track = _join(track, [track[max(s, 0):min(e, len(track))] for s, e in ranges])
    detect = pydub.silence.detect_leading_silence
    start = detect(wave, silence_threshold=SILENCE_THRESHOLD_DB)
    wave, track = wave[max(0, start - lead_sil):].reverse(), track[max(0, start - lead_sil):].reverse()
    start = detect(wave, silence_threshold=SILENCE_THRESHOLD_DB)
    wave, track = wave[max(0, start - trail_sil):].reverse(), track[max(0, start - trail_sil):].reverse()
    positions = np.frombuffer(track.raw_data, dtype=np.int32).astype(np.int64) - 1
    return positions, audiosegment_to_numpy(wave)


def _split_ranges(wave, min_silence_len: int, keep_silence: int) -> list[list[int]]:
    """The ranges (ms) ``pydub.silence.split_on_silence`` cuts out, as ``remove_silence`` calls it."""
    from pydub.silence import detect_nonsilent

    ranges = [[start - keep_silence, end + keep_silence]
              for start, end in detect_nonsilent(wave, min_silence_len, SILENCE_THRESHOLD_DB, SEEK_STEP_MS)]
    for before, after in zip(ranges, ranges[1:]):
        if after[0] < before[1]:
            before[1] = (before[1] + after[0]) // 2
            after[0] = before[1]
    return ranges


def _join(like, pieces: list) -> "object":
    """Pieces of one segment end to end (what ``AudioSegment`` ``+`` does without a cross-fade)."""
    return like._spawn(b"".join(piece.raw_data for piece in pieces))


def map_through_positions(seconds, positions: np.ndarray, sampling_rate: int) -> np.ndarray:
    """Times in an input (seconds) -> the same moments in ``remove_silence``'s output, through its
    ``positions`` (``remove_silence_positions``): a time at an input sample goes to where that sample is in the
    output; a time in a removed stretch to where the next kept sample is; filler samples (-1) count as their
    left neighbour."""
    samples = np.asarray(seconds, dtype=np.float64) * sampling_rate
    if positions.size == 0:
        return np.zeros_like(samples)
    kept = np.maximum.accumulate(positions)
    return np.searchsorted(kept, samples, side="left").astype(np.float64) / sampling_rate
