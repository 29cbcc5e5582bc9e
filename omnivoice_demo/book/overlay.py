"""A read-along EPUB 3: the book's text with media overlays (SMIL) that sync it to its audio.

Each chapter is an XHTML document whose sentences are ``<span id="c01s0001">``s, the chapter's audio as AAC
in MP4 (``audio/mp4``, an EPUB 3 core media type; AAC costs about half of MP3 to encode here), and a SMIL document with one ``<par>`` per sentence: the span and the audio's
``clipBegin``/``clipEnd``.  The package declares each overlay (``media-overlay``), each one's duration and the
whole book's (``media:duration``), and the class a reading system gives the sentence being read
(``media:active-class``).  Written with ``zipfile`` (the ``mimetype`` entry first, stored), to the EPUB 3.3
Media Overlays rules.

Word level: a ``Unit`` is any span with its times; a sentence's units are the sentence itself, or, when the
book was made with word timings (``omnivoice book --word-timestamps``: each sentence's batch sidecar keeps its
``words``, ``[{"word", "start", "end"}]`` in the sentence's own seconds), its words, each its own span and
``<par>`` inside the sentence's ``<seq>``.  The page shows the book's own text: a word's span is found in the
sentence as the book writes it, in order, and a sentence whose spoken words are not its written ones (a
number read as words, a lexicon respelling) stays one unit.  ``units_of`` is the one place that chooses.
"""

from __future__ import annotations

import dataclasses
import re
import tempfile
import pathlib
import zipfile
from typing import Optional, Sequence
from xml.sax.saxutils import escape as _escape, quoteattr

ACTIVE_CLASS = "-epub-media-overlay-active"
#: characters XML 1.0 cannot hold at all, escaped or not (C0 controls but tab and line ends, lone surrogates,
#: U+FFFE/U+FFFF): left out of every text and attribute, so each file stays XML whatever the book holds
_NOT_XML = re.compile("[^\u0009\u000a\u000d\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def escape(value) -> str:
    """A text node: through the standard XML library's escaping (``&``, ``<``, ``>``)."""
    return _escape(_NOT_XML.sub("", str(value)))


def attr(value) -> str:
    """An attribute's value, quoted and escaped by the standard XML library (``quoteattr``: quotes, ``&``, ``<``,
    line ends)."""
    return quoteattr(_NOT_XML.sub("", str(value)))


@dataclasses.dataclass(frozen=True)
class Unit:
    """A span of text and where the chapter's audio says it (seconds)."""

    id: str
    text: str
    start: float
    end: float


def units_of(sentence_id: str, text: str, start: float, end: float,
             words: Optional[Sequence[dict]] = None) -> list[Unit]:
    """The sentence as one unit, or as its words' units when word timings are given and each word is found in
    ``text`` in order (``word_places``).  ``start``/``end``: the sentence's place in the chapter's audio."""
    from ..batch.subtitles import positive_spans

    if not words or word_places(text, [w["word"] for w in words]) is None:
        return [Unit(sentence_id, text, *positive_spans([(start, end)])[0])]
    # each clip with a length (a word the aligner gave none), inside the sentence's audio
    spans = positive_spans([(start + float(w["start"]), min(start + float(w["end"]), end)) for w in words],
                           lower=start, upper=end)
    return [Unit(f"{sentence_id}w{n:03d}", w["word"], *span) for n, (w, span) in enumerate(zip(words, spans), 1)]


def word_places(text: str, words: Sequence[str]) -> Optional[list[tuple[int, int]]]:
    """Where each of ``words`` lies in ``text`` (start, end), each after the one before, with only spaces and
    punctuation between them; None when a word is not there (the text spoken was not the text written).  A
    word is looked for without the punctuation the recogniser attaches to it (``"harbour."``, the model's
    added full stop), which stays outside its span."""
    places, cursor = [], 0
    for word in words:
        core = _core(word)
        found = text.find(core, cursor) if core else -1
        if found < 0 or any(ch.isalnum() for ch in text[cursor:found]):
            return None
        places.append((found, found + len(core)))
        cursor = found + len(core)
    return None if any(ch.isalnum() for ch in text[cursor:]) else places


def _core(word: str) -> str:
    """``word`` without the punctuation (anything not a letter or digit) at its ends."""
    begin, end = 0, len(word)
    while begin < end and not word[begin].isalnum():
        begin += 1
    while end > begin and not word[end - 1].isalnum():
        end -= 1
    return word[begin:end]


def sentence_markup(sentence_id: str, text: str, units: Sequence[Unit]) -> str:
    """The sentence's span; with word units, each word a span inside it and the text between them as written."""
    if len(units) == 1 and units[0].id == sentence_id:
        return f'<span id={attr(sentence_id)}>{escape(text)}</span>'
    places = word_places(text, [u.text for u in units]) or []
    inner, cursor = [], 0
    for unit, (begin, finish) in zip(units, places):
        inner.append(escape(text[cursor:begin]) + f'<span id={attr(unit.id)}>{escape(text[begin:finish])}</span>')
        cursor = finish
    return f'<span id={attr(sentence_id)}>{"".join(inner)}{escape(text[cursor:])}</span>'


def clock(seconds: float) -> str:
    """A SMIL clock value, ``H:MM:SS.mmm``."""
    millis = int(round(seconds * 1000))
    hours, rest = divmod(millis, 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    return f"{hours}:{minutes:02d}:{rest // 1000:02d}.{rest % 1000:03d}"


def chapter_documents(number: int, title: str, paragraphs: list[list[tuple[str, str, list[Unit]]]],
                      audio_name: str, language: str) -> tuple[str, str]:
    """(the chapter's XHTML, its SMIL); ``paragraphs``: per paragraph, (sentence id, its text, its units) in
    order."""
    name = f"ch{number:02d}"
    body, pars = [], []
    for paragraph in paragraphs:
        spans = []
        for sentence_id, text, units in paragraph:
            spans.append(sentence_markup(sentence_id, text, units))
            if len(units) == 1 and units[0].id == sentence_id:
                pars.append(_par(name, units[0], audio_name))
            else:
                pars.append(f'<seq epub:textref={attr(f"{name}.xhtml#{sentence_id}")}>'
                            + "".join(_par(name, u, audio_name) for u in units) + "</seq>")
        body.append("<p>" + " ".join(spans) + "</p>")
    xhtml = ('<?xml version="1.0" encoding="utf-8"?>\n<!DOCTYPE html>\n'
             f'<html xmlns="http://www.w3.org/1999/xhtml" xmlns:epub="http://www.idpf.org/2007/ops" '
             f'lang={attr(language)} xml:lang={attr(language)}><head><title>{escape(title)}</title>'
             '<link rel="stylesheet" href="style.css" type="text/css"/></head>'
             f'<body><section epub:type="chapter">{"".join(body)}</section></body></html>')
    smil = ('<?xml version="1.0" encoding="utf-8"?>\n<smil xmlns="http://www.w3.org/ns/SMIL" '
            'xmlns:epub="http://www.idpf.org/2007/ops" version="3.0"><body>'
            f'<seq epub:textref={attr(f"{name}.xhtml")} epub:type="chapter">{"".join(pars)}</seq></body></smil>')
    return xhtml, smil


def _par(name: str, unit: Unit, audio_name: str) -> str:
    return (f'<par id={attr(f"p_{unit.id}")}><text src={attr(f"{name}.xhtml#{unit.id}")}/>'
            f'<audio src={attr(audio_name)} clipBegin={attr(clock(unit.start))} clipEnd={attr(clock(unit.end))}/>'
            '</par>')


def package(title: str, author: Optional[str], language: str, chapters: list[tuple[int, str, float]],
            cover_type: Optional[str]) -> str:
    """The OPF: ``chapters`` (number, title, seconds)."""
    items, spine, durations = [], [], []
    for number, _, seconds in chapters:
        name = f"ch{number:02d}"
        items.append(f'<item id={attr(name)} href={attr(f"{name}.xhtml")} media-type="application/xhtml+xml" '
                     f'media-overlay={attr(f"{name}_overlay")}/>')
        items.append(f'<item id={attr(f"{name}_overlay")} href={attr(f"{name}.smil")} '
                     'media-type="application/smil+xml"/>')
        items.append(f'<item id={attr(f"{name}_audio")} href={attr(f"audio/{number:02d}.m4a")} '
                     'media-type="audio/mp4"/>')
        spine.append(f'<itemref idref={attr(name)}/>')
        durations.append(f'<meta property="media:duration" refines={attr(f"#{name}_overlay")}>'
                         f'{escape(clock(seconds))}</meta>')
    if cover_type:
        items.append(f'<item id="cover" href="cover.img" media-type={attr(cover_type)} properties="cover-image"/>')
    total = sum(seconds for _, _, seconds in chapters)
    creator = f"<dc:creator>{escape(author)}</dc:creator>" if author else ""
    return ('<?xml version="1.0" encoding="utf-8"?>\n<package xmlns="http://www.idpf.org/2007/opf" version="3.0" '
            'unique-identifier="id"><metadata xmlns:dc="http://purl.org/dc/elements/1.1/">'
            f'<dc:identifier id="id">omnivoice-readalong-{escape(title)}</dc:identifier>'
            f'<dc:title>{escape(title)}</dc:title>{creator}<dc:language>{escape(language)}</dc:language>'
            '<meta property="dcterms:modified">2000-01-01T00:00:00Z</meta>'
            f'<meta property="media:duration">{escape(clock(total))}</meta>'
            f'<meta property="media:active-class">{ACTIVE_CLASS}</meta>{"".join(durations)}</metadata>'
            '<manifest><item id="nav" href="nav.xhtml" media-type="application/xhtml+xml" properties="nav"/>'
            f'<item id="css" href="style.css" media-type="text/css"/>{"".join(items)}</manifest>'
            f'<spine>{"".join(spine)}</spine></package>')


def navigation(title: str, chapters: list[tuple[int, str, float]]) -> str:
    links = "".join(f'<li><a href={attr(f"ch{n:02d}.xhtml")}>{escape(t)}</a></li>' for n, t, _ in chapters)
    return ('<?xml version="1.0" encoding="utf-8"?>\n<!DOCTYPE html>\n<html xmlns="http://www.w3.org/1999/xhtml" '
            f'xmlns:epub="http://www.idpf.org/2007/ops"><head><title>{escape(title)}</title></head><body>'
            f'<nav epub:type="toc"><h1>{escape(title)}</h1><ol>{links}</ol></nav></body></html>')


CONTAINER = ('<?xml version="1.0"?>\n<container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container">'
             '<rootfiles><rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/>'
             '</rootfiles></container>')
STYLE = f".{ACTIVE_CLASS} {{ background-color: #ffe08a; }}\n"


def readalong_language(value: Optional[str]) -> str:
    """The ``lang`` of every page: ``value`` when it is a BCP 47 tag (``langcodes``: the IANA registry), as its
    standard form, else ``und`` (undetermined)."""
    from .contents import language_tag

    return language_tag(value, []) or "und"


def write_readalong(path, plan, chapters, output_folder: pathlib.Path) -> None:
    """The read-along EPUB of a made book (``project.BookPlan`` and its ``JoinedChapter``s) at ``path``."""
    from .containers import write_chapter_audio

    language = readalong_language(plan.language or plan.book.language)
    listed = [(c.number, c.title, c.seconds) for c in chapters]
    with zipfile.ZipFile(path, "w") as archive, tempfile.TemporaryDirectory() as scratch:
        archive.writestr(zipfile.ZipInfo("mimetype"), "application/epub+zip")   # first, stored
        archive.writestr("META-INF/container.xml", CONTAINER, compress_type=zipfile.ZIP_DEFLATED)
        archive.writestr("OEBPS/content.opf", package(plan.book.title, plan.book.author, language, listed,
                                                      plan.book.cover_type if plan.book.cover else None),
                                                      compress_type=zipfile.ZIP_DEFLATED)
        archive.writestr("OEBPS/nav.xhtml", navigation(plan.book.title, listed), compress_type=zipfile.ZIP_DEFLATED)
        archive.writestr("OEBPS/style.css", STYLE)
        if plan.book.cover is not None:
            archive.writestr("OEBPS/cover.img", plan.book.cover)
        for chapter in chapters:
            mine = [s for s in plan.sentences if s.chapter == chapter.number]
            paragraphs: list[list] = []
            last = None
            words = chapter.words or [[]] * len(mine)
            for n, (sentence, cue, sentence_words) in enumerate(zip(mine, chapter.cues, words), 1):
                if sentence.paragraph != last:
                    paragraphs.append([])
                    last = sentence.paragraph
                sentence_id = f"c{chapter.number:02d}s{n:04d}"
                paragraphs[-1].append((sentence_id, sentence.text,
                                       units_of(sentence_id, sentence.text, cue.start, cue.end, sentence_words)))
            audio_name = f"audio/{chapter.number:02d}.m4a"
            xhtml, smil = chapter_documents(chapter.number, chapter.title, paragraphs, audio_name, language)
            archive.writestr(f"OEBPS/ch{chapter.number:02d}.xhtml", xhtml, compress_type=zipfile.ZIP_DEFLATED)
            archive.writestr(f"OEBPS/ch{chapter.number:02d}.smil", smil, compress_type=zipfile.ZIP_DEFLATED)
            m4a = pathlib.Path(scratch) / f"{chapter.number:02d}.m4a"
            write_chapter_audio(m4a, output_folder / chapter.file, "m4a", title=chapter.title,
                                album=plan.book.title, author=plan.book.author, track=chapter.number)
            archive.write(m4a, f"OEBPS/{audio_name}")
