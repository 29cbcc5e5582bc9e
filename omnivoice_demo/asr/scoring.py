"""A transcript against the text that was spoken: the one text normalisation, word and character error rates.

Text normalisation (the one rule for every language): Unicode NFKC, case folded,
apostrophes removed (``don't`` -> ``dont``), every other punctuation mark or symbol
replaced by a space, whitespace collapsed.  Numbers stay as written: "5" and "five"
differ.  Words are split at spaces; characters are counted with the spaces removed,
so the character error rate means the same for Chinese or Japanese (written without
spaces, where the word error rate is not meaningful) as for English.  The edits are
counted by ``jiwer`` (the ``eval`` extra).

``omnivoice eval`` scores its candidates with these, and the engine's sentence check
(``engine.guard``) scores each chunk with them, so both read a transcript the same way.
"""

from __future__ import annotations

import dataclasses
import unicodedata

from ..errors import OmniVoiceError

APOSTROPHES = "'\u2019\u02bc"
JIWER_INSTALL = "pip install jiwer (in a checkout: .venv/bin/pip install jiwer==4.0.0; scripts/run_app.sh installs it)"
#: languages written without spaces between words: read their character error rate
UNSPACED_LANGUAGES = frozenset({"zh", "ja", "yue", "th", "lo", "km", "my", "bo"})


class MissingEvalDependency(OmniVoiceError):
    """A package the evaluation (or the sentence check) needs is not installed; the message names the install."""


def normalise_text(text: str) -> str:
    """The one normalisation applied to both the spoken text and the transcript (see the module)."""
    text = unicodedata.normalize("NFKC", text).casefold()
    for mark in APOSTROPHES:
        text = text.replace(mark, "")
    text = "".join(" " if unicodedata.category(c)[0] in "PS" else c for c in text)
    return " ".join(text.split())


@dataclasses.dataclass(frozen=True)
class ErrorRates:
    """Edits of the transcript against the reference text: words and characters."""

    word_errors: int
    words: int
    char_errors: int
    chars: int

    @property
    def wer(self) -> float:
        return self.word_errors / self.words if self.words else 0.0

    @property
    def cer(self) -> float:
        return self.char_errors / self.chars if self.chars else 0.0

    def to_dict(self) -> dict:
        return dict(dataclasses.asdict(self), wer=self.wer, cer=self.cer)


def jiwer_missing_note() -> str | None:
    """One line for the controls of the sentence check when jiwer is not installed (they are greyed out), else None."""
    import importlib.util

    if importlib.util.find_spec("jiwer") is not None:
        return None
    return f"Off: the sentence check needs jiwer (about 13 MB), which is not installed: {JIWER_INSTALL}."


def require_jiwer():
    try:
        import jiwer
    except ImportError:
        raise MissingEvalDependency(f"Word error rates need jiwer, which is not installed: {JIWER_INSTALL}.") from None
    return jiwer


def error_rates(reference: str, transcript: str) -> ErrorRates:
    """Word and character edits (substitutions + deletions + insertions) counted by ``jiwer``."""
    jiwer = require_jiwer()
    ref, hyp = normalise_text(reference), normalise_text(transcript)
    ref_chars, hyp_chars = ref.replace(" ", ""), hyp.replace(" ", "")
    return ErrorRates(_edits(jiwer.process_words, ref, hyp, len(ref.split()), len(hyp.split())), len(ref.split()),
                      _edits(jiwer.process_characters, ref_chars, hyp_chars, len(ref_chars), len(hyp_chars)),
                      len(ref_chars))


def _edits(process, reference: str, hypothesis: str, reference_units: int, hypothesis_units: int) -> int:
    """Substitutions + deletions + insertions; jiwer refuses empty strings, whose counts are plain."""
    if not reference or not hypothesis:  # all inserted, or all deleted
        return hypothesis_units if not reference else reference_units
    out = process(reference, hypothesis)
    return int(out.substitutions + out.deletions + out.insertions)
