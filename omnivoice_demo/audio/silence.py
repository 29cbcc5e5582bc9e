"""Silence removal as the reference does it (``omnivoice/utils/audio.py``, through pydub, exactly), and where
each sample it keeps came from.

``remove_silence`` shortens inner silences and trims the edges; ``trim_long_audio`` cuts a long clip at a
pause; ``remove_silence_positions`` replays ``remove_silence``'s cuts on an index track so that chunk and word
times can be carried through them (``map_through_positions``).  Arrays are float32 ``[channels, samples]``;
pydub works on 16-bit ``AudioSegment``s (``numpy_to_audiosegment`` and back).
"""

from __future__ import annotations

import warnings

import numpy as np


def _pydub():
    """``pydub`` (imported late, without its warning that ffmpeg is missing: we never need ffmpeg)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        import pydub
        import pydub.silence  # noqa: F401
    return pydub


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
