"""Numbers, dates, currency and units read as words: the reference's ``normalize_text``.

A port of ``omnivoice.utils.text.normalize_text`` (what ``generate(normalize_text=True)``
applies to the target text, before the duration is estimated), with the same libraries:

* English and Chinese: WeTextProcessing's ``tn.english`` / ``tn.chinese`` ``Normalizer``
  (Chinese with the reference's conservative flags: interjections, erhua, traditional
  characters, punctuation and full-width forms are kept);
* every other language: ``num2words`` on each run of digits, bare integers only (left as it is
  where num2words does not know the language or the number): "1.000" is two numbers, "3,5" is
  "drei,fünf", dates, money and units are read as written.  Only num2words is needed for these.

Whether it runs, and in which language, is decided by ``normalize_choice.choose_normalization``
(the typing front ends leave it to the language: on for English and Chinese only).

The model's own inline controls are held out and put back verbatim: any ``[...]`` span
(non-verbal tags such as ``[laughter]`` and CMU overrides such as ``[B EY1 S]``) and, for
Chinese, upper-case pinyin with a tone digit (``NI3``), so their digits are not read as numbers.

The libraries are an extra (``pip install 'omnivoice-onnx-studio[normalize]'``): pynini,
which WeTextProcessing needs, installs about 740 MB.  They are imported on first use and
each normaliser is built once per process.
"""

from __future__ import annotations

import functools
import importlib.util
import logging
import re
import threading
from typing import Callable, Optional

from ..errors import InvalidInput
from .languages import resolve_language
from .sentences import split_sentences
from .text_work import GATE, preload_in_background

logger = logging.getLogger(__name__)

#: import name -> pip name of what normalisation needs
MODULES = {"tn": "WeTextProcessing", "pynini": "pynini", "num2words": "num2words"}
#: pynini, which WeTextProcessing needs, is about 740 MB installed (its RECORD): not in the default install.  The
#: checkout's command installs into the app's own torch-free .venv (requirements-dev.txt would bring torch there)
INSTALL_HINT = ("pip install 'omnivoice-onnx-studio[normalize]', about 740 MB "
                "(in a checkout: .venv/bin/pip install WeTextProcessing==1.2.0 pynini==2.1.7)")

_BRACKET_TAG_RE = re.compile(r"\[[^\[\]]*\]")   # non-verbal tags and CMU overrides
_PINYIN_TONE_RE = re.compile(r"[A-Z]+[1-5]")    # upper-case pinyin + tone digit
_CJK_RE = re.compile(r"[\u4e00-\u9fff]")
_LOCK = threading.Lock()


#: our port's own version: bump it when a change here alters what a text reads as (the render key carries it)
PORT_VERSION = 1


@functools.lru_cache(maxsize=None)
def _installed_version(pip_name: str) -> str:
    from importlib import metadata

    try:
        return metadata.version(pip_name)
    except metadata.PackageNotFoundError:
        return "not installed"


def identity(code: str) -> str:
    """Which normaliser reads numbers in language ``code``, and its version: this port's, and the library's
    (WeTextProcessing and pynini for English and Chinese, num2words for every other language)."""
    libraries = ("WeTextProcessing", "pynini") if code in ("en", "zh") else ("num2words",)
    return f"omnivoice normalize v{PORT_VERSION}; " + ", ".join(f"{name} {_installed_version(name)}"
                                                                for name in libraries)


class NormalizerMissing(InvalidInput):
    """``normalize_text`` was asked for but its libraries are not installed."""


def missing_modules() -> list[str]:
    """pip names of the normalisation libraries that are not importable."""
    return [pip for module, pip in MODULES.items() if importlib.util.find_spec(module) is None]


def unavailable_note() -> Optional[str]:
    """One line for the front ends that turn normalisation on by default, or None when it is installed."""
    missing = missing_modules()
    if not missing:
        return None
    return (f"Numbers, dates and units are read as written: text normalisation needs {', '.join(missing)}, "
            f"not installed ({INSTALL_HINT}).")


def missing_for(code: str) -> list[str]:
    """pip names of what normalising in language ``code`` needs and is not importable: English and Chinese need
    WeTextProcessing (and pynini), every other language only num2words."""
    missing = missing_modules()
    return missing if code in ("en", "zh") else [pip for pip in missing if pip == MODULES["num2words"]]


def require(code: str) -> None:
    """Raise a ``NormalizerMissing`` naming what to install when normalising in ``code`` cannot run."""
    missing = missing_for(code)
    if missing:
        raise NormalizerMissing(f"normalize_text needs {', '.join(missing)}, which this installation lacks: "
                                f"{INSTALL_HINT}; or turn normalize_text off.", param="normalize_text")


@functools.lru_cache(maxsize=None)
def _normalizer(code: str) -> Callable[[str], str]:
    require(code)
    if code == "zh":
        from tn.chinese.normalizer import Normalizer

        options = dict(remove_interjections=False, remove_erhua=False, traditional_to_simple=False,
                       remove_puncts=False, full_to_half=False)
    else:
        from tn.english.normalizer import Normalizer

        options = {}
    logging.getLogger("wetext").setLevel(logging.WARNING)  # it logs each FST's path at INFO when built
    return Normalizer(**options).normalize


def _num2words(text: str, code: str) -> str:
    from num2words import num2words

    def words(match):
        try:
            return num2words(int(match.group()), lang=code)
        except Exception:   # a language or number num2words does not know: as written (the reference's)
            return match.group()

    return re.sub(r"\d+", words, text)


def _language_code(language: Optional[str], text: str) -> str:
    """``"zh"``, ``"en"`` or another language's code; no language: Chinese if the text has CJK, else English."""
    if language is not None and language.strip() and language.strip().lower() != "none":
        try:
            code = resolve_language(language)
        except InvalidInput:   # the reference passes an unknown code on (num2words then leaves the text)
            code = language.strip().lower()
        if code is not None:
            return code
    return "zh" if _CJK_RE.search(text) else "en"


def _normalize_segment(fn: Callable[[str], str], segment: str, failed: list) -> str:
    """One unprotected stretch; its surrounding spaces kept (the normalisers strip them).  A normaliser that fails
    on it leaves it as written: the stretch is added to ``failed`` (the result and the response say so) and
    logged."""
    if not segment.strip():
        return segment
    lead = segment[: len(segment) - len(segment.lstrip())]
    trail = segment[len(segment.rstrip()):]
    try:
        core = fn(segment.strip())
    except Exception as exc:
        logger.warning("Text normalisation failed on a segment (%s); keeping it unchanged.", type(exc).__name__)
        failed.append(segment.strip())
        return segment
    return lead + core + trail


def protected_spans(text: str, pinyin: bool) -> list[tuple[int, int]]:
    """The merged ``(start, end)`` spans that normalisation leaves verbatim."""
    spans = sorted([m.span() for m in _BRACKET_TAG_RE.finditer(text)]
                   + ([m.span() for m in _PINYIN_TONE_RE.finditer(text)] if pinyin else []))
    merged: list[list[int]] = []
    for start, end in spans:
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return [(start, end) for start, end in merged]


def normalize_text(text: str, language: Optional[str] = None) -> str:
    """``text`` with numbers, dates, currency and units in words, as ``generate(normalize_text=True)`` reads it.

    ``language`` is a code or a name (``None``: Chinese if the text has CJK characters, else English).
    A ``NormalizerMissing`` (an ``InvalidInput``) says how to install the libraries.  A stretch the
    normaliser fails on is read as written (``read_as_words`` says how many).
    """
    return read_as_words(text, language)[0]


@functools.lru_cache(maxsize=64)   # the app's preview and the generation that follows it normalise once
def read_as_words(text: str, language: Optional[str] = None) -> tuple[str, int]:
    """(``normalize_text``'s reading, the number of stretches the normaliser failed on and left as written)."""
    if not text or not text.strip():
        return text, 0
    code = _language_code(language, text)
    failed: list[str] = []
    if code not in ("zh", "en"):
        require(code)
        with GATE.slot(len(text)):   # text work has its own bounded queue (text_work.py)
            return _apply(text, functools.partial(_num2words, code=code), pinyin=False, failed=failed), len(failed)
    fn = build_normalizer(code)
    with GATE.slot(len(text)):   # one normaliser per language, shared by every thread: used by one at a time
        return _apply(text, fn, pinyin=code == "zh", failed=failed), len(failed)


def normalize_sentences(text: str, language: Optional[str] = None) -> str:
    """``text`` read as words one sentence at a time (``sentences.split_sentences``, by ``language``'s rules), each
    as ``normalize_text`` reads it alone: what sentence streaming speaks, so the first sentence can be read before
    the others (``engine/read_ahead.py``).
    WeTextProcessing's reading of a number can depend on the length of the text around it (after about 120
    characters, "21 to 14" became "twenty one to one four" instead of "... fourteen"), so this is the whole
    text's reading wherever that does not happen; num2words' reading (other languages) is always the same."""
    return read_sentences_as_words(text, language)[0]


def read_sentences_as_words(text: str, language: Optional[str] = None) -> tuple[str, int]:
    """(``normalize_sentences``' reading, the stretches the normaliser failed on: ``read_as_words``)."""
    readings = [read_as_words(piece, language) for piece in split_sentences(text, language)]
    return "".join(words for words, _ in readings), sum(failed for _, failed in readings)


def start_preload(languages: tuple[str, ...] = ("en",)):
    """A server's start: build the normalisers of ``languages`` in the background (``text_work``), so its first
    request does not wait for WeTextProcessing's grammars; nothing when the libraries are not installed."""
    if missing_modules():
        return None
    return preload_in_background(build_normalizer, languages)


def build_normalizer(code: str) -> Callable[[str], str]:
    """The normaliser of ``"en"`` or ``"zh"``, built once per process (a preload and a request wait for the
    one build: ``text_work.start_preload``)."""
    with _LOCK:
        return _normalizer(code)


def _apply(text: str, fn: Callable[[str], str], pinyin: bool, failed: list) -> str:
    out, last = [], 0
    for start, end in protected_spans(text, pinyin):
        if start > last:
            out.append(_normalize_segment(fn, text[last:start], failed))
        out.append(text[start:end])
        last = end
    if last < len(text):
        out.append(_normalize_segment(fn, text[last:], failed))
    return "".join(out)
