"""Reading a book (``read_book``): EPUB 2/3 (``epub``), Markdown or plain text -> title, author, language, cover
and chapters of paragraphs.

Every bound is checked before the memory is spent (``BookLimits``, in ``limits``):

* the file's size; for an EPUB (a zip), before anything is decompressed (``epub_archive``): the entries' count,
  each entry's and the total uncompressed size, and each entry's compression ratio (a zip bomb is refused by its
  directory);
* DRM: ``META-INF/encryption.xml`` that encrypts more than fonts (font obfuscation is no DRM), or a
  ``META-INF/rights.xml``, refuses the book: it cannot be read without its key (``epub_archive``);
* XML: every XML entry passes ``defusedxml`` (no entity declarations, no external references) before
  ``ebooklib`` (the EPUB library, which parses with lxml) sees it; the chapters' XHTML is parsed by lxml with
  entities unresolved and no network.  A chapter that is not well-formed XML is read leniently with lxml's
  HTML parser, and the reading says so (``Book.notes``);
* the cover: its bytes and its pixel size, read from the image's header (Pillow), never decoded;
* chapters: at most ``max_chapters``, counted from the table of contents before any chapter is read.

EPUB chapters (``epub``) come from the table of contents (the EPUB 3 nav, or the EPUB 2 NCX) in spine order, with their
titles; several entries in one file split it at their anchors; spine documents the table does not name go
on with the chapter before them, and those before the first chapter are front matter (skipped, and said).
Footnote references, footnotes and images are left out and counted.  A chapter's heading is its first paragraph (it is read out).  Markdown chapters start at its
top-level headings (``#``, or ``##`` when it has no ``#``); plain text chapters start at a marker line
(``chapter_marker``; by default a short line starting with "Chapter", "Part", "Prologue" or "Epilogue").
Text must be UTF-8 unless an ``encoding`` is named (``cp1252``, ``latin-1``, ``shift_jis``, ...).
"""

from __future__ import annotations

import dataclasses
import pathlib
import re
from typing import Optional

from ..errors import InvalidInput, excerpt
from .contents import Book, Chapter, bounded, check_chapter_count, finished, language_tag
from .epub import read_epub
from .front_matter import split_front_matter, split_title_block
from .limits import BookLimits

#: the kinds of file a book may be
SUFFIXES = (".epub", ".txt", ".md", ".markdown")
#: the default marker of a plain text chapter: a short line starting with one of these words
DEFAULT_MARKER = r"(?i)^\s*(chapter|part|book|prologue|epilogue|preface|introduction)\b.{0,70}$"


def read_book(path, limits: Optional[BookLimits] = None, encoding: Optional[str] = None,
              chapter_marker: Optional[str] = None) -> Book:
    """The book at ``path`` (``.epub``, ``.md``/``.markdown`` or ``.txt``), checked against ``limits``."""
    limits = limits or BookLimits()
    path = pathlib.Path(path)
    if not path.is_file():
        raise InvalidInput(f"The book {path.name} does not exist; give an .epub, .md or .txt file.", param="input")
    suffix = path.suffix.lower()
    if suffix not in SUFFIXES:
        raise InvalidInput(f"{path.name}: a book must be .epub, .md or .txt (not {suffix or 'no suffix'}).",
                           param="input")
    size = path.stat().st_size
    if size > limits.max_file_bytes:
        raise InvalidInput(f"{path.name} is {size / 2**20:.1f} MiB; a book may be at most "
                           f"{limits.max_file_bytes / 2**20:.0f} MiB.", param="input")
    if suffix == ".epub":
        return read_epub(path, limits, encoding)
    text = decode_text(path.read_bytes(), path.name, encoding)
    if suffix == ".txt":
        return read_plain(text, path.stem, limits, chapter_marker)
    return read_markdown(text, path.stem, limits)


def book_of_chapters(book: Book, chosen: Optional[str]) -> Book:
    """``book`` with only the chapters ``chosen`` names: ``"1-3,5"`` (numbers from 1, as listed), in book order
    and keeping their numbers (``Book.numbered``)."""
    if not chosen:
        return book
    numbers = sorted(parse_chapter_choice(chosen, len(book.chapters)))
    return dataclasses.replace(book, chapters=tuple(book.chapters[n - 1] for n in numbers), numbers=tuple(numbers),
                               whole_chapters=len(book.chapters), whole=book.chapters)


def parse_chapter_choice(text: str, count: int) -> list[int]:
    numbers: list[int] = []
    for part in text.split(","):
        part = part.strip()
        match = re.fullmatch(r"(\d+)(?:\s*-\s*(\d+))?", part)
        if not match:
            raise InvalidInput(f"Chapters: {excerpt(part)} is no chapter number or range; write for example 1-3,5.",
                               param="chapters")
        low, high = int(match.group(1)), int(match.group(2) or match.group(1))
        if not 1 <= low <= high <= count:
            raise InvalidInput(f"Chapters: {part} is outside the book's chapters 1-{count}.", param="chapters")
        numbers += [n for n in range(low, high + 1) if n not in numbers]
    return numbers


# --- text and Markdown ------------------------------------------------------------------------------------------

def decode_text(data: bytes, name: str, encoding: Optional[str]) -> str:
    """UTF-8 (with or without its BOM), or the named ``encoding``; a clear error otherwise."""
    if encoding:
        try:
            return data.decode(encoding)
        except LookupError:
            raise InvalidInput(f"--encoding {encoding!r} is no encoding Python knows (try cp1252, latin-1, "
                               "shift_jis, gb18030).", param="encoding") from None
        except UnicodeDecodeError as exc:
            raise InvalidInput(f"{name} is not {encoding}: byte 0x{data[exc.start]:02x} at offset {exc.start} "
                               "cannot be read; name its encoding with --encoding.", param="encoding") from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"{name} is not UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start}); it is in an "
                           "older encoding: name it with --encoding (for example cp1252 or latin-1 for Western "
                           "European text, shift_jis, gb18030), or save the file as UTF-8.",
                           param="encoding") from None


def read_plain(text: str, title: str, limits: BookLimits, chapter_marker: Optional[str] = None) -> Book:
    try:
        marker = re.compile(chapter_marker if chapter_marker else DEFAULT_MARKER)
    except re.error as exc:
        raise InvalidInput(f"--chapter-marker is not a valid pattern: {exc}.", param="chapter_marker") from None
    sections: list[tuple[str, list[str]]] = []
    current: list[str] = []
    heading, lines = split_title_block(text.splitlines(), marker)
    for line in lines:
        if marker.search(line) and len(line.strip()) <= 120:
            sections.append((line.strip(), []))
            current = sections[-1][1]
            check_chapter_count(len(sections), limits)
            continue
        if not sections:
            sections.append(("", []))
            current = sections[-1][1]
        current.append(line)
    chapters, skipped = [], []
    for number, (marked, body) in enumerate(sections, 1):
        paragraphs = _paragraphs_of_lines(body, limits)
        if marked == "" and not paragraphs:
            continue
        if not paragraphs:
            skipped.append(f"empty chapter: {marked}")
            continue
        # the heading is read out, as an EPUB's chapter heading is (it is part of its text)
        chapters.append(Chapter(title=marked or heading.title or title,
                                paragraphs=tuple(([marked] if marked else []) + paragraphs), source=f"section {number}"))
    return finished(Book(title=heading.title or title, author=heading.author, language=None, chapters=tuple(chapters),
                         skipped=tuple(skipped), notes=heading.notes, kind="text"))


def _paragraphs_of_lines(lines: list[str], limits: BookLimits) -> list[str]:
    paragraphs, current = [], []
    for line in lines + [""]:
        if line.strip():
            current.append(line.strip())
        elif current:
            paragraphs.append(bounded(" ".join(current), limits))
            current = []
    return paragraphs


def read_markdown(text: str, title: str, limits: BookLimits) -> Book:
    """Chapters at the top-level headings, read with ``markdown-it-py`` (CommonMark): emphasis and links become
    their text; images, code blocks and HTML are left out (and counted)."""
    from markdown_it import MarkdownIt

    front, text = split_front_matter(text)
    tokens = MarkdownIt("commonmark").parse(text)
    levels = [int(t.tag[1]) for t in tokens if t.type == "heading_open"]
    top = min(levels) if levels else None
    sections: list[list] = []
    skipped = {"images": 0, "code blocks": 0, "HTML blocks": 0}
    book_title = None
    index = 0
    while index < len(tokens):
        token = tokens[index]
        if token.type == "heading_open":
            words = _inline_text(tokens[index + 1], skipped)
            if int(token.tag[1]) == top:
                sections.append([words, []])
                check_chapter_count(len(sections), limits)
            else:
                _section(sections).append(words)
            index += 3
            continue
        if token.type == "inline":
            words = _inline_text(token, skipped)
            if words:
                _section(sections).append(bounded(words, limits))
        elif token.type in ("fence", "code_block"):
            skipped["code blocks"] += 1
        elif token.type == "html_block":
            skipped["HTML blocks"] += 1
        index += 1
    chapters, notes = [], []
    for number, (heading, paragraphs) in enumerate(sections, 1):
        if not paragraphs:
            if heading is not None:
                notes.append(f"empty chapter: {heading}")
            continue
        chapters.append(Chapter(title=heading or title, paragraphs=tuple(([heading] if heading else []) + paragraphs),
                                source=f"section {number}"))
    if levels and sections and sections[0][0] is not None and len(levels) == 1:
        book_title = sections[0][0]
    said = [f"{count} {what}" for what, count in skipped.items() if count] + notes
    stated: list[str] = list(front.notes)
    return finished(Book(title=front.title or book_title or title, author=front.author,
                         language=language_tag(front.language, stated), chapters=tuple(chapters), skipped=tuple(said),
                         notes=tuple(stated), kind="markdown"))


def _section(sections: list[list]) -> list[str]:
    if not sections:
        sections.append([None, []])
    return sections[-1][1]


def _inline_text(token, skipped: dict) -> str:
    parts = []
    for child in token.children or []:
        if child.type == "image":
            skipped["images"] += 1
        elif child.type in ("text", "code_inline"):
            parts.append(child.content)
        elif child.type in ("softbreak", "hardbreak"):
            parts.append(" ")
    return re.sub(r"\s+", " ", "".join(parts)).strip()
