"""Sentence streaming: which chunks to generate so that the first audio comes early.

The reference generates a text of up to 30 s in one piece, and a longer one in
chunks of about 15 s (``_generate_chunked``); nothing can play before the
first chunk is done.  OmniVoice is not autoregressive, so the way to hear
audio sooner is to generate a short first piece on its own:

* the first chunk is the first sentence (``text.sentences``, the one splitter); a first sentence longer than
  ``first_chunk_seconds`` is cut at its last clause boundary (``,``, ``;``,
  ``:``, ...) that keeps it within that length (at least one clause);
* but the first chunk is at least ``MIN_FIRST_FRAMES`` long (further
  sentences or clauses are added until it is): below that the reference's
  duration estimator lengthens a text (its cube-root soft floor), and the
  later chunks, which take their speaking rate from the first, would be
  drawn out;
* with ``quick_start`` (seconds, a ``GenerationConfig`` setting; 0 = off) the
  first chunk is shorter still, for a voice assistant whose reply should start
  within about a second: the longest run of the first clauses within that
  length (at least ``MIN_QUICK_FRAMES``), else its first words within it (a
  script written without spaces keeps the sentence rule); the next chunk is the rest up to a sentence end of at least
  ``MIN_FIRST_FRAMES``, so it is ready about when the first has played.  Such a
  first chunk is under the estimator's soft floor on purpose: ``chunk_frames``
  sizes it at the text's own speaking rate (the floor would draw it out, and
  every later chunk with it, since they take their rate from it);
* the rest of the text is cut into sentences by ``text.sentences.split_sentences``
  (the one splitter, as the first chunk) and grouped into chunks of up to the
  reference's chunk size (the characters per ``chunk_duration``; a sentence
  longer than that is cut by ``split_oversized_chunks``, as the engine's
  unstreamed chunking), at any length: past the reference's chunking threshold
  (30 s) too, where the first sentence is still its own chunk, so first audio
  comes after one sentence whatever the text's length.  Streaming is not the
  exact path: the unstreamed path keeps the reference's own chunker
  (``prompt.chunk_text_punctuation``), whose cuts the parity tests hold.

The engine then runs these chunks as the reference runs its own: without a
voice, the first chunk's codes and text are the voice of the later ones, so
the speaker stays the same; each chunk's audio is emitted when decoded.
``playback_piece`` shapes a chunk for immediate playback so that the pieces,
played one after the other, sound like the reference's cross-fade join.
"""

from __future__ import annotations

import re
from typing import Optional

import numpy as np

from ..constants import FRAME_RATE, SAMPLE_RATE
from .duration import (FALLBACK_REF_FRAMES, FALLBACK_REF_TEXT, chunk_target_frames, estimate_duration,
                       estimate_target_frames, split_oversized_chunks)
from ..text.prompt import chunk_text_punctuation
from ..text.sentences import split_sentences

#: a first sentence estimated longer than this is cut at a clause boundary
FIRST_CHUNK_SECONDS = 3.0

#: the duration estimator's soft floor (``estimate_duration``'s ``low_threshold``): a first chunk shorter than this
#: would be lengthened, and so would every later chunk that takes its rate from it
MIN_FIRST_FRAMES = 50

#: ``quick_start``'s shortest first chunk (0.6 s: a few words; a shorter text is spoken poorly and gains little)
MIN_QUICK_FRAMES = 15

#: the reference's join: fade out, silence, fade in, a third of this each (``cross_fade_chunks``)
JOIN_SECONDS = 0.3


def clauses(text: str) -> list[str]:
    """The text's clauses as the reference splits them (``chunk_text_punctuation``'s first step)."""
    return chunk_text_punctuation(text, chunk_len=0)


def sentence_ends(text: str, language: Optional[str] = None) -> set[int]:
    """Where the sentences of ``text`` end (``text.sentences.split_sentences``; offsets before the white space after
    them), the text's end included."""
    ends, offset = {len(text.rstrip())}, 0
    for piece in split_sentences(text, language):
        ends.add(offset + len(piece.rstrip()))
        offset += len(piece)
    return ends


def splitting_language(code: Optional[str], normalization=None) -> Optional[str]:
    """The language whose rules cut a plan's sentences: the user's (``code``), else the one its numbers are read in,
    else the one detected in its text (``normalization``, a ``NormalizeChoice``); None: the splitter's own guess."""
    if code:
        return code
    return (normalization.language or normalization.detected) if normalization is not None else None


def sentence_chunks(text: str, target_frames: int, chunk_duration: float = 15.0,
                    first_chunk_seconds: float = FIRST_CHUNK_SECONDS, language: Optional[str] = None,
                    quick_start: float = 0.0) -> list[str]:
    """The chunks of ``text`` for sentence streaming (see the module doc).

    ``target_frames`` is the whole text's planned length, which sets the
    frames per character as in the reference's chunking.  A text of one
    short sentence comes back as one chunk, the text itself.  ``language``:
    whose rules cut sentences (None: the text's own).  ``quick_start``: the
    first chunk's seconds for a voice assistant (0: the first sentence).
    """
    text = text.strip()
    end, _ = first_chunk_end(text, first_chunk_seconds, language, quick_start)
    first, rest = text[:end].strip(), text[end:].strip()
    if not worth_streaming(rest):
        return [text]
    frames_per_char = max(target_frames, 1) / max(len(text), 1)
    chunk_len = int(chunk_duration * FRAME_RATE / frames_per_char)         # the reference's chunk size
    return [first] + split_oversized_chunks(later_chunks(rest, chunk_len, language, quick=end < len(text)
                                                         and quick_start > 0), chunk_len)


def later_chunks(rest: str, chunk_len: int, language: Optional[str] = None, quick: bool = False) -> list[str]:
    """The text after the first chunk in chunks: its sentences (``split_sentences``) joined while a chunk stays
    within ``chunk_len`` characters.  ``quick`` (a ``quick_start`` first chunk): the first of them ends at the
    first sentence end past ``MIN_FIRST_FRAMES``, so that it is made while the short first chunk plays."""
    chunks: list[str] = []
    current = ""
    for sentence in (piece.strip() for piece in split_sentences(rest, language)):
        if not sentence:
            continue
        joined = f"{current} {sentence}" if current else sentence
        if current and len(joined) > chunk_len:
            chunks.append(current)
            joined = sentence
        current = joined
        if quick and not chunks and _frames(current) >= MIN_FIRST_FRAMES:
            chunks.append(current)
            current = ""
    if current:
        if chunks and len(current) < 3:   # a stray mark (the reference's min_chunk_len): with the one before
            chunks[-1] = f"{chunks[-1]} {current}"
        else:
            chunks.append(current)
    return chunks


def first_chunk_end(text: str, first_chunk_seconds: float = FIRST_CHUNK_SECONDS,
                    language: Optional[str] = None, quick_start: float = 0.0) -> tuple[int, bool]:
    """Where the first chunk of ``text`` (stripped) ends, and whether its end was decided (False: every clause was
    taken and the first chunk is still short, so a longer text would have a longer one).  It depends on the clauses
    and sentences up to its end only: a text's beginning decides it (``read_ahead.py``).  A clause ends the first
    sentence where the splitter ends one (``sentence_ends``), not at every full stop (the "5." of "am 5. Juni").
    ``quick_start``: a first chunk of about that many seconds (``quick_end``) where the text allows one."""
    if quick_start > 0:
        end = quick_end(text, quick_start)
        if end is not None:
            return end, True
    pieces = clauses(text)
    ends = sentence_ends(text, language)
    end, taken = 0, 0
    for index, piece in enumerate(pieces):
        start = text.find(piece, end)
        if start < 0:  # not a substring (cannot happen: the pieces are stripped slices); stay safe
            return len(text), False
        long_enough = taken and _frames(text[:end]) >= MIN_FIRST_FRAMES
        if long_enough and _frames(text[:start + len(piece)]) > first_chunk_seconds * FRAME_RATE:
            return end, True
        end, taken = start + len(piece), index + 1
        if end in ends and _frames(text[:end]) >= MIN_FIRST_FRAMES:
            return end, True
    return end, False


def quick_end(text: str, seconds: float) -> Optional[int]:
    """The end of a ``quick_start`` first chunk of ``text`` (stripped): the longest run of its first clauses within
    ``seconds`` of speech, of at least ``MIN_QUICK_FRAMES``; where none is, its first words within ``seconds``; None where neither fits (the sentence rule decides) or the rest would be too short to be a
    chunk of its own (``worth_streaming``)."""
    limit = seconds * FRAME_RATE
    end, best = 0, None
    for piece in clauses(text):
        start = text.find(piece, end)
        if start < 0 or _frames(text[:start + len(piece)]) > limit:
            break
        end = start + len(piece)
        # a mark inside a word or number ("10:30", "1,250") is no boundary: a clause ends before white space
        if _frames(text[:end]) >= MIN_QUICK_FRAMES and (end == len(text) or text[end].isspace()):
            best = end
    if best is None:   # no run of clauses fits: the first words within ``seconds``
        for word in re.finditer(r"\S+(?=\s)", text):
            if _frames(text[:word.end()]) > limit:
                break
            if _frames(text[:word.end()]) >= MIN_QUICK_FRAMES:
                best = word.end()
    if best is None or not worth_streaming(text[best:].strip()):
        return None
    return best


def first_chunk_frames(text: str, ref_text: Optional[str] = None, num_ref_frames: Optional[int] = None,
                       speed: float = 1.0, quick: bool = False) -> int:
    """Frames of a first chunk of several: ``estimate_target_frames`` (the reference's, against the voice or its
    fallback); ``quick`` (a ``quick_start`` plan): at the speaking rate alone, without the soft floor that would
    draw a short first chunk out, and with it every later chunk that takes its rate from it."""
    if not quick:
        return estimate_target_frames(text, ref_text, num_ref_frames, speed=speed)
    if num_ref_frames is None or not ref_text:
        ref_text, num_ref_frames = FALLBACK_REF_TEXT, FALLBACK_REF_FRAMES
    estimated = estimate_duration(text, ref_text, num_ref_frames, low_threshold=None)
    return max(1, int(estimated / speed if speed > 0 and speed != 1.0 else estimated))


def chunk_frames(plan) -> list[int]:
    """Frames of each chunk of ``plan`` (a ``GenerationPlan``): ``chunk_target_frames``, the reference's sizing,
    but for a ``quick_start`` plan's first chunk (``first_chunk_frames``), from which the later chunks take their
    rate when there is no voice."""
    voice = plan.voice
    ref_text, ref_frames = (voice.transcript, voice.frames) if voice else (None, None)
    config = plan.config
    if not (config.sentence_streaming and config.quick_start > 0 and len(plan.chunks) > 1):
        return chunk_target_frames(plan.chunks, plan.target_frames, plan.speed, ref_text, ref_frames)
    first = first_chunk_frames(plan.chunks[0], ref_text, ref_frames, plan.speed, quick=True)
    if voice is None:
        ref_text, ref_frames = plan.chunks[0], first
    return [first] + [estimate_target_frames(chunk, ref_text, ref_frames, speed=plan.speed)
                      for chunk in plan.chunks[1:]]


def worth_streaming(rest: str) -> bool:
    """Whether the text after the first chunk is long enough to be chunks of its own (else the text is one chunk)."""
    return len(rest) >= 3 and _frames(rest) >= MIN_FIRST_FRAMES


def _frames(text: str) -> float:
    """Frames of ``text`` at the default speaking rate, before the soft floor (what decides whether it applies)."""
    return estimate_duration(text, FALLBACK_REF_TEXT, FALLBACK_REF_FRAMES, low_threshold=None)


def playback_piece(audio: np.ndarray, index: int, num_chunks: int, ref_rms: Optional[float],
                   sample_rate: int = SAMPLE_RATE) -> np.ndarray:
    """Chunk ``index``'s decoded audio, ready to play at once after the previous pieces.

    The reference's join (``cross_fade_chunks``): a 0.1 s fade-out at the end
    of every chunk but the last, then 0.1 s of silence, then a 0.1 s fade-in
    of the next chunk.  The loudness rule of the final post-processing is
    applied per piece (scaled to the voice's loudness, or peak 0.5 without a
    voice), so pieces play at the final level; silence trimming and the outer
    fade/padding apply to the final audio only.
    """
    piece = np.array(audio, dtype=np.float32).reshape(-1)
    fade_n = int(JOIN_SECONDS * sample_rate) // 3
    if index > 0:
        n = min(fade_n, piece.size)
        piece[:n] *= np.linspace(0, 1, n, dtype=np.float32)
    if index < num_chunks - 1:
        n = min(fade_n, piece.size)
        if n:
            piece[-n:] *= np.linspace(1, 0, n, dtype=np.float32)
        piece = np.concatenate([piece, np.zeros(fade_n, dtype=np.float32)])
    if ref_rms is not None:
        if ref_rms < 0.1:
            piece *= np.float32(ref_rms / 0.1)
    elif piece.size:
        peak = float(np.abs(piece).max())
        if peak > 1e-6:
            piece *= np.float32(0.5 / peak)
    return piece
