"""SSML's ``say-as`` of numbers, dates, times and telephone numbers, read as words (``say_as_words``): through the
text normaliser (``normalize``, WeTextProcessing), or, for the number kinds where that extra is not installed,
through num2words alone (``num2words_say_as``).  ``ssml`` calls it for each ``<say-as>`` it reads; ``fail``
raises the SSML error that names the element's line and column."""

from __future__ import annotations

import re
from typing import Optional

from ..errors import excerpt


#: say-as kinds num2words reads alone (the default install has it; WeTextProcessing, about 740 MB, is an extra)
NUMBER_KINDS = ("cardinal", "ordinal", "digits", "telephone")


def num2words_say_as(kind: str, text: str, code: str, fail) -> str:
    """``say-as`` of a number through num2words alone, where WeTextProcessing is not installed: the words of the
    number (``cardinal``, ``ordinal``), or of each digit (``digits``; ``telephone`` by groups)."""
    from num2words import num2words

    def words(value, **options) -> str:
        try:
            return num2words(value, lang=code, **options)
        except (NotImplementedError, OverflowError, ValueError):   # a language num2words does not know
            fail(f"<say-as interpret-as=\"{kind}\"> is not known in the language {excerpt(code)} without the "
                 f"text normaliser's WeTextProcessing; write the words out.")
            raise AssertionError("fail raises") from None

    if kind in ("cardinal", "ordinal"):
        number = text.replace(",", "")
        if kind == "ordinal":
            return words(int(re.sub(r"\D", "", number)), to="ordinal")
        return words(float(number) if "." in number else int(number))
    groups = [text] if kind == "digits" else re.findall(r"\d+", text)
    spoken = [" ".join(words(int(ch)) for ch in group if ch.isdigit()) for group in groups]
    if not any(spoken):
        fail(f"<say-as interpret-as=\"{kind}\"> holds no digits.")
    return ", ".join(part for part in spoken if part)


def say_as_words(kind: str, text: str, language: Optional[str], fail) -> str:
    """``say-as`` of numbers, dates, times and telephone numbers, read through the text normaliser."""
    from . import normalize

    code = normalize._language_code(language, text)
    if kind in ("ordinal", "cardinal") and not re.fullmatch(r"[+-]?\d[\d,.]*", text):
        fail(f"<say-as interpret-as=\"{kind}\"> holds a number, got {excerpt(text)}.")
    missing = normalize.missing_modules()
    if missing and kind in NUMBER_KINDS and "num2words" not in missing:
        return num2words_say_as(kind, text, code, fail)
    if missing:
        fail(f"<say-as interpret-as=\"{kind}\"> reads through the text normaliser, which needs "
             f"{', '.join(missing)}: {normalize.INSTALL_HINT}; or write the words out.")
    if kind == "ordinal":
        number = int(re.sub(r"\D", "", text))
        if code == "en":
            text = f"{number}{'th' if 10 <= number % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(number % 10, 'th')}"
        elif code == "zh":
            text = f"第{number}"
        else:
            from num2words import num2words

            try:
                return num2words(number, lang=code, to="ordinal")
            except Exception:   # a language num2words does not know
                fail(f"<say-as interpret-as=\"ordinal\"> is not known in the language {excerpt(code)}.")
    elif kind == "digits":
        text = " ".join(ch for ch in text if ch.isdigit())
    elif kind == "telephone":
        text = ", ".join(" ".join(group) for group in re.findall(r"\d+", text))
    if not text:
        fail(f"<say-as interpret-as=\"{kind}\"> holds no digits.")
    return normalize.normalize_text(text, code)
