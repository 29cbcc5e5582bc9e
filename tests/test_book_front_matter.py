"""A book's own title, author and language are the book's, never read aloud (issue 58, point 4).

A Markdown book's YAML front matter (the ``---`` block pandoc and static-site tools read) became chapter 1, titled
with the file's name, whose one sentence was "title: ... author: ... lang: ..."; the M4B was named after the file
and the report said the book names no language.  A text book's title line and a pandoc EPUB's title page (listed
in its NCX) became chapter 1 as well.  Now each is the book's title, author and language (docs/books.md#1-reading-
the-book), and a run names the M4B after the title and the report the language.
"""

from __future__ import annotations

import json
import zipfile
from html import escape

import pytest

from omnivoice_demo.book.reading import read_book

MARKDOWN = """---
title: "The Lighthouse"
author:
  - Ada Author
  - name: Ben Writer
lang: de-DE
---

# Eins

Das Meer war ruhig.

# Zwei

Der Sturm kam.
"""


def test_markdown_front_matter_is_the_books_title_author_and_language_not_a_chapter(tmp_path):
    (tmp_path / "light.md").write_text(MARKDOWN)
    book = read_book(tmp_path / "light.md")
    assert (book.title, book.author, book.language) == ("The Lighthouse", "Ada Author, Ben Writer", "de-DE")
    assert [c.title for c in book.chapters] == ["Eins", "Zwei"]
    spoken = " ".join(p for c in book.chapters for p in c.paragraphs)
    assert "title" not in spoken and "Lighthouse" not in spoken and "lang" not in spoken


@pytest.mark.parametrize("block", ["[[[[ not: yaml", "- a list\n- not a mapping", "[" * 5000, "x: !!python/name:os.system"])
def test_front_matter_that_is_no_mapping_or_no_yaml_is_left_out_and_said(tmp_path, block):
    (tmp_path / "odd.md").write_text(f"---\n{block}\n---\n\n# One\n\nThe sea.\n")
    book = read_book(tmp_path / "odd.md")
    assert [c.paragraphs for c in book.chapters] == [("One", "The sea.")] and book.title == "One"
    assert any("front matter" in note for note in book.notes), book.notes


def test_a_text_books_title_block_is_its_title_and_author(tmp_path):
    (tmp_path / "light.txt").write_text("The Lighthouse\nA Tale of the Sea\nby Ada Author\n\nChapter 1\n\n"
                                        "The sea was calm.\n\nChapter 2\n\nThe storm came.\n")
    book = read_book(tmp_path / "light.txt")
    assert (book.title, book.author) == ("The Lighthouse: A Tale of the Sea", "Ada Author")
    assert [c.paragraphs for c in book.chapters] == [("Chapter 1", "The sea was calm."),
                                                     ("Chapter 2", "The storm came.")]
    # without chapter markers the book is one chapter, titled as the book; its first sentence is no title block
    (tmp_path / "short.txt").write_text("The Lighthouse\n\nThe sea was calm. The storm came.\n")
    book = read_book(tmp_path / "short.txt")
    assert book.title == "The Lighthouse" and [c.paragraphs for c in book.chapters] == [
        ("The sea was calm. The storm came.",)]
    (tmp_path / "prose.txt").write_text("The sea was calm.\nThe storm came.\n\nThen it rained.\n")
    assert read_book(tmp_path / "prose.txt").chapters[0].paragraphs[0] == "The sea was calm. The storm came."


def pandoc_epub(path, title="The Lighthouse", author="Ada Author", language="en-GB",
                chapters=(("Chapter One", "The sea was calm."), ("Chapter Two", "The storm came."))):
    """An EPUB 3 as pandoc writes one (``pandoc book.md -o book.epub``): ``text/title_page.xhtml`` first in the
    spine, its body ``epub:type="frontmatter"`` holding ``<section epub:type="titlepage">``, and the NCX's first
    navPoint pointing at it; the nav's landmarks name it."""
    xhtml = ('<?xml version="1.0" encoding="UTF-8"?>\n<html xmlns="http://www.w3.org/1999/xhtml" '
             'xmlns:epub="http://www.idpf.org/2007/ops" xml:lang="{lang}"><head><title>{title}</title></head>'
             '<body{body}>{content}</body></html>')
    page = xhtml.format(lang=language, title=escape(title), body=' epub:type="frontmatter"',
                        content=f'<section epub:type="titlepage" class="titlepage"><h1 class="title">{escape(title)}'
                                f'</h1><p class="author">{escape(author)}</p></section>')
    texts = [xhtml.format(lang=language, title=escape(title), body=' epub:type="bodymatter"',
                          content=f'<section id="ch{i}" class="level1"><h1>{escape(name)}</h1><p>{escape(words)}</p>'
                                  '</section>') for i, (name, words) in enumerate(chapters, 1)]
    manifest = "".join(f'<item id="ch{i:03d}_xhtml" href="text/ch{i:03d}.xhtml" media-type="application/xhtml+xml"/>'
                       for i in range(1, len(chapters) + 1))
    spine = "".join(f'<itemref idref="ch{i:03d}_xhtml"/>' for i in range(1, len(chapters) + 1))
    opf = ('<?xml version="1.0" encoding="UTF-8"?><package version="3.0" xmlns="http://www.idpf.org/2007/opf" '
           'unique-identifier="epub-id-1"><metadata xmlns:dc="http://purl.org/dc/elements/1.1/">'
           f'<dc:identifier id="epub-id-1">urn:uuid:1</dc:identifier><dc:title id="epub-title-1">{escape(title)}'
           f'</dc:title><dc:creator id="epub-creator-1">{escape(author)}</dc:creator>'
           f'<dc:language>{language}</dc:language><meta property="dcterms:modified">2026-01-01T00:00:00Z</meta>'
           '</metadata><manifest><item id="ncx" href="toc.ncx" media-type="application/x-dtbncx+xml"/>'
           '<item id="nav" href="nav.xhtml" media-type="application/xhtml+xml" properties="nav"/>'
           '<item id="title_page_xhtml" href="text/title_page.xhtml" media-type="application/xhtml+xml"/>'
           f'{manifest}</manifest><spine toc="ncx"><itemref idref="title_page_xhtml" linear="yes"/>'
           f'<itemref idref="nav"/>{spine}</spine></package>')
    points = "".join(f'<navPoint id="navPoint-{i}"><navLabel><text>{escape(name)}</text></navLabel>'
                     f'<content src="text/ch{i:03d}.xhtml"/></navPoint>' for i, (name, _) in enumerate(chapters, 1))
    ncx = ('<?xml version="1.0" encoding="UTF-8"?><ncx version="2005-1" xmlns="http://www.daisy.org/z3986/2005/ncx/">'
           f'<head><meta name="dtb:uid" content="urn:uuid:1"/></head><docTitle><text>{escape(title)}</text></docTitle>'
           f'<navMap><navPoint id="navPoint-0"><navLabel><text>{escape(title)}</text></navLabel>'
           f'<content src="text/title_page.xhtml"/></navPoint>{points}</navMap></ncx>')
    items = "".join(f'<li id="toc-li-{i}"><a href="text/ch{i:03d}.xhtml">{escape(name)}</a></li>'
                    for i, (name, _) in enumerate(chapters, 1))
    nav = xhtml.format(lang=language, title=escape(title), body=' epub:type="frontmatter"',
                       content=f'<nav epub:type="toc" id="toc"><h1 id="toc-title">{escape(title)}</h1><ol class="toc">'
                               f'{items}</ol></nav><nav epub:type="landmarks" id="landmarks" hidden="hidden"><ol><li>'
                               '<a href="text/title_page.xhtml" epub:type="titlepage">Title Page</a></li></ol></nav>')
    container = ('<?xml version="1.0" encoding="UTF-8"?><container version="1.0" xmlns="urn:oasis:names:tc:'
                 'opendocument:xmlns:container"><rootfiles><rootfile full-path="EPUB/content.opf" '
                 'media-type="application/oebps-package+xml"/></rootfiles></container>')
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(zipfile.ZipInfo("mimetype"), "application/epub+zip")
        archive.writestr("META-INF/container.xml", container)
        archive.writestr("EPUB/content.opf", opf)
        archive.writestr("EPUB/toc.ncx", ncx)
        archive.writestr("EPUB/nav.xhtml", nav)
        archive.writestr("EPUB/text/title_page.xhtml", page)
        for i, text in enumerate(texts, 1):
            archive.writestr(f"EPUB/text/ch{i:03d}.xhtml", text)
    return path


def test_a_pandoc_epubs_title_page_is_left_out_and_said(tmp_path):
    pytest.importorskip("ebooklib")
    book = read_book(pandoc_epub(tmp_path / "light.epub"))
    assert (book.title, book.author, book.language) == ("The Lighthouse", "Ada Author", "en-GB")
    assert [c.title for c in book.chapters] == ["Chapter One", "Chapter Two"]
    assert [c.paragraphs for c in book.chapters] == [("Chapter One", "The sea was calm."),
                                                     ("Chapter Two", "The storm came.")]
    assert "title page: text/title_page.xhtml" in book.skipped


def test_a_markdown_book_with_front_matter_makes_an_m4b_named_after_its_title(tiny_fp32_folder, tmp_path, capsys):
    """End to end: the M4B is named after the front matter's title, its tags carry title and author, the report
    names the language, and no sentence speaks the front matter."""
    av = pytest.importorskip("av")
    from omnivoice_demo.cli.main import main

    (tmp_path / "light.md").write_text(MARKDOWN.replace("lang: de-DE", "lang: en-GB").replace(
        "Das Meer war ruhig.", "The sea was calm.").replace("Der Sturm kam.", "The storm came."))
    output = tmp_path / "out"
    capsys.readouterr()
    assert main(["book", str(tmp_path / "light.md"), "--model", str(tiny_fp32_folder), "--output", str(output),
                 "--num-step", "2", "--no-guard", "--no-progress", "--no-readalong"]) == 0
    line = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert line["output"].endswith("The Lighthouse.m4b") and line["chapters"] == 2
    report = json.loads((output / "report.json").read_text())
    assert (report["title"], report["author"], report["language"]) == ("The Lighthouse", "Ada Author, Ben Writer",
                                                                      "en")
    spoken = " ".join(json.loads(p.read_text()).get("text", "") for p in (output / "sentences").glob("*.json"))
    assert "title" not in spoken and "lang" not in spoken and "Lighthouse" not in spoken
    with av.open(str(output / "The Lighthouse.m4b")) as container:
        tags = {k.lower(): v for k, v in container.metadata.items()}
    assert tags.get("title") == "The Lighthouse" and "Ada Author" in (tags.get("artist") or tags.get("author", ""))
