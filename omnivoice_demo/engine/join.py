"""The output of a generation from its chunks' decoded audio (the reference's ``_decode_and_post_process``)."""

from __future__ import annotations

from typing import Optional

import numpy as np

from ..audio import processing as audio_ops
from ..audio.loudness import normalise_loudness
from ..constants import SAMPLE_RATE
from ..settings.generation import GenerationConfig


def join_chunks(chunk_audio: list[np.ndarray], ref_rms: Optional[float], config: GenerationConfig) -> np.ndarray:
    """The output of a generation from its chunks' decoded audio (``_decode_and_post_process``): the chunks
    cross-faded (``cross_fade_chunks``), post-processed at the voice's loudness (``ref_rms``; None without a
    voice), then brought to the delivery loudness when ``config.loudness`` asks.  float32 ``[N]``.

    What every generation ends with, and what a result with one sentence made again is joined with."""
    joined = audio_ops.cross_fade_chunks([np.asarray(a, dtype=np.float32)[np.newaxis, :] for a in chunk_audio],
                                         SAMPLE_RATE)
    final = audio_ops.postprocess_audio(joined, ref_rms, postprocess=config.postprocess,
                                        pad_duration=config.pad_duration, fade_duration=config.fade_duration,
                                        sample_rate=SAMPLE_RATE)
    if config.loudness is not None:  # delivery loudness, off by default (the exact output)
        final = normalise_loudness(final[0], SAMPLE_RATE, config.loudness)[0][np.newaxis]
    return np.ascontiguousarray(final[0], dtype=np.float32)


