"""The reference's audio steps around the model: the voice-clone reference prepared for the codec, the
decoded output post-processed, chunk audios joined.

Ports of the audio steps of ``OmniVoice.create_voice_clone_prompt`` and ``OmniVoice._post_process_audio``,
and of ``omnivoice/utils/audio.py``'s fades, padding and chunk joining.  Arrays are float32
``[channels, samples]``.  The silence removal they use is ``silence``'s; reading and writing files, ``files``'
(both re-exported here, where callers have always found them).

``prepare_reference`` also validates the clip, raising ``ValueError`` with the
problem and the fix (the reference accepts anything and fails later, or
silently, on NaN, silence, or clips too short or too long).
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from ..constants import HOP_LENGTH, SAMPLE_RATE
from ..errors import InvalidInput, ResourceLimitExceeded
from .files import (MAX_FLOAT_PEAK, MAX_REFERENCE_SECONDS, MAX_SAMPLE_RATE, MIN_SAMPLE_RATE,  # noqa: F401
                    SAMPLES_PER_LIMIT_SECOND, as_float_audio, audio_bytes, check_sample_rate, load_audio_file,
                    save_audio)
from .silence import (SEEK_STEP_MS, SILENCE_THRESHOLD_DB, audiosegment_to_numpy, map_through_positions,  # noqa: F401
                      numpy_to_audiosegment, remove_silence, remove_silence_edges, remove_silence_positions,
                      trim_long_audio)

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


#: The shortest reference accepted after cleaning (seconds); the longest input is ``files.MAX_REFERENCE_SECONDS``.
MIN_REFERENCE_SECONDS = 0.5
#: Below this RMS (-80 dBFS) a reference counts as silent.
SILENT_RMS = 1e-4


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
