"""Reading a book: EPUB 2/3, Markdown or plain text -> title, author, language, cover and chapters of paragraphs.

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

EPUB chapters come from the table of contents (the EPUB 3 nav, or the EPUB 2 NCX) in spine order, with their
titles; several entries in one file split it at their anchors; spine documents the table does not name go
on with the chapter before them, and those before the first chapter are front matter (skipped, and said).
Footnote references, footnotes and images are left out and counted.  A chapter's heading is its first paragraph (it is read out).  Markdown chapters start at its
top-level headings (``#``, or ``##`` when it has no ``#``); plain text chapters start at a marker line
(``chapter_marker``; by default a short line starting with "Chapter", "Part", "Prologue" or "Epilogue").
Text must be UTF-8 unless an ``encoding`` is named (``cp1252``, ``latin-1``, ``shift_jis``, ...).
"""

from __future__ import annotations

import dataclasses
import io
import pathlib
import posixpath
import re
from typing import Optional
from urllib.parse import unquote

from ..errors import InvalidInput, ModelNotAvailable, excerpt
from .epub_archive import checked_zip, known_encoding, redeclared
from .limits import BookLimits

BOOK_INSTALL = ("pip install ebooklib==0.20 av==18.1.0 langcodes==3.5.1 (in a checkout: .venv/bin/pip install "
                "ebooklib==0.20 av==18.1.0 langcodes==3.5.1; scripts/run_app.sh installs them)")
#: the kinds of file a book may be
SUFFIXES = (".epub", ".txt", ".md", ".markdown")
#: the tags whose text is one paragraph (when they hold no other block)
BLOCKS = {"p", "h1", "h2", "h3", "h4", "h5", "h6", "li", "dt", "dd", "blockquote", "pre", "td", "th",
          "figcaption", "div", "section", "article", "aside", "header", "footer"}
#: ``epub:type`` values of notes (left out) and of note references (left out)
NOTE_TYPES = {"footnote", "endnote", "rearnote", "note", "footnotes", "endnotes", "rearnotes"}
NOTEREF_TYPES = {"noteref"}
#: the default marker of a plain text chapter: a short line starting with one of these words
DEFAULT_MARKER = r"(?i)^\s*(chapter|part|book|prologue|epilogue|preface|introduction)\b.{0,70}$"


@dataclasses.dataclass(frozen=True)
class Chapter:
    title: str
    paragraphs: tuple[str, ...]
    source: str = ""        # the file (and anchor) it came from


@dataclasses.dataclass(frozen=True)
class Book:
    title: str
    author: Optional[str]
    language: Optional[str]      # as the book states it ("en-GB"); None when it does not
    chapters: tuple[Chapter, ...]
    cover: Optional[bytes] = None
    cover_type: Optional[str] = None   # "image/jpeg" or "image/png"
    skipped: tuple[str, ...] = ()      # what was left out, in words ("front matter: cover.xhtml", "3 images")
    notes: tuple[str, ...] = ()        # how it was read (a chapter read leniently, ...)
    kind: str = "text"                 # "epub", "markdown" or "text"
    #: chapters whose text is largely U+FFFD (bytes that were not UTF-8 and named no encoding), in words
    garbled: tuple[str, ...] = ()
    # each chapter's number in the whole book (empty: 1, 2, ...) and the whole book's count (0: these): a book
    # made in parts (``book_of_chapters``) keeps its chapters' numbers, so their files and markers do too
    numbers: tuple[int, ...] = ()
    whole_chapters: int = 0

    def numbered(self) -> list[tuple[int, "Chapter"]]:
        """(the chapter's number in the whole book, the chapter), in book order."""
        return list(zip(self.numbers or range(1, len(self.chapters) + 1), self.chapters))

    @property
    def chapter_count(self) -> int:
        """How many chapters the whole book has (not only those chosen)."""
        return self.whole_chapters or len(self.chapters)


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
                               whole_chapters=len(book.chapters))


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
    lines = text.splitlines()
    for line in lines:
        if marker.search(line) and len(line.strip()) <= 120:
            sections.append((line.strip(), []))
            current = sections[-1][1]
            _check_chapter_count(len(sections), limits)
            continue
        if not sections:
            sections.append(("", []))
            current = sections[-1][1]
        current.append(line)
    chapters, skipped = [], []
    for number, (heading, body) in enumerate(sections, 1):
        paragraphs = _paragraphs_of_lines(body, limits)
        if heading == "" and not paragraphs:
            continue
        if not paragraphs:
            skipped.append(f"empty chapter: {heading}")
            continue
        # the heading is read out, as an EPUB's chapter heading is (it is part of its text)
        chapters.append(Chapter(title=heading or title, paragraphs=tuple(([heading] if heading else []) + paragraphs),
                                source=f"section {number}"))
    return _finished(Book(title=title, author=None, language=None, chapters=tuple(chapters), skipped=tuple(skipped),
                          kind="text"))


def _paragraphs_of_lines(lines: list[str], limits: BookLimits) -> list[str]:
    paragraphs, current = [], []
    for line in lines + [""]:
        if line.strip():
            current.append(line.strip())
        elif current:
            paragraphs.append(_bounded(" ".join(current), limits))
            current = []
    return paragraphs


def read_markdown(text: str, title: str, limits: BookLimits) -> Book:
    """Chapters at the top-level headings, read with ``markdown-it-py`` (CommonMark): emphasis and links become
    their text; images, code blocks and HTML are left out (and counted)."""
    from markdown_it import MarkdownIt

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
                _check_chapter_count(len(sections), limits)
            else:
                _section(sections).append(words)
            index += 3
            continue
        if token.type == "inline":
            words = _inline_text(token, skipped)
            if words:
                _section(sections).append(_bounded(words, limits))
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
    return _finished(Book(title=book_title or title, author=None, language=None, chapters=tuple(chapters),
                          skipped=tuple(said), kind="markdown"))


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


# --- EPUB -------------------------------------------------------------------------------------------------------

def read_epub(path: pathlib.Path, limits: BookLimits, encoding: Optional[str] = None) -> Book:
    """``encoding``: how to read a chapter that is not UTF-8 and declares no encoding of its own."""
    if encoding:
        known_encoding(encoding)
    checked = checked_zip(path, limits, encoding)
    entries = checked.sizes
    try:
        import ebooklib
        from ebooklib import epub
    except ImportError:
        raise ModelNotAvailable(f"Reading an EPUB needs ebooklib, which is not installed: {BOOK_INSTALL}.") from None

    class NeededOnly(epub.EpubReader):
        """ebooklib's reader, given only what the package and the spine need (the rest of the manifest reads as
        empty: never unpacked), and each XML file as the UTF-8 the safety check parsed."""

        def read_file(self, name):
            name = posixpath.normpath(name)
            if name in checked.xml:
                return checked.xml[name]
            if name not in checked.needed:
                if name not in entries:
                    raise KeyError(name)
                return b""
            return super().read_file(name)

    try:
        reader = NeededOnly(str(path), options={"ignore_ncx": False})
        document = reader.load()
        reader.process()
    except InvalidInput:
        raise
    except Exception as exc:  # noqa: BLE001 - ebooklib raises many kinds for a broken package; say which file
        raise InvalidInput(f"{path.name} is not a readable EPUB ({type(exc).__name__}: {str(exc)[:200]}); "
                           "check it with epubcheck.", param="input") from None
    toc = _toc_entries(document.toc)
    _check_chapter_count(len(toc), limits)
    titles: dict[str, list[tuple[Optional[str], str]]] = {}
    for href, title in toc:
        name, _, fragment = href.partition("#")
        titles.setdefault(posixpath.normpath(unquote(name)), []).append((fragment or None, title))
    chapters: list[list] = []
    skipped: list[str] = []
    notes: list[str] = []
    counts = {"footnote references": 0, "footnotes": 0, "images": 0}
    for idref, linear in document.spine:
        item = document.get_item_with_id(idref)
        if item is None or item.get_type() != ebooklib.ITEM_DOCUMENT:
            continue
        name = posixpath.normpath(item.get_name())
        if str(linear).lower() == "no":
            skipped.append(f"not in the reading order: {name}")
            continue
        # the file's own bytes: ebooklib's get_content() of a document rebuilds it with a lenient HTML parser
        blocks = _xhtml_blocks(checked.xml.get(name, item.content), name, entries.get(name, 0), limits, counts,
                               notes)
        starts = titles.get(name, [])
        anchors = {fragment: title for fragment, title in starts if fragment}
        whole = next((title for fragment, title in starts if not fragment), None)
        if whole is not None:
            chapters.append([whole, [], name])
        for anchor_ids, text in blocks:
            hit = next((anchors[a] for a in anchor_ids if a in anchors), None)
            if hit is not None and not (chapters and chapters[-1][0] == hit and not chapters[-1][1]):
                chapters.append([hit, [], name])
            if not chapters:
                if f"front matter: {name}" not in skipped:
                    skipped.append(f"front matter: {name}")
                continue
            chapters[-1][1].append(text)
        if not starts and not chapters and not blocks:
            skipped.append(f"front matter: {name}")
    said = [f"{count} {what}" for what, count in counts.items() if count]
    found = []
    for title, paragraphs, source in chapters:
        if paragraphs:
            found.append(Chapter(title=title, paragraphs=tuple(paragraphs), source=source))
        else:
            said.append(f"empty chapter: {title}")
    cover, cover_type = _cover(document, ebooklib, limits)
    return _finished(Book(title=_metadata(document, "title") or path.stem, author=_metadata(document, "creator"),
                          language=language_tag(_metadata(document, "language"), notes), chapters=tuple(found),
                          cover=cover,
                          cover_type=cover_type, skipped=tuple(skipped + said), notes=tuple(notes + checked.notes),
                          kind="epub"))


def _toc_entries(toc) -> list[tuple[str, str]]:
    """(href, title) of every entry of ebooklib's table of contents, a section before its children (reading
    order)."""
    found = []
    for entry in toc:
        if isinstance(entry, (tuple, list)):
            found += _toc_entries([entry[0]]) + _toc_entries(entry[1])
        elif getattr(entry, "href", None):
            found.append((entry.href, (getattr(entry, "title", "") or "").strip() or entry.href))
    return found


def _xhtml_blocks(data: bytes, name: str, size: int, limits: BookLimits, counts: dict,
                  notes: list[str]) -> list[tuple[tuple[str, ...], str]]:
    """(ids met since the block before, the block's text) of every paragraph of an XHTML document."""
    from lxml import etree, html

    parser = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False,
                             recover=False)
    try:
        root = etree.fromstring(data, parser)
    except etree.XMLSyntaxError as exc:
        notes.append(f"{name} is not well-formed XHTML (line {exc.lineno}: {exc.msg}); it was read as HTML")
        try:
            # as UTF-8 (an EPUB's own encoding), never as lxml's guess (Latin-1 without a <meta>): a byte that is
            # not UTF-8 becomes U+FFFD, which ``garbled_chapters`` counts, and ``--encoding`` reads it right
            text = redeclared(data.decode("utf-8", errors="replace")) if not data.startswith(
                (b"\xff\xfe", b"\xfe\xff")) else data.decode("utf-16", errors="replace")
            root = html.fromstring(re.sub(r"^\ufeff?\s*<\?xml[^>]*\?>", "", text),
                                   parser=html.HTMLParser(no_network=True, huge_tree=False))
        except (etree.ParserError, ValueError):
            raise InvalidInput(f"{name} of the book cannot be read, not even as HTML; repair the book "
                               "(epubcheck names the problem).", param="input") from None
    blocks: list[tuple[tuple[str, ...], str]] = []
    pending_ids: list[str] = []

    def local(tag) -> str:
        return tag.rsplit("}", 1)[-1].lower() if isinstance(tag, str) else ""

    def types(element) -> set[str]:
        value = next((v for k, v in element.attrib.items() if k.startswith("{") and k.endswith("}type")), "") or ""
        return set(value.split()) | ({"noteref"} if element.get("role") == "doc-noteref" else set()) | (
            {"footnote"} if element.get("role") in ("doc-footnote", "doc-endnote") else set())

    def text_of(element) -> str:
        parts: list[str] = []

        def walk(node):
            for child in node:
                tag = local(child.tag)
                if tag in ("img", "svg", "image"):
                    counts["images"] += 1
                elif types(child) & NOTEREF_TYPES or (tag == "sup" and child.find(".//{*}a") is not None
                                                      or tag == "a" and re.fullmatch(r"\W*\d{1,3}\W*",
                                                                                    "".join(child.itertext()))):
                    counts["footnote references"] += 1
                elif tag in ("script", "style"):
                    pass
                else:
                    if child.get("id"):
                        pending_ids.append(child.get("id"))
                    parts.append(child.text or "")
                    walk(child)
                parts.append(child.tail or "")
        parts.append(node_text(element))
        walk(element)
        return re.sub(r"\s+", " ", "".join(parts)).strip()

    def node_text(element) -> str:
        return element.text or ""

    def visit(element):
        for child in element:
            tag = local(child.tag)
            if tag in ("head", "script", "style", "nav"):
                continue
            if types(child) & NOTE_TYPES:
                counts["footnotes"] += 1
                continue
            if child.get("id"):
                pending_ids.append(child.get("id"))
            if tag in ("img", "svg", "image"):
                counts["images"] += 1
                continue
            if tag in BLOCKS and not any(local(d.tag) in BLOCKS for d in child.iterdescendants()):
                words = text_of(child)
                if words:
                    blocks.append((tuple(pending_ids), _bounded(words, limits)))
                    pending_ids.clear()
                continue
            visit(child)

    visit(root)
    return blocks


def language_tag(value: Optional[str], notes: list[str]) -> Optional[str]:
    """``value`` as a BCP 47 language tag in its standard form (``langcodes``, the IANA registry: ``en_GB`` ->
    ``en-GB``), or None, with a note, when it is none (``en" onload="..."``): a book's language lands in every
    read-along page's ``lang``."""
    if not value:
        return None
    try:
        import langcodes
    except ImportError:
        raise ModelNotAvailable(f"Checking a book's language needs langcodes, which is not installed: "
                                f"{BOOK_INSTALL}.") from None
    try:
        if len(value) <= 64 and langcodes.tag_is_valid(value):
            return langcodes.standardize_tag(value)
    except (ValueError, langcodes.LanguageTagError):
        pass
    notes.append(f"the book's language {excerpt(value)!r} is not a BCP 47 language tag; it was ignored (give "
                 "--language to set one)")
    return None


def _metadata(document, field: str) -> Optional[str]:
    values = document.get_metadata("DC", field)
    if not values:
        return None
    value = values[0][0] if isinstance(values[0], tuple) else values[0]
    return str(value).strip() or None


def _cover(document, ebooklib, limits: BookLimits) -> tuple[Optional[bytes], Optional[str]]:
    """The cover image's bytes and type, checked by its header (size in pixels) without decoding it."""
    item = None
    covers = list(document.get_items_of_type(ebooklib.ITEM_COVER))
    if covers:
        item = covers[0]
    else:
        for _value, attrs in document.get_metadata("OPF", "cover") or []:
            item = document.get_item_with_id((attrs or {}).get("content"))
            if item is not None:
                break
    if item is None:
        return None, None
    data = item.get_content()
    if len(data) > limits.max_image_bytes:
        raise InvalidInput(f"The book's cover is {len(data) / 2**20:.1f} MiB; at most "
                           f"{limits.max_image_bytes / 2**20:.0f} MiB.", param="input")
    import warnings

    from PIL import Image, UnidentifiedImageError

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)   # our own bound follows
            with Image.open(io.BytesIO(data)) as image:   # reads the header only
                width, height = image.size
                kind = image.format
    except Image.DecompressionBombError:
        raise InvalidInput(f"The book's cover has more than {limits.max_image_pixels:,} pixels (a huge image is "
                           "refused before it is decoded).", param="input") from None
    except (UnidentifiedImageError, OSError):
        return None, None
    if width * height > limits.max_image_pixels:
        raise InvalidInput(f"The book's cover is {width}x{height} pixels; at most {limits.max_image_pixels:,} "
                           "pixels (a huge image is refused before it is decoded).", param="input")
    if kind not in ("JPEG", "PNG"):
        return None, None
    return data, f"image/{kind.lower()}"


# --- shared ------------------------------------------------------------------------------------------------------

def _check_chapter_count(count: int, limits: BookLimits) -> None:
    if count > limits.max_chapters:
        raise InvalidInput(f"The book has more than {limits.max_chapters} chapters (at least {count}); that many "
                           "is not a book this tool reads in one go: split it.", param="input")


def _bounded(text: str, limits: BookLimits) -> str:
    if len(text) > limits.max_paragraph_chars:
        raise InvalidInput(f"A paragraph of the book has {len(text):,} characters; at most "
                           f"{limits.max_paragraph_chars:,} (a text without paragraph breaks?).", param="input")
    return text


def _finished(book: Book) -> Book:
    if not book.chapters:
        raise InvalidInput("The book has no chapter with text to speak"
                           + (f" (left out: {'; '.join(book.skipped[:5])})" if book.skipped else "") + ".",
                           param="input")
    return dataclasses.replace(book, garbled=garbled_chapters(book.chapters))


#: a chapter is mis-decoded when at least this share of its characters is U+FFFD (a book written so has none;
#: one stray from an old conversion stays under it in any chapter of more than a thousand characters)
GARBLED_SHARE = 0.001


def garbled_chapters(chapters) -> tuple[str, ...]:
    """What to say of each chapter whose text is largely U+FFFD, the character a reader puts where bytes were not
    UTF-8: a chapter in cp1252 or Shift_JIS that declares no encoding, which would be spoken as noise."""
    said = []
    for number, chapter in enumerate(chapters, 1):
        text = "".join(chapter.paragraphs)
        # U+FFFD, or C1 controls (U+0080-U+009F: cp1252's quotes and Shift_JIS's lead bytes read as Latin-1)
        lost = sum(text.count(ch) for ch in set(text) if ch == "\ufffd" or "\x80" <= ch <= "\x9f")
        if lost and lost / max(len(text), 1) >= GARBLED_SHARE:
            said.append(f"chapter {number} ({chapter.source or chapter.title}): {lost} of {len(text)} characters "
                        "could not be read (U+FFFD): it is not UTF-8 and declares no other encoding; give its encoding "
                        "(--encoding cp1252, shift_jis, gb18030, ...) or it is spoken as noise")
    return tuple(said)
