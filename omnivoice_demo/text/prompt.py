"""Text handling: the conditional row's text tokens, punctuation, chunking.

Ports of ``omnivoice/utils/text.py`` (``add_punctuation``,
``chunk_text_punctuation``) and of the text part of
``OmniVoice._prepare_inference_inputs`` (``_combine_text``,
``_tokenize_with_nonverbal_tags``), for a ``tokenizers.Tokenizer`` loaded from
the model folder's ``tokenizer.json`` instead of a transformers tokenizer.
The Qwen tokenizer adds no special tokens of its own (no BOS/EOS), so
``Tokenizer.encode(s).ids`` equals ``AutoTokenizer(s).input_ids``; the tests
check this on the Qwen3 tokenizer.
"""

from __future__ import annotations

import pathlib
import re
from typing import TYPE_CHECKING, Optional

import numpy as np

from ..errors import (CONTROL_TOKENS, PROMPT_DELETES, InvalidInput, ModelFolderError, check_control_tokens,
                      check_unicode)

if TYPE_CHECKING:  # pragma: no cover
    from tokenizers import Tokenizer

__all__ = [
    "ABBREVIATIONS",
    "CLOSING_MARKS",
    "END_PUNCTUATION",
    "NONVERBAL_TAGS",
    "SPLIT_PUNCTUATION",
    "add_punctuation",
    "build_condition_ids",
    "CONTROL_TOKENS",
    "check_control_tokens",
    "chunk_text_punctuation",
    "combine_text",
    "load_text_tokenizer",
    "style_text",
    "tokenize_with_nonverbal_tags",
    "validate_text",
]

# ---------------------------------------------------------------------------
# Tables (omnivoice/utils/text.py)
# ---------------------------------------------------------------------------

SPLIT_PUNCTUATION = set(".,;:!?。，；：！？")
CLOSING_MARKS = set("\"'“”‘’）]》>」】")
END_PUNCTUATION = {
    ";", ":", ",", ".", "!", "?", "…", ")", "]", "}", '"', "'", "“", "”", "‘", "’",
    "；", "：", "，", "。", "！", "？", "、", "……", "）", "】",
}
ABBREVIATIONS = {
    "Mr.", "Mrs.", "Ms.", "Dr.", "Prof.", "Sr.", "Jr.", "Rev.", "Fr.", "Hon.",
    "Pres.", "Gov.", "Capt.", "Gen.", "Sen.", "Rep.", "Col.", "Maj.", "Lt.",
    "Cmdr.", "Sgt.", "Cpl.", "Co.", "Corp.", "Inc.", "Ltd.", "Est.", "Dept.",
    "St.", "Ave.", "Blvd.", "Rd.", "Mt.", "Ft.", "No.", "Jan.", "Feb.", "Mar.",
    "Apr.", "Aug.", "Sep.", "Sept.", "Oct.", "Nov.", "Dec.", "i.e.", "e.g.",
    "vs.", "Vs.", "Etc.", "approx.", "fig.", "def.",
}

#: Non-verbal tags the model was trained with, written ``[tag]`` in the text
#: (reference: ``_NONVERBAL_PATTERN``).  Each is tokenised on its own.
NONVERBAL_TAGS = [
    "laughter",
    "sigh",
    "confirmation-en",
    "question-en",
    "question-ah",
    "question-oh",
    "question-ei",
    "question-yi",
    "surprise-ah",
    "surprise-oh",
    "surprise-wa",
    "surprise-yo",
    "dissatisfaction-hnn",
]
_NONVERBAL_PATTERN = re.compile(r"\[(" + "|".join(re.escape(t) for t in NONVERBAL_TAGS) + r")\]")

_CJK = r"[\u4e00-\u9fff]"


# ---------------------------------------------------------------------------
# Validation
# ---------------------------------------------------------------------------


def validate_text(text: Optional[str], what: str = "The text to speak") -> str:
    """Return ``text`` unchanged, or raise ``ValueError`` when it is missing, blank or not valid Unicode."""
    if text is None or not str(text).strip():
        raise InvalidInput(f"{what} is empty; type the text to speak.")
    check_unicode(text, what)
    return text




def special_tokens(tokenizer) -> frozenset:
    """``CONTROL_TOKENS`` and every added token ``tokenizer`` marks special (a ``tokenizers.Tokenizer``)."""
    decoder = getattr(tokenizer, "get_added_tokens_decoder", None)
    found = {token.content for token in decoder().values() if token.special} if decoder else set()
    return CONTROL_TOKENS | frozenset(found)


# ---------------------------------------------------------------------------
# Text shaping
# ---------------------------------------------------------------------------


def combine_text(text: str, ref_text: Optional[str] = None) -> str:
    """``ref_text + " " + text``, whitespace-normalised (reference: ``_combine_text``).

    Drops CR/LF, turns full-width parentheses into ASCII ones, collapses runs
    of spaces/tabs, and removes whitespace next to CJK ideographs.
    """
    if ref_text:
        full_text = ref_text.strip() + " " + text.strip()
    else:
        full_text = text.strip()
    full_text = PROMPT_DELETES.sub("", full_text)
    full_text = full_text.replace("\uff08", "(").replace("\uff09", ")")
    full_text = re.sub(r"[ \t]+", " ", full_text)
    full_text = re.sub(rf"(?<={_CJK})\s+|\s+(?={_CJK})", "", full_text)
    return full_text


#: two or more of the whitespace characters ``combine_text`` removes or merges, in a row
_WHITESPACE_RUN = re.compile(r"[ \t\r\n]{2,}")


def collapse_whitespace_runs(text: str) -> str:
    """``text`` with each run of two or more spaces, tabs and line breaks made one character: a space when the run
    holds a space or a tab, else its first line break (``\\r\\n`` counts as one) (not in the reference).

    The reference plans a text's length from the raw text, where every line break weighs as much as a letter
    (``\\n`` falls in its Latin range), yet it reads the text through ``combine_text``, which drops line breaks and
    makes a run of spaces and tabs one space.  So a run reads exactly as the one character left of it, and the
    plan no longer counts whitespace that is never read (1,000 line breaks and "Hi." planned 71 s).  A text
    without two whitespace characters in a row (a Windows line break being one), which is ordinary prose, is
    unchanged: its plan stays the reference's, token for token.
    """
    return _WHITESPACE_RUN.sub(_one_character, text)


def _one_character(run: re.Match) -> str:
    text = run.group()
    if re.search(r"[ \t]", text):
        return " "
    return "\r\n" if text.startswith("\r\n") else text[0]  # a Windows line break is one line break


def add_punctuation(text: str) -> str:
    """Strip, and end with ``。`` (text with CJK) or ``.`` when no end punctuation (reference: ``add_punctuation``)."""
    text = text.strip()
    if not text:
        return text
    if text[-1] not in END_PUNCTUATION:
        is_chinese = any("\u4e00" <= char <= "\u9fff" for char in text)
        text += "。" if is_chinese else "."
    return text


def chunk_text_punctuation(text: str, chunk_len: int, min_chunk_len: Optional[int] = None) -> list[str]:
    """Split ``text`` at punctuation into chunks of at most about ``chunk_len`` characters.

    Reference: ``chunk_text_punctuation``.  Sentences end at ``SPLIT_PUNCTUATION``
    (not after an abbreviation such as "Mr."); leading punctuation and closing
    marks stick to the previous sentence; sentences are merged greedily while
    the chunk stays within ``chunk_len``; chunks shorter than ``min_chunk_len``
    are merged into their neighbour.

    Kept as the reference writes it, not replaced by the project's sentence splitter (``text.sentences``): these
    cuts decide the exact path's chunks (``duration.chunk_for_generation``), so their text and tokens, and the
    parity tests hold the engine to the reference's chunks token for token.
    """
    # 1. Split into sentences.
    sentences: list[list[str]] = []
    current: list[str] = []
    for ch in text:
        if not current and sentences and (ch in SPLIT_PUNCTUATION or ch in CLOSING_MARKS):
            sentences[-1].append(ch)
            continue
        current.append(ch)
        if ch in SPLIT_PUNCTUATION:
            is_abbreviation = False
            if ch == ".":
                so_far = "".join(current).strip()
                if so_far and so_far.split()[-1] in ABBREVIATIONS:
                    is_abbreviation = True
            if not is_abbreviation:
                sentences.append(current)
                current = []
    if current:
        sentences.append(current)

    # 2. Merge sentences while they fit.
    merged: list[list[str]] = []
    chunk: list[str] = []
    for sentence in sentences:
        if len(chunk) + len(sentence) <= chunk_len:
            chunk.extend(sentence)
        else:
            if chunk:
                merged.append(chunk)
            chunk = sentence
    if chunk:
        merged.append(chunk)

    # 3. Merge undersized chunks into the previous one (the first into the second).
    if min_chunk_len is not None:
        first_is_short = len(merged) > 0 and len(merged[0]) < min_chunk_len
        final: list[list[str]] = []
        for i, chunk in enumerate(merged):
            if i == 1 and first_is_short:
                final[-1].extend(chunk)
            elif len(chunk) >= min_chunk_len or not final:
                final.append(chunk)
            else:
                final[-1].extend(chunk)
    else:
        final = merged

    return ["".join(c).strip() for c in final if "".join(c).strip()]


# ---------------------------------------------------------------------------
# Tokenisation
# ---------------------------------------------------------------------------


def load_text_tokenizer(model_dir) -> "Tokenizer":
    """The text tokenizer of a model folder (``tokenizer.json``)."""
    from tokenizers import Tokenizer

    path = pathlib.Path(model_dir) / "tokenizer.json"
    if not path.is_file():
        raise ModelFolderError(f"tokenizer.json is missing from {path.parent}: the model folder has no text "
                               "tokenizer; download or build the model folder again.")
    try:
        return Tokenizer.from_file(str(path))
    except Exception as exc:  # tokenizers raises its own exception type
        raise ModelFolderError(f"tokenizer.json in {path.parent} cannot be read ({str(exc)[:200]}); download or "
                               "build the model folder again.") from exc


def tokenize_with_nonverbal_tags(text: str, tokenizer: "Tokenizer") -> list[int]:
    """Token ids of ``text`` with every ``[tag]`` tokenised on its own.

    Reference: ``_tokenize_with_nonverbal_tags`` (which returns a ``[1, n]``
    tensor; this returns the ids as a list).  The pieces between tags, and
    the tags, are encoded separately without special tokens and concatenated,
    so a tag gets the same ids whatever the language around it.
    """
    parts: list[list[int]] = []
    last_end = 0
    for m in _NONVERBAL_PATTERN.finditer(text):
        if m.start() > last_end:
            parts.append(tokenizer.encode(text[last_end : m.start()], add_special_tokens=False).ids)
        parts.append(tokenizer.encode(m.group(), add_special_tokens=False).ids)
        last_end = m.end()
    if last_end < len(text):
        parts.append(tokenizer.encode(text[last_end:], add_special_tokens=False).ids)
    ids = [i for p in parts for i in p]
    if not ids:  # the reference then encodes the whole text with special tokens
        ids = tokenizer.encode(text).ids
    return ids


def style_text(language: Optional[str], instruct: Optional[str], denoise: bool, has_reference: bool) -> str:
    """The style prefix of the conditional row (from ``_prepare_inference_inputs``).

    ``[<|denoise|>]<|lang_start|>{code or None}<|lang_end|><|instruct_start|>{instruct or None}<|instruct_end|>``;
    the denoise token only when cloning (a reference is given) and ``denoise``.
    ``language`` is a resolved code and ``instruct`` a resolved instruct.
    """
    out = "<|denoise|>" if denoise and has_reference else ""
    out += f"<|lang_start|>{language if language else 'None'}<|lang_end|>"
    out += f"<|instruct_start|>{instruct if instruct else 'None'}<|instruct_end|>"
    return out


def build_condition_ids(
    text: str,
    tokenizer: "Tokenizer",
    *,
    ref_text: Optional[str] = None,
    language: Optional[str] = None,
    instruct: Optional[str] = None,
    denoise: bool = True,
    has_reference: bool = False,
) -> np.ndarray:
    """Token ids of the conditional row's text part, as int64 ``[N]``.

    Mirrors ``_prepare_inference_inputs`` up to the audio: the style tokens
    (``style_text``, encoded as one string) followed by
    ``<|text_start|>{combine_text(text, ref_text)}<|text_end|>`` encoded with
    ``tokenize_with_nonverbal_tags``.  The model repeats these ids on all 8
    codebook rows; the reference codes (when cloning) and the masked target
    frames follow them.  ``language`` and ``instruct`` must already be
    resolved (``resolve_language``, ``resolve_instruct``); ``has_reference``
    says whether reference audio codes follow (voice cloning).
    """
    validate_text(text)
    tokens = special_tokens(tokenizer)
    check_control_tokens(text, "The text", tokens)
    check_control_tokens(ref_text, "The voice's transcript", tokens)
    check_control_tokens(instruct, "The instruct", tokens)
    check_control_tokens(language, "The language", tokens)
    style = style_text(language, instruct, denoise, has_reference)
    style_ids = tokenizer.encode(style).ids
    wrapped = f"<|text_start|>{combine_text(text, ref_text=ref_text)}<|text_end|>"
    text_ids = tokenize_with_nonverbal_tags(wrapped, tokenizer)
    _check_markers(style_ids, _MARKERS.findall(style), tokenizer, "The language or the instruct")
    _check_markers(text_ids, ["<|text_start|>", "<|text_end|>"], tokenizer, "The text or the voice's transcript")
    return np.asarray(style_ids + text_ids, dtype=np.int64)


#: the markers ``style_text`` and ``build_condition_ids`` write around the user's texts
_MARKERS = re.compile(r"<\|[a-z_]+\|>")


def _check_markers(ids: list[int], markers: list[str], tokenizer, where: str) -> None:
    """``InvalidInput`` unless the special tokens among ``ids`` are exactly ``markers``, those the prompt builder
    wrote, in order: the ids are what the model reads, after every rewrite of the text (line breaks removed,
    SSML resolved, lexicon applied, numbers in words, the tokenizer's own normalisation), so no way of writing
    a control token in a text reaches the model, whichever entry point it came through (issue 49).  The string
    checks before it (``check_control_tokens``) name the token earlier and more precisely; this is the last
    word, at the one place every prompt is built."""
    decoder = getattr(tokenizer, "get_added_tokens_decoder", None)
    special = {i for i, token in decoder().items() if token.special} if decoder else set()
    found = [i for i in ids if i in special]
    expected = [tokenizer.token_to_id(marker) for marker in markers] if special else []
    if found != expected:
        first = next(k for k in range(len(found) + 1) if k >= len(expected) or found[k] != expected[k])
        token = tokenizer.id_to_token(found[first]) if first < len(found) else "(a marker missing)"
        raise InvalidInput(f"{where} becomes the model's control token {token} in the prompt; control tokens "
                           "cannot be spoken or written into the prompt: remove it.", param="control_token")
