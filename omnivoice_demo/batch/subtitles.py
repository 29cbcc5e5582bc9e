"""Subtitles (SRT and WebVTT) from the times of chunks and sentences in the final audio.

A cue per sentence: each chunk's span (``timeline.chunk_spans``, exact to the
sample) is shared among the chunk's sentences in proportion to their
estimated speaking time (``duration.total_weight``, the weights the engine
plans lengths with), since the model reports no alignment inside a chunk.
Chunk boundaries are therefore exact; sentence boundaries inside a chunk are
estimates.  Cues hold plain text; the writers escape what each format needs.

With word times (``GenerationConfig.word_timestamps``, ``engine.word_times``) the cues can be
word-level instead (``cues_for_words``): a cue of a few words (``MAX_CUE_WORDS``, a sentence end or a new
speaker starts the next), each cue with its words, which ``to_karaoke_vtt`` writes as WebVTT's inline
timestamps (``<00:00:01.240>word``: a player highlights each word as it is said).
"""

from __future__ import annotations

import dataclasses
import re
from typing import Optional

from ..engine.duration import total_weight
from ..text.sentences import split_sentences, sentence_texts

FORMATS = ("srt", "vtt")
#: a word-level cue holds at most this many words, and lasts at most MAX_CUE_SECONDS
MAX_CUE_WORDS = 7
MAX_CUE_SECONDS = 3.5
#: the shortest a cue or a read-along clip lasts: WebVTT wants a cue's end after its start, and the aligner can
#: give a word no length (start == end); 40 ms, a frame of 25 fps video, shows it and stays under a word's length
MIN_CUE_SECONDS = 0.04


@dataclasses.dataclass(frozen=True)
class Cue:
    start: float   # seconds
    end: float
    text: str
    speaker: str = ""   # who says it (a script's turn): SRT writes "Name: text", WebVTT a <v Name> voice span
    words: tuple = ()   # word-level cues: the words' (start, text), for the karaoke form

    def shifted(self, seconds: float) -> "Cue":
        return dataclasses.replace(self, start=self.start + seconds, end=self.end + seconds)


def cues_for_chunks(chunks: list[dict], language: Optional[str] = None) -> list[Cue]:
    """Cues from ``[{"text", "start", "end"[, "speaker"]}, ...]`` (seconds in the final audio), a cue per
    sentence (``text.sentences``, by ``language``'s rules; None: the text's own)."""
    cues = []
    for chunk in chunks:
        start, end = float(chunk["start"]), float(chunk["end"])
        if end <= start:
            continue
        sentences = sentence_texts(chunk["text"], language)
        weights = [max(total_weight(s), 1e-6) for s in sentences]
        total, done = sum(weights), 0.0
        for sentence, weight in zip(sentences, weights):
            cue_start = start + (end - start) * done / total
            done += weight
            cues.append(Cue(cue_start, start + (end - start) * done / total, sentence, chunk.get("speaker", "")))
    return cues


def cues_for_words(words, max_words: int = MAX_CUE_WORDS, max_seconds: float = MAX_CUE_SECONDS,
                   language: Optional[str] = None) -> list[Cue]:
    """Cues of a few words from word times (``asr.alignment.WordTiming``s, seconds in the final audio): a cue
    ends after ``max_words`` words, past ``max_seconds``, at a sentence's end (``text.sentences`` on the words,
    by ``language``'s rules), or before another speaker."""
    cues, group = [], []
    ends = sentence_end_words([word.word for word in words], language)

    def close():
        if group:
            cues.append(Cue(group[0].start, max(group[-1].end, group[0].start), " ".join(w.word for w in group),
                            group[0].speaker or "", tuple((w.start, w.word) for w in group)))
            group.clear()

    for index, word in enumerate(words):
        if group and (len(group) >= max_words or word.speaker != group[0].speaker
                      or word.end - group[0].start > max_seconds):
            close()
        group.append(word)
        if index in ends:
            close()
    close()
    return cues


def sentence_end_words(words: list[str], language: Optional[str] = None) -> set[int]:
    """The indexes of the words that end a sentence of the words' text (joined by spaces), the last one included."""
    text = " ".join(words)
    cuts, offset = set(), 0
    for piece in split_sentences(text, language):
        offset += len(piece)
        cuts.add(offset)
    ends, offset = set(), 0
    for index, word in enumerate(words):
        offset += len(word)
        if offset + 1 in cuts or offset == len(text):
            ends.add(index)
        offset += 1
    return ends


def to_karaoke_vtt(cues: list[Cue]) -> str:
    """WebVTT whose cues mark each word's start with an inline timestamp (karaoke: the word being said is
    highlighted by players that show them, the others show the cue's text)."""
    blocks = ["WEBVTT\n"]
    for cue, span in zip(cues, _spans(cues)):
        parts = []
        for index, (start, word) in enumerate(cue.words or ((cue.start, cue.text),)):
            text = _escape_vtt(_one_line(word))
            parts.append(text if index == 0 else f"<{_timestamp(max(start, cue.start), '.')}>{text}")
        text = " ".join(parts)
        if cue.speaker:
            text = f"<v {_escape_vtt(_one_line(cue.speaker))}>{text}"
        blocks.append(f"{_times(span, '.')}\n{text}\n")
    return "\n".join(blocks)


def positive_spans(spans, lower: float = 0.0, upper: float | None = None) -> list[tuple[float, float]]:
    """``spans`` [(start, end), ...] in order (seconds), each given a length in whole milliseconds (what SRT,
    WebVTT and SMIL clocks write): a span shorter than ``MIN_CUE_SECONDS`` (a word the aligner gave none) ends
    later, up to the next one's start; one that starts where the next starts pushes that start on by its length.
    With ``upper`` (the end of the audio the spans lie in) nothing ends after it: a last span there starts earlier,
    after the one before.  Spans that did not touch keep their times."""
    least = int(round(MIN_CUE_SECONDS * 1000))
    floor = int(round(lower * 1000))
    ceiling = None if upper is None else int(round(upper * 1000))
    ms = [[max(floor, int(round(s * 1000))), max(floor, int(round(e * 1000)))] for s, e in spans]
    for i, span in enumerate(ms):
        start, end = span
        if i and start < ms[i - 1][1] and start <= ms[i - 1][0]:
            start = ms[i - 1][1]   # pushed on by the span before, which started at the same time
        room = ms[i + 1][0] if i + 1 < len(ms) else ceiling
        end = max(end, start + least if room is None or room <= start else min(start + least, room))
        if ceiling is not None and end > ceiling:
            end = ceiling
            start = min(start, max(ms[i - 1][1] if i else floor, end - least))
        if end <= start:   # no room at all: a millisecond, over its neighbour
            start = end - 1 if ceiling is not None and end == ceiling else start
            end = start + 1
        span[:] = [max(0, start), end]
    return [(start / 1000, end / 1000) for start, end in ms]


def _spans(cues: list[Cue]) -> list[tuple[float, float]]:
    return positive_spans([(cue.start, cue.end) for cue in cues])


def _times(span: tuple[float, float], decimal: str) -> str:
    return f"{_timestamp(span[0], decimal)} --> {_timestamp(span[1], decimal)}"


def _timestamp(seconds: float, decimal: str) -> str:
    millis = max(0, int(round(seconds * 1000)))
    hours, millis = divmod(millis, 3_600_000)
    minutes, millis = divmod(millis, 60_000)
    secs, millis = divmod(millis, 1000)
    return f"{hours:02d}:{minutes:02d}:{secs:02d}{decimal}{millis:03d}"


def _one_line(text: str) -> str:
    return " ".join(text.split())


def word_subtitles(words, kind: str, language: Optional[str] = None) -> str:
    """Word-level subtitles of ``words`` (``WordTiming``s on one time line) as ``kind``: SRT cues of a few
    words, or (``vtt``) WebVTT with each word's start marked for karaoke highlighting."""
    cues = cues_for_words(words, language=language)
    return to_srt(cues) if kind == "srt" else to_karaoke_vtt(cues)


def to_srt(cues: list[Cue]) -> str:
    blocks = []
    for number, (cue, span) in enumerate(zip(cues, _spans(cues)), start=1):
        text = _one_line(f"{cue.speaker}: {cue.text}" if cue.speaker else cue.text).replace("-->", "->")
        blocks.append(f"{number}\n{_times(span, ',')}\n{text}\n")
    return "\n".join(blocks)


def to_vtt(cues: list[Cue]) -> str:
    blocks = ["WEBVTT\n"]
    for cue, span in zip(cues, _spans(cues)):
        text = _escape_vtt(_one_line(cue.text))
        if cue.speaker:
            text = f"<v {_escape_vtt(_one_line(cue.speaker))}>{text}"
        blocks.append(f"{_times(span, '.')}\n{text}\n")
    return "\n".join(blocks)


def _escape_vtt(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def render(cues: list[Cue], kind: str) -> str:
    return {"srt": to_srt, "vtt": to_vtt}[kind](cues)


def parse_timestamps(document: str) -> list[tuple[float, float]]:
    """(start, end) of every cue of an SRT or VTT document (for checks and tests)."""
    pattern = re.compile(r"(\d+):(\d\d):(\d\d)[,.](\d{3}) --> (\d+):(\d\d):(\d\d)[,.](\d{3})")
    times = []
    for match in pattern.finditer(document):
        h1, m1, s1, f1, h2, m2, s2, f2 = map(int, match.groups())
        times.append((h1 * 3600 + m1 * 60 + s1 + f1 / 1000, h2 * 3600 + m2 * 60 + s2 + f2 / 1000))
    return times
