"""Word times of a generation (``GenerationConfig.word_timestamps``): each chunk aligned with its own text.

OmniVoice decodes every frame at once and predicts no durations, so the words' times come from aligning
the audio with the text it was made from (``asr.SpeechRecognizer.align``: Whisper's cross-attention at its
alignment heads).  Each chunk (a sentence of sentence streaming, a chunk of a long text) is aligned with
its own text and its own decoded audio, as soon as it is decoded; its words then move to where that audio
ends up:

* in the stream (``ChunkEvent.words``): times from the start of the chunk's own decoded audio; played as
  playback pieces one after another (``streaming.playback_piece``: the reference's cross-fade join), chunk
  ``i`` starts where ``stream_offsets`` says; sent post-processed on its own (``studio.stream_audio``), its
  words are where ``place_words([words], [audio], ...)`` puts them;
* in the result (``GenerationResult.words``): the final audio, after the cross-fade, the post-processing's
  silence removal (``audio.processing.remove_silence_positions``: where each kept sample came from, exact to
  the sample) and its padding.

A sentence made again (Again/Restore, a guard retake) brings its own words: the words are kept per chunk
(``GenerationResult.chunk_words``, times from the chunk's own start) and placed again with the new audio.
"""

from __future__ import annotations

import dataclasses
from typing import Optional, Sequence

import numpy as np

from ..asr.alignment import WordTiming
from ..audio import processing as audio_ops
from ..constants import SAMPLE_RATE


def recogniser_language(recognizer, language: Optional[str]) -> Optional[str]:
    """The plan's language when the recogniser knows it (Whisper's codes), else None: detected."""
    if not language:
        return None
    get = getattr(recognizer, "get", None)
    known = getattr(get() if get else recognizer, "lang_to_id", {})
    return language if f"<|{language}|>" in known else None


def chunk_words(recognizer, audio: np.ndarray, text: str, language: Optional[str]) -> list[WordTiming]:
    """The words of one chunk's ``text`` in its decoded ``audio`` (24 kHz), times from the chunk's start."""
    return recognizer.align(np.asarray(audio, dtype=np.float32), SAMPLE_RATE, text,
                            language=recogniser_language(recognizer, language))


def shifted(words: Sequence[WordTiming], seconds: float, speaker: Optional[str] = None) -> list[WordTiming]:
    return [word.shifted(seconds, speaker) for word in words]


def stream_offsets(chunk_audio: Sequence[np.ndarray]) -> list[float]:
    """Where each chunk starts (s) in its playback pieces played end to end (the cross-fade join's layout)."""
    return [start / SAMPLE_RATE for start in audio_ops.cross_fade_starts([len(a) for a in chunk_audio], SAMPLE_RATE)]


def place_words(chunk_words_list: Sequence[Sequence[WordTiming]], chunk_audio: Sequence[np.ndarray], config,
                final_length: int) -> list[WordTiming]:
    """The words of every chunk on the final audio's time line (``loop.join_chunks``: cross-fade, then the
    post-processing's silence removal and padding); times are clipped into the audio's ``final_length``."""
    offsets = stream_offsets(chunk_audio)
    joined = [word for words, offset in zip(chunk_words_list, offsets) for word in shifted(words, offset)]
    if not joined:
        return []
    times = np.array([[w.start, w.end] for w in joined], dtype=np.float64)
    if config.postprocess:
        mixed = audio_ops.cross_fade_chunks([np.asarray(a, dtype=np.float32)[np.newaxis] for a in chunk_audio],
                                            SAMPLE_RATE)
        positions, _ = audio_ops.remove_silence_positions(mixed, SAMPLE_RATE, mid_sil=500, lead_sil=100,
                                                          trail_sil=100)
        times = audio_ops.map_through_positions(times, positions, SAMPLE_RATE)
    limit = final_length / SAMPLE_RATE
    times = np.clip(times + config.pad_duration, 0.0, limit)
    return [dataclasses.replace(word, start=round(float(a), 3), end=round(float(max(a, b)), 3))
            for word, (a, b) in zip(joined, times)]
