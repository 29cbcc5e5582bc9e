"""Where each chunk of a generation lies in its final audio (after cross-fade and post-processing).

The engine joins the chunks' decoded audio (``audio.cross_fade_chunks``: a
short silence between chunks), then post-processes it
(``audio.postprocess_audio``: pydub removes long silences and trims the
edges, then fade and padding).  Silence removal drops stretches of samples,
so the chunk boundaries move.  This module replays the same pydub steps on
an index track (an int32 ``AudioSegment`` whose sample ``k`` holds ``k + 1``)
cut at exactly the places the audio is cut, which gives, for every sample of
the final audio, the sample of the joined audio it came from.  pydub's
``split_on_silence`` only returns the pieces, not where they were, so its
ten lines that compute the ranges are repeated here (``_split_ranges``); a
test checks that the replay gives the engine's audio sample for sample.
"""

from __future__ import annotations

import logging

import numpy as np

from ..audio import processing as audio_ops
from ..constants import SAMPLE_RATE

#: what ``audio.postprocess_audio`` passes to ``remove_silence``
POSTPROCESS_SILENCE = dict(mid_sil=500, lead_sil=100, trail_sil=100)
SILENCE_THRESHOLD_DB = -50
SEEK_STEP_MS = 10

log = logging.getLogger("omnivoice.batch")


def chunk_spans(chunk_audio: list[np.ndarray], final_samples: int, *, postprocess: bool, pad_duration: float,
                sample_rate: int = SAMPLE_RATE) -> list[tuple[int, int]]:
    """``[(start, end), ...]`` in samples of the final audio, one per chunk (``end`` exclusive).

    ``chunk_audio`` are the chunks' raw decoded audio (``ChunkEvent.audio``),
    ``final_samples`` the length of ``GenerationResult.audio``.  A chunk that
    post-processing removed entirely (all silence) gets an empty span.
    """
    lengths = [int(np.asarray(a).shape[-1]) for a in chunk_audio]
    joined = audio_ops.cross_fade_chunks([np.asarray(a, dtype=np.float32).reshape(1, -1) for a in chunk_audio],
                                         sample_rate)
    starts = audio_ops.cross_fade_starts(lengths, sample_rate)
    if postprocess:
        source, _ = remove_silence_positions(joined, sample_rate, **POSTPROCESS_SILENCE)
    else:
        source = np.arange(joined.shape[-1])
    pad = int(pad_duration * sample_rate) if source.size else 0
    if source.size + 2 * pad != final_samples:  # the engine's post-processing changed: scale (approximate)
        log.warning("chunk times are approximate: %d kept samples + padding != %d", source.size, final_samples)
        scale = final_samples / max(joined.shape[-1], 1)
        return [(round(s * scale), round((s + n) * scale)) for s, n in zip(starts, lengths)]
    source = np.maximum.accumulate(source)  # filler samples (-1) take their left neighbour's place
    spans = []
    for start, length in zip(starts, lengths):
        first = int(np.searchsorted(source, start, side="left"))
        last = int(np.searchsorted(source, start + length, side="left"))
        spans.append((pad + first, pad + last))
    return spans


def remove_silence_positions(audio: np.ndarray, sample_rate: int, mid_sil: int, lead_sil: int,
                             trail_sil: int) -> tuple[np.ndarray, np.ndarray]:
    """``audio.remove_silence``, also returning for each output sample its input sample (-1 for filler).

    Returns ``(positions int64 [M], audio float32 [1, M])``; the audio is the
    same as ``remove_silence(audio, ...)`` gives.
    """
    pydub = audio_ops._pydub()
    wave = audio_ops.numpy_to_audiosegment(audio, sample_rate)
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
    return positions, audio_ops.audiosegment_to_numpy(wave)


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


def seconds(spans: list[tuple[int, int]], sample_rate: int = SAMPLE_RATE) -> list[tuple[float, float]]:
    return [(start / sample_rate, end / sample_rate) for start, end in spans]
