"""How many audio frames to generate for a text.

A port of ``omnivoice/utils/duration.py`` (``RuleDurationEstimator``: every
character has a phonetic weight by script; a text's length is the reference's
frames per weight times its weight, with a cube-root soft floor below 50
frames), of ``OmniVoice._estimate_target_tokens``, of the duration/speed
handling of ``OmniVoice._preprocess_all`` and of the chunk sizing of
``OmniVoice._generate_chunked``.
"""

from __future__ import annotations

import bisect
import unicodedata
from functools import lru_cache
from typing import Optional

from ..text.prompt import chunk_text_punctuation

__all__ = [
    "FRAME_RATE",
    "FALLBACK_REF_FRAMES",
    "FALLBACK_REF_TEXT",
    "char_weight",
    "chunk_for_generation",
    "estimate_duration",
    "estimate_target_frames",
    "needs_chunking",
    "plan_target_frames",
    "split_oversized_chunks",
    "total_weight",
]

#: Audio frames per second (24 kHz / hop 960).
FRAME_RATE = 25

#: Used when there is no reference: "Nice to meet you." took 25 frames.
FALLBACK_REF_TEXT = "Nice to meet you."
FALLBACK_REF_FRAMES = 25

# ---------------------------------------------------------------------------
# Tables (RuleDurationEstimator.__init__)
# ---------------------------------------------------------------------------

#: Relative speaking time of one character, per script (1.0 = a Latin letter).
WEIGHTS = {
    "cjk": 3.0,
    "hangul": 2.5,
    "kana": 2.2,
    "ethiopic": 3.0,
    "yi": 3.0,
    "indic": 1.8,
    "thai_lao": 1.5,
    "khmer_myanmar": 1.8,
    "arabic": 1.5,
    "hebrew": 1.5,
    "latin": 1.0,
    "cyrillic": 1.0,
    "greek": 1.0,
    "armenian": 1.0,
    "georgian": 1.0,
    "punctuation": 0.5,
    "space": 0.2,
    "digit": 3.5,
    "mark": 0.0,
    "default": 1.0,
}

#: (last code point of a Unicode block, script), ascending, for a bisect.
RANGES = [
    (0x02AF, "latin"),  # Latin (Basic, Supplement, Ext, IPA)
    (0x03FF, "greek"),  # Greek & Coptic
    (0x052F, "cyrillic"),  # Cyrillic
    (0x058F, "armenian"),  # Armenian
    (0x05FF, "hebrew"),  # Hebrew
    (0x077F, "arabic"),  # Arabic, Syriac, Arabic Supplement
    (0x089F, "arabic"),  # Arabic Extended-B (+ Syriac Supp)
    (0x08FF, "arabic"),  # Arabic Extended-A
    (0x097F, "indic"),  # Devanagari
    (0x09FF, "indic"),  # Bengali
    (0x0A7F, "indic"),  # Gurmukhi
    (0x0AFF, "indic"),  # Gujarati
    (0x0B7F, "indic"),  # Oriya
    (0x0BFF, "indic"),  # Tamil
    (0x0C7F, "indic"),  # Telugu
    (0x0CFF, "indic"),  # Kannada
    (0x0D7F, "indic"),  # Malayalam
    (0x0DFF, "indic"),  # Sinhala
    (0x0EFF, "thai_lao"),  # Thai & Lao
    (0x0FFF, "indic"),  # Tibetan (Abugida)
    (0x109F, "khmer_myanmar"),  # Myanmar
    (0x10FF, "georgian"),  # Georgian
    (0x11FF, "hangul"),  # Hangul Jamo
    (0x137F, "ethiopic"),  # Ethiopic
    (0x139F, "ethiopic"),  # Ethiopic Supplement
    (0x13FF, "default"),  # Cherokee
    (0x167F, "default"),  # Canadian Aboriginal Syllabics
    (0x169F, "default"),  # Ogham
    (0x16FF, "default"),  # Runic
    (0x171F, "default"),  # Tagalog (Baybayin)
    (0x173F, "default"),  # Hanunoo
    (0x175F, "default"),  # Buhid
    (0x177F, "default"),  # Tagbanwa
    (0x17FF, "khmer_myanmar"),  # Khmer
    (0x18AF, "default"),  # Mongolian
    (0x18FF, "default"),  # Canadian Aboriginal Syllabics Ext
    (0x194F, "indic"),  # Limbu
    (0x19DF, "indic"),  # Tai Le & New Tai Lue
    (0x19FF, "khmer_myanmar"),  # Khmer Symbols
    (0x1A1F, "indic"),  # Buginese
    (0x1AAF, "indic"),  # Tai Tham
    (0x1B7F, "indic"),  # Balinese
    (0x1BBF, "indic"),  # Sundanese
    (0x1BFF, "indic"),  # Batak
    (0x1C4F, "indic"),  # Lepcha
    (0x1C7F, "indic"),  # Ol Chiki (Santali)
    (0x1C8F, "cyrillic"),  # Cyrillic Extended-C
    (0x1CBF, "georgian"),  # Georgian Extended
    (0x1CCF, "indic"),  # Sundanese Supplement
    (0x1CFF, "indic"),  # Vedic Extensions
    (0x1D7F, "latin"),  # Phonetic Extensions
    (0x1DBF, "latin"),  # Phonetic Extensions Supplement
    (0x1DFF, "default"),  # Combining Diacritical Marks Supplement
    (0x1EFF, "latin"),  # Latin Extended Additional (Vietnamese)
    (0x309F, "kana"),  # Hiragana
    (0x30FF, "kana"),  # Katakana
    (0x312F, "cjk"),  # Bopomofo (Pinyin)
    (0x318F, "hangul"),  # Hangul Compatibility Jamo
    (0x9FFF, "cjk"),  # CJK Unified Ideographs (Main)
    (0xA4CF, "yi"),  # Yi Syllables
    (0xA4FF, "default"),  # Lisu
    (0xA63F, "default"),  # Vai
    (0xA69F, "cyrillic"),  # Cyrillic Extended-B
    (0xA6FF, "default"),  # Bamum
    (0xA7FF, "latin"),  # Latin Extended-D
    (0xA82F, "indic"),  # Syloti Nagri
    (0xA87F, "default"),  # Phags-pa
    (0xA8DF, "indic"),  # Saurashtra
    (0xA8FF, "indic"),  # Devanagari Extended
    (0xA92F, "indic"),  # Kayah Li
    (0xA95F, "indic"),  # Rejang
    (0xA97F, "hangul"),  # Hangul Jamo Extended-A
    (0xA9DF, "indic"),  # Javanese
    (0xA9FF, "khmer_myanmar"),  # Myanmar Extended-B
    (0xAA5F, "indic"),  # Cham
    (0xAA7F, "khmer_myanmar"),  # Myanmar Extended-A
    (0xAADF, "indic"),  # Tai Viet
    (0xAAFF, "indic"),  # Meetei Mayek Extensions
    (0xAB2F, "ethiopic"),  # Ethiopic Extended-A
    (0xAB6F, "latin"),  # Latin Extended-E
    (0xABBF, "default"),  # Cherokee Supplement
    (0xABFF, "indic"),  # Meetei Mayek
    (0xD7AF, "hangul"),  # Hangul Syllables
    (0xFAFF, "cjk"),  # CJK Compatibility
    (0xFDFF, "arabic"),  # Arabic Presentation Forms-A
    (0xFE6F, "default"),  # Variation Selectors
    (0xFEFF, "arabic"),  # Arabic Presentation Forms-B
    (0xFFEF, "latin"),  # Fullwidth Latin
]
_BREAKPOINTS = [end for end, _ in RANGES]


# ---------------------------------------------------------------------------
# RuleDurationEstimator
# ---------------------------------------------------------------------------


@lru_cache(maxsize=4096)
def char_weight(char: str) -> float:
    """Weight of one character (reference: ``RuleDurationEstimator._get_char_weight``)."""
    code = ord(char)
    if (65 <= code <= 90) or (97 <= code <= 122):
        return WEIGHTS["latin"]
    if code == 32:
        return WEIGHTS["space"]
    if code == 0x0640:  # Arabic tatweel
        return WEIGHTS["mark"]
    category = unicodedata.category(char)
    if category.startswith("M"):
        return WEIGHTS["mark"]
    if category.startswith("P") or category.startswith("S"):
        return WEIGHTS["punctuation"]
    if category.startswith("Z"):
        return WEIGHTS["space"]
    if category.startswith("N"):
        return WEIGHTS["digit"]
    idx = bisect.bisect_left(_BREAKPOINTS, code)
    if idx < len(RANGES):
        return WEIGHTS.get(RANGES[idx][1], WEIGHTS["default"])
    if code > 0x20000:  # CJK extensions B.. in the upper planes
        return WEIGHTS["cjk"]
    return WEIGHTS["default"]


def total_weight(text: str) -> float:
    """Sum of the character weights (reference: ``calculate_total_weight``)."""
    return sum(char_weight(c) for c in text)


def estimate_duration(
    target_text: str,
    ref_text: str,
    ref_duration: float,
    low_threshold: Optional[float] = 50,
    boost_strength: float = 3,
) -> float:
    """Length of ``target_text`` in the unit of ``ref_duration`` (reference: ``estimate_duration``).

    ``target_weight * ref_duration / ref_weight``; below ``low_threshold`` the
    estimate ``e`` becomes ``low_threshold * (e / low_threshold) ** (1/boost_strength)``,
    lengthening very short texts.  0.0 when the reference is empty or weightless.
    """
    if ref_duration <= 0 or not ref_text:
        return 0.0
    ref_weight = total_weight(ref_text)
    if ref_weight == 0:
        return 0.0
    speed_factor = ref_weight / ref_duration
    estimated = total_weight(target_text) / speed_factor
    if low_threshold is not None and estimated < low_threshold:
        alpha = 1.0 / boost_strength
        return low_threshold * (estimated / low_threshold) ** alpha
    return estimated


# ---------------------------------------------------------------------------
# OmniVoice: target length, duration override, chunking
# ---------------------------------------------------------------------------


def estimate_target_frames(
    text: str,
    ref_text: Optional[str] = None,
    num_ref_frames: Optional[int] = None,
    speed: float = 1.0,
) -> int:
    """Frames to generate for ``text`` (reference: ``OmniVoice._estimate_target_tokens``).

    The reference transcript and its number of code frames set the speaking
    rate; without either, "Nice to meet you." = 25 frames.  The estimate is
    divided by ``speed`` when ``speed > 0`` (other values are ignored, as in
    the reference), then truncated, and at least 1.
    """
    if num_ref_frames is None or ref_text is None or len(ref_text) == 0:
        ref_text = FALLBACK_REF_TEXT
        num_ref_frames = FALLBACK_REF_FRAMES
    est = estimate_duration(text, ref_text, num_ref_frames)
    if speed > 0 and speed != 1.0:
        est = est / speed
    return max(1, int(est))


def plan_target_frames(
    text: str,
    ref_text: Optional[str] = None,
    num_ref_frames: Optional[int] = None,
    speed: Optional[float] = None,
    duration: Optional[float] = None,
    frame_rate: int = FRAME_RATE,
) -> tuple[int, float]:
    """``(target_frames, speed)`` for one request, as ``OmniVoice._preprocess_all``.

    A ``duration`` (seconds) overrides ``speed``: the target is
    ``max(1, int(duration * frame_rate))`` and the returned speed is the
    ratio ``estimate_at_speed_1 / target``, which ``_generate_chunked`` uses to
    size each chunk of long text.  Otherwise the target is the estimate at
    ``speed`` (``None`` = 1.0) and that speed is returned.
    """
    if duration is not None:
        est = estimate_target_frames(text, ref_text, num_ref_frames, speed=1.0)
        target = max(1, int(duration * frame_rate))
        return target, est / target
    speed = 1.0 if speed is None else float(speed)
    return estimate_target_frames(text, ref_text, num_ref_frames, speed=speed), speed


def needs_chunking(target_frames: int, chunk_threshold: float = 30.0, frame_rate: int = FRAME_RATE) -> bool:
    """Whether a request is generated in chunks (reference: ``GenerationTask.get_indices``)."""
    return target_frames > int(chunk_threshold * frame_rate)


def chunk_for_generation(
    text: str, target_frames: int, chunk_duration: float = 15.0, frame_rate: int = FRAME_RATE
) -> list[str]:
    """Split long text into chunks of about ``chunk_duration`` seconds (from ``_generate_chunked``).

    The characters per chunk follow from the whole text's frames per
    character: ``int(chunk_duration * frame_rate / (target_frames / len(text)))``;
    chunks of fewer than 3 characters are merged into a neighbour.  Each
    chunk's own length is then ``estimate_target_frames(chunk, ref_text,
    num_ref_frames, speed)``, where, without a voice reference, chunks after
    the first use the first chunk's text and generated codes as reference.

    The exact path: its cuts are the reference's (``prompt.chunk_text_punctuation``), not the project's sentence
    splitter (``text.sentences``), so the chunks, and so the tokens, stay the reference's.
    """
    frames_per_char = target_frames / len(text)
    chunk_len = int(chunk_duration * frame_rate / frames_per_char)
    chunks = chunk_text_punctuation(text=text, chunk_len=chunk_len, min_chunk_len=3)
    return split_oversized_chunks(chunks, chunk_len)


#: A chunk longer than this many times ``chunk_len`` (and than ``MIN_SPLIT_CHARS``) is split further.
OVERSIZE_FACTOR = 2
MIN_SPLIT_CHARS = 100


def split_oversized_chunks(chunks: list[str], chunk_len: int) -> list[str]:
    """Split chunks far longer than ``chunk_len`` at spaces, then at a hard length (not in the reference).

    The reference splits only at punctuation, so a text without it (or one
    very long sentence) stays one chunk of any length, and its cost grows with
    the square of that length.  Here a chunk longer than
    ``max(OVERSIZE_FACTOR * chunk_len, MIN_SPLIT_CHARS)`` characters is cut
    into pieces of at most ``max(chunk_len, MIN_SPLIT_CHARS // 2)`` characters,
    at spaces where it has any (``textwrap``), else at that length.  Chunks
    within the bound, which is every chunk of ordinary punctuated text, are
    the reference's, unchanged.
    """
    import textwrap

    limit = max(OVERSIZE_FACTOR * chunk_len, MIN_SPLIT_CHARS)
    width = max(chunk_len, MIN_SPLIT_CHARS // 2)
    out: list[str] = []
    for chunk in chunks:
        if len(chunk) <= limit:
            out.append(chunk)
        else:
            out.extend(textwrap.wrap(chunk, width=width, break_long_words=True, break_on_hyphens=False))
    return out


def chunk_target_frames(
    chunks: list[str],
    target_frames: int,
    speed: float = 1.0,
    ref_text: Optional[str] = None,
    num_ref_frames: Optional[int] = None,
) -> list[int]:
    """Frames to generate for each chunk, as ``_generate_chunked`` sizes them.

    One chunk: the request's ``target_frames``.  Several: each chunk's
    ``estimate_target_frames`` against the voice (``ref_text``,
    ``num_ref_frames``), or, without a voice, against the first chunk's text
    and its generated length for every chunk after the first (the first
    chunk's length is decided before it is generated, so the whole layout is
    known in advance).
    """
    if len(chunks) == 1:
        return [target_frames]
    frames: list[int] = []
    voice = (ref_text, num_ref_frames) if ref_text is not None and num_ref_frames is not None else None
    for index, chunk in enumerate(chunks):
        reference = chunk_reference(index, voice, (chunks[0], frames[0] if frames else None))
        frames.append(estimate_target_frames(chunk, reference[0], reference[1], speed=speed))
    return frames


def chunk_reference(index: int, voice_reference: Optional[tuple], first_chunk: Optional[tuple]) -> tuple:
    """The ``(text, audio)`` reference of chunk ``index`` in ``_generate_chunked``: the voice's when there
    is one, else the first chunk's (text, generated audio) for every later chunk, else ``(None, None)``."""
    if voice_reference is not None:
        return voice_reference
    return first_chunk if index > 0 else (None, None)
