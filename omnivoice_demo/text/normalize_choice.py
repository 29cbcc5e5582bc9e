"""Whether numbers are read as words, and in which language: one decision, reported by every front end.

``normalize_text`` (a ``GenerationConfig`` setting) is ``False`` (off, the reference's default),
``True`` (asked for by name) or ``"auto"`` (the default where people type: the app, the OpenAI route,
Wyoming).  ``choose_normalization`` turns it, the text and the language the user gave into a
``NormalizeChoice``: the language the numbers are read in (or none) and why, which the engine applies
(``normalize.normalize_text``) and the front ends show: the HTTP header ``X-OmniVoice-Normalized``
(``NormalizeChoice.header``: the code, or ``off``), the app's text preview, the CLI's summary and the
batch sidecar (``normalized`` in the settings).

* The language: the one the user gave; with none, the one detected in the text
  (``text_language.detect_language``).  The detected language decides only this: the model is given
  the user's language or none, as the reference.
* ``"auto"``: on only where the normaliser really serves the language, English and Chinese (WeTextProcessing's
  grammars, as the reference), for a text within ``Limits.max_normalize_chars`` whose sentences are all in
  that language.  Anything else is read as written, with the reason; over the bound, the reason is a
  notice (``notice=True``) that the front ends show, not a silent switch.
* ``True``: what the reference's ``normalize_text`` does in that language: English and Chinese through
  WeTextProcessing (numbers, dates, money, units), every other language only its bare digit runs through
  num2words ("1.000" is read as two numbers, "3,5" as "drei,fünf"); a text without a given or detected
  language falls back to the reference's rule (Chinese with CJK characters, else English).  Over the bound
  it is refused, naming the limit.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Optional, Union

from ..settings.generation import NORMALIZE_AUTO
from .languages import language_display_name
from .text_language import detect_language

#: the value of ``normalize_text`` that lets the language decide (the typing front ends' default)
AUTO = NORMALIZE_AUTO
#: the languages whose numbers, dates, money and units the normaliser reads (WeTextProcessing's grammars)
SERVED = ("en", "zh")

_CJK_RE = re.compile(r"[\u4e00-\u9fff]")


@dataclasses.dataclass(frozen=True)
class NormalizeChoice:
    """``language``: the code the numbers are read in (None: read as written); ``detected``: the language found in
    the text (None when one was given or none was found); ``reason``: one line for people; ``notice``: the user
    should see it (the default did not apply as they may expect)."""

    language: Optional[str]
    reason: str
    detected: Optional[str] = None
    notice: bool = False
    failed: int = 0           # stretches of the text the normaliser failed on: read as written

    def with_failures(self, failed: int) -> "NormalizeChoice":
        """This decision after the reading, where the normaliser failed on ``failed`` stretches (read as written):
        its reason says so, and it is a notice."""
        if not failed:
            return self
        return dataclasses.replace(self, failed=failed, notice=True, reason=(
            f"{self.reason}; the normaliser failed on {failed} stretch{'es' if failed > 1 else ''} of the text, "
            "read as written there"))

    @property
    def header(self) -> str:
        """``X-OmniVoice-Normalized``'s value: the language code, or ``off``."""
        return self.language or "off"


def _name(code: Optional[str]) -> str:
    if code is None:
        return "no language"
    try:
        return language_display_name(code)
    except KeyError:
        return code


def choose_normalization(text: str, language: Optional[str], asked: Union[bool, str], limits=None,
                         missing=None) -> NormalizeChoice:
    """The decision for ``text`` with the user's resolved ``language`` (a code or None) and ``normalize_text``
    ``asked`` (False, True or ``AUTO``), within ``limits`` (``Limits``; None: unbounded).  ``missing(code)``:
    the pip names of what normalising in ``code`` needs and is not installed (default ``normalize.missing_for``).
    Asked for by name over the bound, or without its libraries, raises (naming what to do)."""
    if asked is False or not (text or "").strip():
        return NormalizeChoice(None, "normalize_text is off: numbers are read as written")
    from . import normalize

    missing = missing or normalize.missing_for
    if asked is not True and limits is not None and len(text) > limits.max_normalize_chars:   # before any work
        return NormalizeChoice(None, f"numbers are read as written: the text has {len(text)} characters, more "
                                     f"than the {limits.max_normalize_chars} this server reads as words "
                                     "(max_normalize_chars); shorten or split the text to have them read as words",
                               notice=True)
    detection = detect_language(text) if language is None else None
    code = language if language is not None else detection.language
    detected = detection.language if detection else None
    source = "chosen" if language is not None else "detected"
    if asked is True:
        if limits is not None:
            limits.check("The text read through normalize_text", len(text), "max_normalize_chars", " characters")
        if code is None:   # nothing to tell it by: the reference's rule
            code = "zh" if _CJK_RE.search(text) else "en"
            source = "assumed (no language given or detected)"
        normalize.require(code)
        what = "numbers, dates, money and units" if code in SERVED else "bare integers"
        rest = "" if code in SERVED else " with num2words; dates, money and units are read as written"
        mix = (f"; the text also has {', '.join(_name(c) for c in detection.languages[1:])}, read the same way"
               if detection and detection.mixed else "")
        return NormalizeChoice(code, f"{what} read as words in {_name(code)} ({source}){rest}{mix}", detected)
    # AUTO
    if detection is not None and detection.mixed:
        return NormalizeChoice(None, "numbers are read as written: the text mixes "
                                     f"{' and '.join(_name(c) for c in detection.languages)}; choose the language "
                                     "to have them read as words in it", detected)
    if code not in SERVED:
        if code is None:
            return NormalizeChoice(None, "numbers are read as written: no language was given and none could be "
                                         "detected; choose the language to have them read as words", detected)
        return NormalizeChoice(None, f"numbers are read as written in {_name(code)} ({source}): the normaliser "
                                     "reads them only in English and Chinese; turn normalize_text on to have bare "
                                     "integers read with num2words", detected)
    absent = missing(code)
    if absent:
        return NormalizeChoice(None, f"numbers are read as written: text normalisation needs {', '.join(absent)}, "
                                     f"not installed ({normalize.INSTALL_HINT})", detected, notice=True)
    return NormalizeChoice(code, f"numbers, dates, money and units read as words in {_name(code)} ({source})",
                           detected)


def choices_of(plan) -> list[NormalizeChoice]:
    """The decisions of a plan: a ``GenerationPlan``'s one, or each part's of a plan in parts (SSML segments, a
    script's turns: ``plan.plans``), in order, repeats left out."""
    parts = getattr(plan, "plans", None)
    found = [p.normalization for p in parts] if parts is not None else [getattr(plan, "normalization", None)]
    return list(dict.fromkeys(choice for choice in found if choice is not None))


def normalized_header(plan) -> str:
    """What the front ends report: the language code(s) the numbers were read in, comma-separated, or ``off``."""
    codes = list(dict.fromkeys(choice.language for choice in choices_of(plan) if choice.language))
    return ",".join(codes) if codes else "off"


def normalize_failures(plan) -> int:
    """Stretches of the plan's text the normaliser failed on (read as written), over all its parts."""
    return sum(choice.failed for choice in choices_of(plan))


def normalization_note(plan) -> str:
    """One line for people saying what was done with the numbers and why (each distinct reason)."""
    reasons = list(dict.fromkeys(choice.reason for choice in choices_of(plan)))
    return "; ".join(reasons)


def normalization_settings(plan) -> dict:
    """A result's record of it (its settings, so the app's files, the CLI's summary and the batch sidecars carry
    it): ``normalized`` (``normalized_header``) and ``normalized_note`` (``normalization_note``)."""
    return {"normalized": normalized_header(plan), "normalized_note": normalization_note(plan)}
