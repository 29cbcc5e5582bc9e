"""The best part of a long reference clip: at most ``max_seconds`` with the most speech, cut in pauses.

An explicit choice offered by the Clone tab ("Keep the best 10 s"), on top of the reference's own
automatic cut (``processing.trim_long_audio``, which is left as the reference has it).

How the part is chosen, on 10 ms frames of the clip mixed to mono:

- a frame is *silent* when its RMS is more than ``SILENCE_BELOW_LOUDEST_DB`` under the loudest frame's
  (relative, so a quiet recording is read like a loud one);
- a *pause* is a run of silent frames at least ``MIN_PAUSE_SECONDS`` long; a part may start in it
  ``PAUSE_KEPT_SECONDS`` before the speech that follows it (or at its start when it is shorter), and may
  end in it ``PAUSE_KEPT_SECONDS`` after the speech before it (or at its end);
- the clip's own start and end are cut points too;
- the part is the stretch from a start to an end cut point, at most ``max_seconds`` long, with the most
  speech (non-silent frames); among equals the shortest (least silence), then the earliest;
- fallback, when no such stretch holds ``min_speech_seconds`` of speech (a clip without pauses, or with
  speech runs longer than ``max_seconds``): the first ``max_seconds``, ending at the quietest frame of
  their last second; ``Part.at_pauses`` is then False.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .processing import frame_power, to_mono

__all__ = ["BEST_PART_SECONDS", "Part", "best_part", "best_part_of_long"]

#: the longest reference kept by the Clone tab's "Keep the best 10 s" and by an upload without a transcript
#: (the model's README: 3-10 s of reference works best)
BEST_PART_SECONDS = 10.0

FRAME_SECONDS = 0.01
#: a frame this far under the loudest frame is silent (the reference's pause search uses -40 dBFS)
SILENCE_BELOW_LOUDEST_DB = 40.0
#: the shortest pause cut in (the reference's trim_long_audio looks for pauses of 100 ms)
MIN_PAUSE_SECONDS = 0.1
#: the silence a part keeps at a cut in a pause (the reference keeps 100 ms before speech when it shortens pauses)
PAUSE_KEPT_SECONDS = 0.1
#: the fallback's end is searched for in this last stretch of its ``max_seconds``
FALLBACK_SEARCH_SECONDS = 1.0


@dataclasses.dataclass(frozen=True)
class Part:
    """Samples ``start:end`` of the clip; ``at_pauses``: both cuts lie in pauses or at the clip's ends."""

    start: int
    end: int
    at_pauses: bool
    speech_seconds: float


def best_part(audio: np.ndarray, sample_rate: int, max_seconds: float = 10.0,
              min_speech_seconds: float = 3.0) -> Part:
    """The best part of ``audio`` (``[C, N]`` or ``[N]``) of at most ``max_seconds`` (the module's rule)."""
    mono = to_mono(np.asarray(audio, dtype=np.float32))[0]
    hop = max(1, int(round(sample_rate * FRAME_SECONDS)))
    count = len(mono) // hop
    if count == 0:
        return Part(0, len(mono), True, 0.0)
    level = 10 * np.log10(frame_power(mono, hop) + 1e-20)
    silent = level < level.max() - SILENCE_BELOW_LOUDEST_DB
    speech_before = np.concatenate([[0], np.cumsum(~silent)])  # speech frames before each frame boundary

    def speech(start: int, end: int) -> float:
        return float(speech_before[min(end // hop, count)] - speech_before[min(start // hop, count)]) * FRAME_SECONDS

    if len(mono) <= max_seconds * sample_rate:
        return Part(0, len(mono), True, speech(0, len(mono)))
    longest = int(max_seconds * sample_rate)
    kept = int(round(PAUSE_KEPT_SECONDS / FRAME_SECONDS))
    pauses = _pauses(silent)
    starts = [0] + [max(a, b - kept) * hop for a, b in pauses]
    ends = [min(b, a + kept) * hop for a, b in pauses] + [len(mono)]
    best = None
    for start in starts:
        for end in ends:
            if end <= start:
                continue
            if end - start > longest:
                break
            rank = (speech(start, end), -(end - start))
            if best is None or rank > best[0]:
                best = (rank, start, end)
    if best is not None and best[0][0] >= min_speech_seconds:
        _, start, end = best
        return Part(start, end, True, speech(start, end))
    search = max(0, longest - int(FALLBACK_SEARCH_SECONDS * sample_rate)) // hop
    end = (search + int(np.argmin(level[search:longest // hop]))) * hop + hop // 2
    return Part(0, end, False, speech(0, end))


def _pauses(silent: np.ndarray) -> list[tuple[int, int]]:
    """Frame ranges ``(first, past_last)`` of the runs of silent frames at least ``MIN_PAUSE_SECONDS`` long."""
    edges = np.flatnonzero(np.diff(np.concatenate([[0], silent.astype(np.int8), [0]])))
    runs = zip(edges[::2], edges[1::2])
    shortest = int(round(MIN_PAUSE_SECONDS / FRAME_SECONDS))
    return [(int(a), int(b)) for a, b in runs if b - a >= shortest]


def best_part_of_long(audio: np.ndarray, sample_rate: int, max_seconds: float = BEST_PART_SECONDS):
    """(``audio`` cut to its best part, mono, when longer than ``max_seconds``, else as it is; the ``Part`` kept,
    or None when nothing was cut): what a clip without a transcript is recognised and cloned from, so that
    clip and transcript match and the recogniser hears the speech, not a long clip's first seconds."""
    audio = np.asarray(audio, dtype=np.float32)
    if audio.shape[-1] <= max_seconds * sample_rate:
        return audio, None
    part = best_part(audio, sample_rate, max_seconds)
    return to_mono(audio)[:, part.start:part.end], part
