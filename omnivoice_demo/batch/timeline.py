"""Where each chunk of a generation lies in its final audio (after cross-fade and post-processing).

The engine joins the chunks' decoded audio (``audio.cross_fade_chunks``: a
short silence between chunks), then post-processes it
(``audio.postprocess_audio``: pydub removes long silences and trims the
edges, then fade and padding).  Silence removal drops stretches of samples,
so the chunk boundaries move.  ``audio.processing.remove_silence_positions``
(the one replay of pydub's cuts, exact to the sample; word times use it too)
gives, for every sample of the final audio, the sample of the joined audio it
came from; a test checks that the replay gives the engine's audio sample for
sample.
"""

from __future__ import annotations

import logging

import numpy as np

from ..audio import processing as audio_ops
from ..audio.processing import remove_silence_positions
from ..constants import SAMPLE_RATE

#: what ``audio.postprocess_audio`` passes to ``remove_silence``
POSTPROCESS_SILENCE = dict(mid_sil=500, lead_sil=100, trail_sil=100)

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


def seconds(spans: list[tuple[int, int]], sample_rate: int = SAMPLE_RATE) -> list[tuple[float, float]]:
    return [(start / sample_rate, end / sample_rate) for start, end in spans]
