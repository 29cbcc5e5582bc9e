"""Reading an EPUB 2/3 into chapters (``read_epub``), once ``epub_archive`` has judged its zip: ebooklib given only
the entries the package and spine need, chapters from the table of contents (the EPUB 3 nav, or the EPUB 2 NCX) in
spine order, each chapter's XHTML parsed by lxml with entities unresolved and no network (leniently as HTML, and
said, when it is not well-formed), footnotes, their references and images left out and counted, the cover checked
by its header (Pillow) without decoding it."""

from __future__ import annotations

import io
import pathlib
import posixpath
import re
from typing import Optional
from urllib.parse import unquote

from ..errors import InvalidInput, ModelNotAvailable
from .contents import BOOK_INSTALL, Book, Chapter, bounded, check_chapter_count, finished, language_tag
from .epub_archive import checked_zip, known_encoding, redeclared
from .limits import BookLimits

#: the tags whose text is one paragraph (when they hold no other block)
BLOCKS = {"p", "h1", "h2", "h3", "h4", "h5", "h6", "li", "dt", "dd", "blockquote", "pre", "td", "th",
          "figcaption", "div", "section", "article", "aside", "header", "footer"}
#: ``epub:type`` values of notes (left out) and of note references (left out)
NOTE_TYPES = {"footnote", "endnote", "rearnote", "note", "footnotes", "endnotes", "rearnotes"}
NOTEREF_TYPES = {"noteref"}
#: ``epub:type`` values (or a ``class``) of a title page: the book's title and author, which the metadata gives
TITLE_PAGE_TYPES = {"titlepage", "halftitlepage"}


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
    check_chapter_count(len(toc), limits)
    titles: dict[str, list[tuple[Optional[str], str]]] = {}
    for href, title in toc:
        name, _, fragment = href.partition("#")
        titles.setdefault(posixpath.normpath(unquote(name)), []).append((fragment or None, title))
    chapters: list[list] = []
    skipped: list[str] = []
    notes: list[str] = []
    counts = {"footnote references": 0, "footnotes": 0, "images": 0, "title pages": 0}
    for idref, linear in document.spine:
        item = document.get_item_with_id(idref)
        if item is None or item.get_type() != ebooklib.ITEM_DOCUMENT:
            continue
        name = posixpath.normpath(item.get_name())
        if str(linear).lower() == "no":
            skipped.append(f"not in the reading order: {name}")
            continue
        # the file's own bytes: ebooklib's get_content() of a document rebuilds it with a lenient HTML parser
        title_pages = counts["title pages"]
        blocks = _xhtml_blocks(checked.xml.get(name, item.content), name, entries.get(name, 0), limits, counts,
                               notes)
        if counts["title pages"] > title_pages:   # never read aloud, nor a chapter (pandoc's is in its NCX)
            skipped.append(f"title page: {name}")
            if not blocks:
                continue
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
    said = [f"{count} {what}" for what, count in counts.items() if count and what != "title pages"]
    found = []
    for title, paragraphs, source in chapters:
        if paragraphs:
            found.append(Chapter(title=title, paragraphs=tuple(paragraphs), source=source))
        else:
            said.append(f"empty chapter: {title}")
    cover, cover_type = _cover(document, ebooklib, limits)
    return finished(Book(title=_metadata(document, "title") or path.stem, author=_metadata(document, "creator"),
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
            if types(child) & TITLE_PAGE_TYPES or TITLE_PAGE_TYPES & set((child.get("class") or "").split()):
                counts["title pages"] += 1
                continue
            if child.get("id"):
                pending_ids.append(child.get("id"))
            if tag in ("img", "svg", "image"):
                counts["images"] += 1
                continue
            if tag in BLOCKS and not any(local(d.tag) in BLOCKS for d in child.iterdescendants()):
                words = text_of(child)
                if words:
                    blocks.append((tuple(pending_ids), bounded(words, limits)))
                    pending_ids.clear()
                continue
            visit(child)

    visit(root)
    return blocks


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
