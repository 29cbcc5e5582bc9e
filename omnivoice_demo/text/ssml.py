"""SSML: the subset of the Speech Synthesis Markup Language this engine reads, parsed into segments.

``parse(markup, limits)`` reads a ``<speak>`` document with ``defusedxml`` (no DTD, no entity
declarations, no external entities: the XML bombs are refused before anything expands) and gives
a ``Document``: its ``segments`` in order (a stretch of text with its voice name, language and rate,
or a pause in samples at 24 kHz) and ``notes`` on what was read otherwise than written.

Elements:

* ``speak`` (the root), ``p``, ``s``: text (``xml:lang`` on any of them sets the language);
* ``break``: a pause of ``time`` (``500ms``, ``1.5s``) or ``strength`` (``none`` 0 to ``x-strong``
  1.25 s; ``medium``, 0.75 s, without either), inserted as that many samples of silence exactly;
* ``prosody rate``: the pace, as the model's ``speed`` (``x-slow`` ... ``x-fast``, ``80%``, ``+20%``,
  ``1.2``), multiplying the request's speed; ``pitch``, ``volume`` and the rest are noted and ignored;
* ``sub alias``: the alias is read instead of the text;
* ``say-as interpret-as``: ``characters``/``spell-out`` (one by one), and, through the text
  normaliser (``normalize.py``, an extra), ``cardinal``, ``ordinal``, ``digits``, ``date``, ``time``,
  ``telephone`` (``say_as``);
* ``phoneme``: ``alphabet="cmu-arpabet"`` (``ph="B EY1 S"`` -> ``[B EY1 S]``) or ``pinyin``
  (``ph="ni3 hao3"`` -> ``NI3 HAO3``), the model's own forms as ``lexicon.py`` writes them;
* ``voice name``: a voice by name (resolved by the front end: a saved voice, a design, an OpenAI name);
* ``lang xml:lang``: the language of a span;
* ``emphasis`` (its text) and ``mark`` (nothing): kept, with a note.

Anything else is refused with its line and column.  The markup is bounded (``max_ssml_chars``,
``max_ssml_elements``, nesting ``MAX_DEPTH``) and its text counts against ``max_text_chars``.
"""

from __future__ import annotations

import dataclasses
import re
from decimal import ROUND_HALF_EVEN, Decimal
from typing import Any, Optional
from xml.etree.ElementTree import ParseError, TreeBuilder

from defusedxml import DTDForbidden, EntitiesForbidden, ExternalReferenceForbidden
from defusedxml.ElementTree import DefusedXMLParser

from ..constants import SAMPLE_RATE
from ..errors import InvalidInput, check_control_tokens, excerpt
from ..settings.generation import GenerationConfig
from ..settings.limits import Limits
from .lexicon import kind_of
from .say_as import say_as_words

#: elements nested deeper than this are refused (a walk of the tree must not run out of stack)
MAX_DEPTH = 32
#: the longest single ``<break>``
MAX_BREAK_SECONDS = 10
#: notes kept of one document (then one saying more were left out)
MAX_NOTES = 12
#: ``<break strength>`` -> seconds (no attribute: ``medium``)
BREAK_STRENGTHS = {"none": "0", "x-weak": "0.25", "weak": "0.5", "medium": "0.75", "strong": "1",
                   "x-strong": "1.25"}
#: ``<prosody rate>`` words -> speed
RATES = {"x-slow": 0.5, "slow": 0.75, "medium": 1.0, "default": 1.0, "fast": 1.25, "x-fast": 1.5}
SAY_AS = ("characters", "spell-out", "cardinal", "ordinal", "digits", "date", "time", "telephone")
PHONEME_ALPHABETS = {"cmu-arpabet": "cmu", "x-cmu-arpabet": "cmu", "arpabet": "cmu", "pinyin": "pinyin",
                     "x-pinyin": "pinyin"}
ELEMENTS = ("speak", "p", "s", "break", "prosody", "sub", "say-as", "phoneme", "voice", "lang", "emphasis", "mark")
_XML_LANG = "{http://www.w3.org/XML/1998/namespace}lang"
_TIME = re.compile(r"\s*(\d+(?:\.\d+)?)\s*(ms|s)\s*", re.IGNORECASE)


def looks_like_ssml(text) -> bool:
    """Whether a text is SSML by the front ends' rule: it starts with ``<speak`` (after white space), or with an
    XML declaration or a ``<!DOCTYPE`` before a ``<speak`` (which the parse then refuses, saying why)."""
    if not isinstance(text, str):
        return False
    start = text.lstrip()
    return start.startswith("<speak") or (start.startswith(("<?xml", "<!DOCTYPE")) and "<speak" in start)


@dataclasses.dataclass(frozen=True)
class Segment:
    """A stretch of text read with one voice, language and rate, or (``text`` empty) a pause."""

    text: str = ""
    voice: Optional[str] = None      # a voice name (None: the request's voice)
    language: Optional[str] = None   # None: the request's language
    rate: float = 1.0                # multiplies the request's speed
    silence: int = 0                 # samples of silence at 24 kHz (a pause)
    line: int = 1                    # where it starts in the markup (for messages)


@dataclasses.dataclass(frozen=True)
class Document:
    segments: tuple[Segment, ...]
    notes: tuple[str, ...] = ()

    @property
    def text(self) -> str:
        """The text read, segment after segment (what counts against ``max_text_chars``)."""
        return " ".join(s.text for s in self.segments if s.text)


class SsmlError(InvalidInput):
    """The SSML is malformed or asks for what is not supported; the message gives the line and column."""

    def __init__(self, message: str, line: Optional[int] = None, column: Optional[int] = None):
        where = f" (line {line}, column {column})" if line is not None else ""
        super().__init__(f"SSML{where}: {message}", param="input")
        self.line, self.column = line, column


@dataclasses.dataclass(frozen=True)
class _Context:
    voice: Optional[str] = None
    language: Optional[str] = None
    rate: float = 1.0


class _Builder:
    """The tree builder of the parse: counts and bounds the elements and records where each one starts."""

    def __init__(self, limits: Limits):
        self.tree, self.limits = TreeBuilder(), limits
        self.expat: Any = None
        self.positions: dict = {}
        self.depth = 0

    def where(self) -> tuple[int, int]:
        return self.expat.CurrentLineNumber, self.expat.CurrentColumnNumber + 1

    def start(self, tag, attrs):
        element = self.tree.start(tag, attrs)
        self.positions[element] = self.where()
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise SsmlError(f"elements are nested more than {MAX_DEPTH} deep.", *self.where())
        self.limits.check("The SSML's number of elements", len(self.positions), "max_ssml_elements")
        return element

    def end(self, tag):
        self.depth -= 1
        return self.tree.end(tag)

    def data(self, data):
        self.tree.data(data)

    def close(self):
        return self.tree.close()


def parse(markup: str, limits: Optional[Limits] = None, language: Optional[str] = None) -> Document:
    """The segments and notes of an SSML document; ``SsmlError`` (an ``InvalidInput``) with the line and column
    for malformed or unsupported markup, a refused DTD or entity; ``ResourceLimitExceeded`` over ``limits``.
    ``language``: the request's, the language of text no ``xml:lang`` names (its ``say-as`` numbers are read in
    it); without either, the normaliser's rule without a language (Chinese for CJK text, else English)."""
    limits = limits or Limits()
    if not isinstance(markup, str) or not markup.strip():
        raise InvalidInput("The SSML is empty; write the text inside <speak>...</speak>.", param="input")
    limits.check("The SSML markup", len(markup), "max_ssml_chars", " characters")
    try:
        markup.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInput(f"The SSML holds a character that is not valid Unicode (a lone surrogate, at position "
                           f"{exc.start}); send it as UTF-8.", param="input") from None
    builder = _Builder(limits)
    parser = DefusedXMLParser(target=builder, forbid_dtd=True, forbid_entities=True, forbid_external=True)
    builder.expat = parser.parser
    try:
        parser.feed(markup)
        root = parser.close()
    except ParseError as exc:
        line, column = exc.position
        reason = str(exc).rsplit(": line ", 1)[0]
        raise SsmlError(f"not well-formed XML ({reason}); check the tags and write & as &amp; and < as &lt;.",
                        line, column + 1) from None
    except DTDForbidden:
        raise SsmlError("a DTD (<!DOCTYPE ...>) is not accepted: it can declare entities that expand without "
                        "bound or read files. Remove it.", *builder.where()) from None
    except EntitiesForbidden:
        raise SsmlError("entity declarations are not accepted (they can expand without bound). Remove them.",
                        *builder.where()) from None
    except ExternalReferenceForbidden:
        raise SsmlError("external entities are not accepted (they would read files or URLs). Remove them.",
                        *builder.where()) from None
    reader = _Reader(builder.positions, limits)
    if _local(root.tag) != "speak":
        raise SsmlError(f"the root element must be <speak>, not <{_local(root.tag)}>.", *builder.positions[root])
    reader.element(root, _Context(language=language.strip() or None if language else None), is_root=True)
    document = Document(tuple(reader.segments()), tuple(reader.notes))
    limits.check("The SSML's text", len(document.text), "max_text_chars", " characters")
    return document


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


class _Reader:
    """Walks the tree: text pieces with their context, and pauses, in order; notes once per kind."""

    def __init__(self, positions: dict, limits: Limits):
        self.positions, self.limits = positions, limits
        self.pieces: list = []          # (text, context, line) or silence samples (int)
        self.notes: list[str] = []
        self._noted: set[str] = set()
        self.normalised = 0             # characters of say-as read through the normaliser

    def note(self, key: str, message: str, element) -> None:
        if key in self._noted or len(self.notes) > MAX_NOTES:
            return
        self._noted.add(key)
        self.notes.append(f"{message} (first at line {self.positions[element][0]})" if len(self.notes) < MAX_NOTES
                          else "more notes were left out")

    def fail(self, message: str, element):
        raise SsmlError(message, *self.positions[element])

    def text(self, text: Optional[str], context: _Context, element) -> None:
        if text:
            self.pieces.append((text, context, self.positions[element][0]))

    def element(self, element, context: _Context, is_root: bool = False) -> None:
        tag = _local(element.tag)
        if tag not in ELEMENTS:
            self.fail(f"<{tag}> is not supported; the elements read here are: "
                      f"{', '.join('<' + e + '>' for e in ELEMENTS)}.", element)
        if tag == "speak" and not is_root:
            self.fail("<speak> may only be the outermost element.", element)
        language = element.get(_XML_LANG)
        if language is not None:
            context = dataclasses.replace(context, language=language.strip() or None)
        elif tag == "lang":
            self.fail("<lang> needs xml:lang, the language of its text (e.g. xml:lang=\"fr\").", element)
        handler = getattr(self, "_" + tag.replace("-", "_"), None)
        found = handler(element, context) if handler is not None else None
        if isinstance(found, int):     # a pause (none: still a word boundary)
            if found:
                self.pieces.append(found)
            else:
                self.text(" ", context, element)
            return
        if isinstance(found, str):     # read as a text of its own (sub, say-as, phoneme)
            self.text(f" {found} ", context, element)
            return
        context = found or context     # the context of its content (voice, prosody)
        if tag in ("p", "s"):
            self.text(" ", context, element)
        self.text(element.text, context, element)
        for child in element:
            self.element(child, context)
            self.text(child.tail, context, element)
        if tag in ("p", "s"):
            self.text(" ", context, element)

    def _only_text(self, element, what: str) -> str:
        if len(element):
            self.fail(f"<{what}> holds text only, not <{_local(element[0].tag)}>.", element)
        return " ".join((element.text or "").split())

    def _break(self, element, context) -> int:
        if len(element) or (element.text or "").strip():
            self.fail("<break> is empty: write <break time=\"500ms\"/>.", element)
        time, strength = element.get("time"), element.get("strength")
        if time is not None:
            match = _TIME.fullmatch(time)
            if not match:
                self.fail(f"<break time> must be like 500ms or 1.5s, got {excerpt(time)}.", element)
            seconds = Decimal(match.group(1)) / (1000 if match.group(2).lower() == "ms" else 1)
        else:
            strength = (strength or "medium").strip().lower()
            if strength not in BREAK_STRENGTHS:
                self.fail(f"<break strength> must be one of {', '.join(BREAK_STRENGTHS)}, got {excerpt(strength)}.",
                          element)
            seconds = Decimal(BREAK_STRENGTHS[strength])
        if seconds > MAX_BREAK_SECONDS:
            self.fail(f"a <break> is at most {MAX_BREAK_SECONDS} s, got {seconds:g} s; write several for longer.",
                      element)
        return int((seconds * SAMPLE_RATE).to_integral_value(rounding=ROUND_HALF_EVEN))

    def _prosody(self, element, context):
        for attribute in sorted(set(element.attrib) - {"rate"}):
            self.note(f"prosody {attribute}", f"<prosody {_local(attribute)[:40]}> is not supported and was ignored",
                      element)
        rate = element.get("rate")
        if rate is not None:
            return dataclasses.replace(context, rate=self._rate(rate.strip().lower(), context.rate, element))
        return None

    def _rate(self, value: str, current: float, element) -> float:
        if value in RATES:
            rate = RATES[value]
        else:
            match = re.fullmatch(r"([+-])?(\d+(?:\.\d+)?)(%)?", value)
            if not match:
                self.fail(f"<prosody rate> must be x-slow, slow, medium, fast, x-fast, a percentage (80%, +20%) "
                          f"or a number (1.2), got {excerpt(value)}.", element)
            sign, number, percent = match.groups()
            amount = float(number) / (100 if percent else 1)
            if sign:   # a change of the rate in force
                rate = current * (1 + amount if sign == "+" else 1 - amount) if percent else current + (
                    amount if sign == "+" else -amount)
            else:
                rate = amount
        speed = GenerationConfig.setting("speed")
        if not speed.low <= rate <= speed.high:
            clamped = min(max(rate, speed.low), speed.high)
            self.note(f"rate {value}", f"<prosody rate={excerpt(value, 20)}> is {rate:g} times the normal pace; the "
                                       f"model reads {speed.low:g} to {speed.high:g}, so {clamped:g} was used", element)
            rate = clamped
        return rate

    def _sub(self, element, context) -> str:
        alias = element.get("alias")
        if alias is None or not alias.strip():
            self.fail("<sub> needs alias, the text to read instead (e.g. <sub alias=\"World Wide Web\">WWW</sub>).",
                      element)
        self._only_text(element, "sub")
        try:
            check_control_tokens(alias, "The SSML's <sub alias>")
        except InvalidInput as exc:
            self.fail(str(exc), element)
        return " ".join(alias.split())

    def _say_as(self, element, context) -> str:
        kind = (element.get("interpret-as") or "").strip().lower()
        if kind not in SAY_AS:
            self.fail(f"<say-as interpret-as> must be one of {', '.join(SAY_AS)}, got {excerpt(kind)}.", element)
        for attribute in sorted(set(element.attrib) - {"interpret-as"}):
            self.note(f"say-as {attribute}", f"<say-as {_local(attribute)[:40]}> is not supported and was ignored",
                      element)
        text = self._only_text(element, "say-as")
        if not text:
            self.fail("<say-as> is empty.", element)
        if kind in ("characters", "spell-out"):
            return " ".join(ch for ch in text if not ch.isspace())
        self.normalised += len(text)   # the normaliser's time grows with its text: bounded as normalize_text is
        self.limits.check("The SSML's say-as text read through the normaliser", self.normalised,
                          "max_normalize_chars", " characters")
        return say_as_words(kind, text, context.language, lambda message: self.fail(message, element))

    def _phoneme(self, element, context) -> str:
        alphabet = (element.get("alphabet") or "").strip().lower()
        if alphabet not in PHONEME_ALPHABETS:
            self.fail(f"<phoneme alphabet> must be cmu-arpabet or pinyin (the model's own forms), got "
                      f"{excerpt(alphabet)}.", element)
        self._only_text(element, "phoneme")
        phones = " ".join((element.get("ph") or "").upper().split())
        kind = PHONEME_ALPHABETS[alphabet]
        said = f"[{phones}]" if kind == "cmu" else phones
        if kind_of(said) != kind:
            example = "B EY1 S" if kind == "cmu" else "ni3 hao3"
            self.fail(f"<phoneme ph> is not {alphabet} (e.g. ph=\"{example}\"), got {excerpt(element.get('ph'))}.",
                      element)
        return said

    def _voice(self, element, context):
        name = (element.get("name") or "").strip()
        if not name:
            self.fail("<voice> needs name: a saved voice, a design or an OpenAI voice name.", element)
        for attribute in sorted(set(element.attrib) - {"name", _XML_LANG}):
            self.note(f"voice {attribute}", f"<voice {_local(attribute)[:40]}> is not supported and was ignored (the "
                                            "voice is chosen by name)", element)
        return dataclasses.replace(context, voice=name)

    def _emphasis(self, element, context):
        self.note("emphasis", "<emphasis> is read as plain text (the model has no emphasis control)", element)

    def _mark(self, element, context):
        self.note("mark", "<mark> is kept as a place in the text only (no event is sent for it)", element)

    def segments(self) -> list[Segment]:
        """The pieces merged: text of one context in one segment, pauses next to each other summed."""
        out: list[Segment] = []
        parts: list[str] = []
        current, line = None, 1

        def flush():
            text = " ".join("".join(parts).split())
            if text:
                out.append(Segment(text=text, voice=current.voice, language=current.language, rate=current.rate,
                                   line=line))
            parts.clear()

        for piece in self.pieces:
            if isinstance(piece, int):
                flush()
                if out and out[-1].silence:
                    out[-1] = dataclasses.replace(out[-1], silence=out[-1].silence + piece)
                else:
                    out.append(Segment(silence=piece, line=line))
                continue
            text, context, at = piece
            if context != current:
                flush()
                current, line = context, at
            parts.append(text)
        flush()
        return out
