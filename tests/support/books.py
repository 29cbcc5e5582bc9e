"""Real EPUB files written in the test: EPUB 3 with ebooklib (nav, NCX, cover), EPUB 2 by hand (OPF + NCX)."""

from __future__ import annotations

import io
import pathlib
import zipfile
from html import escape


def cover_jpeg(width: int = 64, height: int = 64) -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (width, height), (180, 30, 40)).save(buffer, "JPEG")
    return buffer.getvalue()


def chapter_xhtml(title: str, paragraphs, extra: str = "") -> str:
    body = "".join(f"<p>{escape(p)}</p>" for p in paragraphs)
    return f"<h1>{escape(title)}</h1>{body}{extra}"


def write_epub3(path, chapters, title="The Test Book", author="Ada Author", language="en", cover=True,
                front_matter: bool = True, extra: dict | None = None) -> pathlib.Path:
    """An EPUB 3 (nav and NCX) with ``chapters`` [(title, [paragraph, ...]), ...]; ``extra``: chapter index ->
    more XHTML after its paragraphs (footnotes, images)."""
    from ebooklib import epub

    book = epub.EpubBook()
    book.set_identifier("test-book-1")
    book.set_title(title)
    book.set_language(language)
    book.add_author(author)
    if cover:   # True: a small JPEG; bytes: this PNG
        book.set_cover("cover.jpg" if cover is True else "cover.png", cover_jpeg() if cover is True else cover,
                       create_page=front_matter)
    items = []
    for index, (name, paragraphs) in enumerate(chapters):
        item = epub.EpubHtml(title=name, file_name=f"chap_{index + 1:02d}.xhtml", lang=language)
        item.content = chapter_xhtml(name, paragraphs, (extra or {}).get(index, ""))
        book.add_item(item)
        items.append(item)
    book.toc = [epub.Link(item.file_name, name, f"c{i}") for i, (item, (name, _)) in enumerate(zip(items, chapters))]
    book.add_item(epub.EpubNcx())
    book.add_item(epub.EpubNav())
    book.spine = (["cover"] if cover and front_matter else []) + ["nav"] + items
    path = pathlib.Path(path)
    epub.write_epub(str(path), book)
    return path


def write_epub2(path, chapters, title="An Old Book", author="Old Author", language="fr",
                encryption: str | None = None, raw: dict | None = None) -> pathlib.Path:
    """An EPUB 2 (OPF 2.0 + NCX, no nav) written by hand; ``encryption``: a META-INF/encryption.xml;
    ``raw``: chapter index -> its XHTML bytes as given (malformed, entities, ...)."""
    path = pathlib.Path(path)
    manifest = "".join(f'<item id="c{i}" href="c{i}.xhtml" media-type="application/xhtml+xml"/>'
                       for i in range(len(chapters)))
    spine = "".join(f'<itemref idref="c{i}"/>' for i in range(len(chapters)))
    points = "".join(f'<navPoint id="n{i}" playOrder="{i + 1}"><navLabel><text>{escape(name)}</text></navLabel>'
                     f'<content src="c{i}.xhtml"/></navPoint>' for i, (name, _) in enumerate(chapters))
    opf = (f'<?xml version="1.0" encoding="utf-8"?><package xmlns="http://www.idpf.org/2007/opf" version="2.0" '
           f'unique-identifier="id"><metadata xmlns:dc="http://purl.org/dc/elements/1.1/">'
           f'<dc:identifier id="id">old-1</dc:identifier><dc:title>{escape(title)}</dc:title>'
           f'<dc:creator>{escape(author)}</dc:creator><dc:language>{language}</dc:language></metadata>'
           f'<manifest><item id="ncx" href="toc.ncx" media-type="application/x-dtbncx+xml"/>{manifest}</manifest>'
           f'<spine toc="ncx">{spine}</spine></package>')
    ncx = (f'<?xml version="1.0" encoding="utf-8"?><ncx xmlns="http://www.daisy.org/z3986/2005/ncx/" version="2005-1">'
           f'<head/><docTitle><text>{escape(title)}</text></docTitle><navMap>{points}</navMap></ncx>')
    container = ('<?xml version="1.0"?><container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:'
                 'container"><rootfiles><rootfile full-path="OEBPS/content.opf" '
                 'media-type="application/oebps-package+xml"/></rootfiles></container>')
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(zipfile.ZipInfo("mimetype"), "application/epub+zip")
        archive.writestr("META-INF/container.xml", container)
        if encryption:
            archive.writestr("META-INF/encryption.xml", encryption)
        archive.writestr("OEBPS/content.opf", opf)
        archive.writestr("OEBPS/toc.ncx", ncx)
        for i, (name, paragraphs) in enumerate(chapters):
            data = (raw or {}).get(i)
            if data is None:
                data = (f'<?xml version="1.0" encoding="utf-8"?><html xmlns="http://www.w3.org/1999/xhtml"><head>'
                        f'<title>{escape(name)}</title></head><body>{chapter_xhtml(name, paragraphs)}</body></html>'
                        ).encode()
            archive.writestr(f"OEBPS/c{i}.xhtml", data, compress_type=zipfile.ZIP_DEFLATED)
    return path
