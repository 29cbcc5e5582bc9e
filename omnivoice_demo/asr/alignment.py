"""Token and word times from Whisper's cross-attention: the NumPy half of forced alignment.

``SpeechRecognizer.align`` runs the decoder over ``prompt + text`` (teacher-forced) and reads the
cross-attention of the alignment heads; this module turns that attention into times, exactly as
``transformers``' ``WhisperForConditionalGeneration._extract_token_timestamps`` does:

1. the heads' attention over the first ``num_frames // 2`` encoder frames (``num_frames`` = the clip's
   16 kHz samples / 160), the rows of the prompt dropped;
2. normalised over tokens (mean 0, standard deviation 1, population), median-filtered along time
   (``median_filter_width``, reflect padding), averaged over heads;
3. dynamic time warping of the negated matrix; a token's time is the encoder frame (20 ms each) where
   the warping path first reaches its row.

Words are grouped from tokens the way Whisper groups them (``transformers``' ``_combine_tokens_into_words``,
which is openai-whisper's ``split_to_word_tokens`` with punctuation merged into its neighbours): at spaces,
and at every whole Unicode character for the languages written without spaces.

The median filter and the warping are written here rather than taken from a library: the runtime has no
torch (``transformers``' versions are torch and a pure-Python double loop, too slow for a sentence of
audio), openai-whisper's are numba, and SciPy is not a runtime dependency.  Both are checked against
``transformers``' own functions in the tests; the warping keeps ``transformers``' float32 cost matrix and
its order of ties so that the path is the same, step for step.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Optional, Sequence

import numpy as np

#: seconds per encoder frame (two mel frames of 10 ms)
TIME_PRECISION = 0.02
#: languages Whisper splits into words per character (``transformers``: chinese, japanese, thai, lao, myanmar,
#: cantonese)
UNSPACED_LANGUAGES = frozenset({"zh", "ja", "th", "lo", "my", "yue"})
PREPEND_PUNCTUATION = "\"'“¡¿([{-"
APPEND_PUNCTUATION = "\"'.。,，!！?？:：”)]}、"
ASCII_PUNCTUATION = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"


@dataclasses.dataclass(frozen=True)
class WordTiming:
    """One spoken word: ``word`` as written (leading space removed), ``start`` and ``end`` in seconds from the
    start of the audio it was aligned in, and ``probability`` (0..1: the mean of its tokens' probabilities
    under the recogniser, low when the word was not heard).  ``speaker`` names the voice in a dialogue script,
    else None.  ``to_dict()`` is its JSON form."""

    word: str
    start: float
    end: float
    probability: float
    speaker: Optional[str] = None

    def shifted(self, seconds: float, speaker: Optional[str] = None) -> "WordTiming":
        """The same word ``seconds`` later (and with ``speaker`` when one is given)."""
        return dataclasses.replace(self, start=round(self.start + seconds, 3), end=round(self.end + seconds, 3),
                                   speaker=self.speaker if speaker is None else speaker)

    def to_dict(self) -> dict:
        out = {"word": self.word, "start": self.start, "end": self.end, "probability": self.probability}
        if self.speaker is not None:
            out["speaker"] = self.speaker
        return out


def median_filter(x: np.ndarray, width: int) -> np.ndarray:
    """Median of each ``width`` values along the last axis, edges reflected (``transformers``' ``_median_filter``)."""
    if width <= 0 or width % 2 != 1:
        raise ValueError("the median filter's width must be an odd number")
    pad = width // 2
    if x.shape[-1] <= pad:
        return x
    padded = np.pad(x, [(0, 0)] * (x.ndim - 1) + [(pad, pad)], mode="reflect")
    windows = np.lib.stride_tricks.sliding_window_view(padded, width, axis=-1)
    return np.partition(windows, pad, axis=-1)[..., pad]


def dynamic_time_warping(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The cheapest monotone path through ``matrix`` ``[tokens, frames]``: (token index, frame index) per step.

    The recurrence and its tie order are ``transformers``' ``_dynamic_time_warping`` (diagonal when strictly
    cheapest, else up when strictly cheapest, else left; costs kept in float32); the cells of one
    anti-diagonal do not depend on each other, so each diagonal is computed at once."""
    rows, cols = matrix.shape
    cost = np.full((rows + 1, cols + 1), np.inf, dtype=np.float32)
    trace = np.full((rows + 1, cols + 1), -1, dtype=np.int8)
    cost[0, 0] = 0
    matrix = np.asarray(matrix, dtype=np.float64)
    for diagonal in range(2, rows + cols + 1):
        i = np.arange(max(1, diagonal - cols), min(rows, diagonal - 1) + 1)
        j = diagonal - i
        c0, c1, c2 = cost[i - 1, j - 1], cost[i - 1, j], cost[i, j - 1]
        step = np.where((c0 < c1) & (c0 < c2), 0, np.where((c1 < c0) & (c1 < c2), 1, 2))
        best = np.where(step == 0, c0, np.where(step == 1, c1, c2))
        cost[i, j] = (matrix[i - 1, j - 1] + best.astype(np.float64)).astype(np.float32)
        trace[i, j] = step
    trace[0, :] = 2
    trace[:, 0] = 1
    i, j = rows, cols
    text, time = [], []
    while i > 0 or j > 0:
        text.append(i - 1)
        time.append(j - 1)
        step = trace[i, j]
        if step == 0:
            i, j = i - 1, j - 1
        elif step == 1:
            i -= 1
        else:
            j -= 1
    return np.array(text[::-1]), np.array(time[::-1])


def token_times(attention: np.ndarray, num_frames: int, filter_width: int) -> np.ndarray:
    """Each text token's time in seconds from ``attention`` ``[heads, tokens, encoder frames]`` (the alignment
    heads' cross-attention at the text tokens' rows), as ``_extract_token_timestamps`` gives it."""
    weights = np.asarray(attention, dtype=np.float32)[..., :num_frames // 2]
    mean = weights.mean(axis=-2, keepdims=True)
    std = weights.std(axis=-2, keepdims=True)
    weights = median_filter((weights - mean) / std, filter_width)
    matrix = weights.mean(axis=0)
    text_indices, time_indices = dynamic_time_warping(-matrix.astype(np.float64))
    jumps = np.pad(np.diff(text_indices), (1, 0), constant_values=1).astype(bool)
    return time_indices[jumps] * TIME_PRECISION


def group_words(tokens: Sequence[int], decode: Callable[[list[int]], str], language: Optional[str],
                special_from: int) -> list[tuple[str, list[int]]]:
    """Words of ``tokens`` as (text with its leading space, token indices), Whisper's grouping (see the module);
    ``decode`` turns token ids into text, ``special_from`` is the first special token id (end of text)."""
    pieces = _split_on_unicode(tokens, decode)
    if (language or "").lower() not in UNSPACED_LANGUAGES:
        spaced: list[list] = []
        for text, indices in pieces:
            special = tokens[indices[0]] >= special_from
            if special or text.startswith(" ") or text.strip() in ASCII_PUNCTUATION or not spaced:
                spaced.append([text, list(indices)])
            else:
                spaced[-1][0] += text
                spaced[-1][1].extend(indices)
        pieces = [(t, i) for t, i in spaced]
    return _merge_punctuation([list(p) for p in pieces])


def _split_on_unicode(tokens: Sequence[int], decode) -> list[tuple[str, list[int]]]:
    full = decode(list(tokens))
    replacement = "\ufffd"
    out, current, offset = [], [], 0
    for index in range(len(tokens)):
        current.append(index)
        text = decode([tokens[k] for k in current])
        cut = text.find(replacement)
        if cut < 0 or offset + cut >= len(full) or full[offset + cut] == replacement:
            out.append((text, current))
            current, offset = [], offset + len(text)
    return out


def _merge_punctuation(words: list[list]) -> list[tuple[str, list[int]]]:
    """Opening marks join the next word, closing marks the previous one (``_merge_punctuations``)."""
    i, j = len(words) - 2, len(words) - 1
    while i >= 0:
        if words[i][0].startswith(" ") and words[i][0].strip() in PREPEND_PUNCTUATION:
            words[j] = [words[i][0] + words[j][0], words[i][1] + words[j][1]]
            words[i] = ["", []]
        else:
            j = i
        i -= 1
    i, j = 0, 1
    while j < len(words):
        if not words[i][0].endswith(" ") and words[j][0] in APPEND_PUNCTUATION:
            words[i] = [words[i][0] + words[j][0], words[i][1] + words[j][1]]
            words[j] = ["", []]
        else:
            i = j
        j += 1
    return [(text, indices) for text, indices in words if text]


def word_timings(words: list[tuple[str, list[int]]], times: np.ndarray, probabilities: np.ndarray,
                 clip_seconds: float) -> list[WordTiming]:
    """Words with times: a word starts at its first token's time and ends where the next word starts; the last
    word ends at the end of the clip, cut to twice the median word length (openai-whisper's cap on a word that
    the warping stretched over a trailing pause)."""
    starts = [float(times[indices[0]]) for _, indices in words]
    ends = starts[1:] + [clip_seconds]
    if len(words) > 1:
        lengths = [b - a for a, b in zip(starts[:-1], starts[1:]) if b > a]
        if lengths:
            ends[-1] = min(ends[-1], starts[-1] + 2 * float(np.median(lengths)))
    ends[-1] = max(ends[-1], starts[-1])
    return [WordTiming(word=text.strip(), start=round(start, 3), end=round(end, 3),
                       probability=float(np.mean(probabilities[indices])))
            for (text, indices), start, end in zip(words, starts, ends)]
