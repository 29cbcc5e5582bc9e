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
* the rest of the text is grouped into chunks of the reference's chunk size
  (``chunk_text_punctuation`` with the characters per ``chunk_duration``, and
  ``split_oversized_chunks`` as the engine's unstreamed chunking), at any
  length: past the reference's chunking threshold (30 s) too, where the first
  sentence is still its own chunk, so first audio comes after one sentence
  whatever the text's length.

The engine then runs these chunks as the reference runs its own: without a
voice, the first chunk's codes and text are the voice of the later ones, so
the speaker stays the same; each chunk's audio is emitted when decoded.
``playback_piece`` shapes a chunk for immediate playback so that the pieces,
played one after the other, sound like the reference's cross-fade join.
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from ..constants import FRAME_RATE, SAMPLE_RATE
from .duration import FALLBACK_REF_FRAMES, FALLBACK_REF_TEXT, estimate_duration, split_oversized_chunks
from ..text.prompt import chunk_text_punctuation
from ..text.sentences import split_sentences

#: a first sentence estimated longer than this is cut at a clause boundary
FIRST_CHUNK_SECONDS = 3.0

#: the duration estimator's soft floor (``estimate_duration``'s ``low_threshold``): a first chunk shorter than this
#: would be lengthened, and so would every later chunk that takes its rate from it
MIN_FIRST_FRAMES = 50

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
                    first_chunk_seconds: float = FIRST_CHUNK_SECONDS, language: Optional[str] = None) -> list[str]:
    """The chunks of ``text`` for sentence streaming (see the module doc).

    ``target_frames`` is the whole text's planned length, which sets the
    frames per character as in the reference's chunking.  A text of one
    short sentence comes back as one chunk, the text itself.  ``language``:
    whose rules cut sentences (None: the text's own).
    """
    text = text.strip()
    end, _ = first_chunk_end(text, first_chunk_seconds, language)
    first, rest = text[:end].strip(), text[end:].strip()
    if not worth_streaming(rest):
        return [text]
    frames_per_char = max(target_frames, 1) / max(len(text), 1)
    chunk_len = int(chunk_duration * FRAME_RATE / frames_per_char)         # the reference's chunk size
    return [first] + split_oversized_chunks(chunk_text_punctuation(rest, chunk_len=chunk_len, min_chunk_len=3),
                                            chunk_len)


def first_chunk_end(text: str, first_chunk_seconds: float = FIRST_CHUNK_SECONDS,
                    language: Optional[str] = None) -> tuple[int, bool]:
    """Where the first chunk of ``text`` (stripped) ends, and whether its end was decided (False: every clause was
    taken and the first chunk is still short, so a longer text would have a longer one).  It depends on the clauses
    and sentences up to its end only: a text's beginning decides it (``read_ahead.py``).  A clause ends the first
    sentence where the splitter ends one (``sentence_ends``), not at every full stop (the "5." of "am 5. Juni")."""
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
