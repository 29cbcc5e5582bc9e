"""What a streaming front end sends for each decoded chunk, the same in the HTTP API and the Wyoming server.

* ``chunk_output``: one chunk post-processed on its own (silences, loudness, fade and pad of the
  reference's ``_post_process_audio``); for a one-chunk text this is exactly the whole result's audio.
* ``pcm16``: float audio -> 16-bit little-endian PCM bytes (the HTTP API's ``pcm`` format, Wyoming's audio).
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from ..audio import processing as audio_ops
from ..settings.generation import GenerationConfig
from ..constants import SAMPLE_RATE


def chunk_output(audio: np.ndarray, rms: Optional[float], config: GenerationConfig) -> np.ndarray:
    """One streamed chunk, post-processed on its own; for a one-chunk text exactly the whole result's audio."""
    out = audio_ops.postprocess_audio(np.asarray(audio, dtype=np.float32)[np.newaxis], rms,
                                      postprocess=config.postprocess, pad_duration=config.pad_duration,
                                      fade_duration=config.fade_duration, sample_rate=SAMPLE_RATE)
    return out[0]


def pcm16(audio: np.ndarray) -> bytes:
    """Float audio in [-1, 1] (clipped) as 16-bit little-endian samples."""
    samples = np.clip(np.asarray(audio, dtype=np.float32), -1.0, 1.0)
    return (np.round(samples * 32767.0)).astype("<i2").tobytes()
