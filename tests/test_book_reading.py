"""Reading a book: EPUB 3 and 2 written here (ebooklib / zipfile), Markdown, plain text; every bound before work."""

from __future__ import annotations

import zipfile

import pytest

from omnivoice_demo.book.limits import BookLimits
from omnivoice_demo.book.reading import book_of_chapters, read_book
from omnivoice_demo.book.voices import Voicing, attributed_speaker, parts_of
from omnivoice_demo.errors import InvalidInput
from tests.support.books import cover_jpeg, write_epub2, write_epub3

pytest.importorskip("ebooklib")

CHAPTERS = [("The Harbour", ["Anna walked to the harbour. The boats were in.", "It was late."]),
            ("The Storm", ["The wind rose at night."]),
            ("The Morning", ["All was calm again."])]


def test_epub3_chapters_follow_the_nav_in_spine_order_with_metadata_and_cover(tmp_path):
    footnote = ('<p>See<sup><a href="#n1">1</a></sup> the map.</p><img src="map.png" alt="map"/>'
                '<aside xmlns:epub="http://www.idpf.org/2007/ops" epub:type="footnote" id="n1">A note.</aside>')
    book = read_book(write_epub3(tmp_path / "b.epub", CHAPTERS, extra={0: footnote}))
    assert (book.title, book.author, book.language, book.kind) == ("The Test Book", "Ada Author", "en", "epub")
    assert [c.title for c in book.chapters] == ["The Harbour", "The Storm", "The Morning"]
    assert book.chapters[0].paragraphs == ("The Harbour", "Anna walked to the harbour. The boats were in.",
                                           "It was late.", "See the map.")
    assert book.cover == cover_jpeg() and book.cover_type == "image/jpeg"
    said = " | ".join(book.skipped)
    assert "1 footnote references" in said and "1 footnotes" in said and "1 images" in said
    assert "cover.xhtml" in said   # the cover page: not a chapter, and said


def test_epub2_reads_its_ncx_and_the_language_from_its_metadata(tmp_path):
    book = read_book(write_epub2(tmp_path / "old.epub", [("Un", ["Bonjour."]), ("Deux", ["Salut."])]))
    assert [c.title for c in book.chapters] == ["Un", "Deux"] and book.language == "fr"
    assert book.author == "Old Author"


def test_chosen_chapters(tmp_path):
    book = read_book(write_epub3(tmp_path / "b.epub", CHAPTERS))
    assert [c.title for c in book_of_chapters(book, "1,3").chapters] == ["The Harbour", "The Morning"]
    with pytest.raises(InvalidInput, match="outside the book's chapters 1-3"):
        book_of_chapters(book, "2-4")


def test_drm_protected_epub_is_refused_and_font_obfuscation_is_not(tmp_path):
    encrypted = ('<encryption xmlns="urn:oasis:names:tc:opendocument:xmlns:container" '
                 'xmlns:enc="http://www.w3.org/2001/04/xmlenc#"><enc:EncryptedData>'
                 '<enc:EncryptionMethod Algorithm="{}"/><enc:CipherData><enc:CipherReference URI="OEBPS/c0.xhtml"/>'
                 '</enc:CipherData></enc:EncryptedData></encryption>')
    with pytest.raises(InvalidInput, match="DRM"):
        read_book(write_epub2(tmp_path / "drm.epub", [("Un", ["Bonjour."])],
                              encryption=encrypted.format("http://www.w3.org/2001/04/xmlenc#aes128-cbc")))
    fonts = write_epub2(tmp_path / "fonts.epub", [("Un", ["Bonjour."])],
                        encryption=encrypted.format("http://www.idpf.org/2008/embedding"))
    assert read_book(fonts).chapters[0].title == "Un"


def test_malformed_xhtml_is_read_leniently_and_said(tmp_path):
    book = read_book(write_epub2(tmp_path / "bad.epub", [("Un", ["Bonjour."]), ("Deux", [])],
                                 raw={1: b"<html><body><p>Broken <b>tag</p></body></html>"}))
    assert book.chapters[1].paragraphs == ("Broken tag",)
    assert any("c1.xhtml is not well-formed XHTML (line 1" in note for note in book.notes)


def test_entity_expansion_is_refused_before_any_parser_expands_it(tmp_path):
    laughs = (b'<?xml version="1.0"?><!DOCTYPE html [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;">]>'
              b'<html xmlns="http://www.w3.org/1999/xhtml"><body><p>&b;</p></body></html>')
    with pytest.raises(InvalidInput, match="declares XML entities"):
        read_book(write_epub2(tmp_path / "lol.epub", [("Un", [])], raw={0: laughs}))


def test_a_zip_bomb_is_refused_from_its_directory(tmp_path):
    path = write_epub2(tmp_path / "bomb.epub", [("Un", ["Bonjour."])])
    with zipfile.ZipFile(path, "a") as archive:
        archive.writestr("OEBPS/zeros.bin", b"\0" * (8 * 1024 * 1024), compress_type=zipfile.ZIP_DEFLATED)
    with pytest.raises(InvalidInput, match="zip bomb"):
        read_book(path)
    with pytest.raises(InvalidInput, match="unpacks to"):
        read_book(path, BookLimits(max_uncompressed_bytes=1024 * 1024, max_ratio=1e9))


def test_a_huge_cover_is_refused_by_its_header(tmp_path):
    import io

    from PIL import Image

    buffer = io.BytesIO()
    Image.new("1", (20000, 20000)).save(buffer, "PNG")   # 50 kB of PNG, 400 megapixels decoded
    path = write_epub3(tmp_path / "big.epub", CHAPTERS[:1], cover=buffer.getvalue(), front_matter=False)
    with pytest.raises(InvalidInput, match="cover has more than 40,000,000 pixels"):
        read_book(path)
    with pytest.raises(InvalidInput, match="cover is 3000x3000 pixels"):
        buffer = io.BytesIO()
        Image.new("1", (3000, 3000)).save(buffer, "PNG")
        read_book(write_epub3(tmp_path / "b2.epub", CHAPTERS[:1], cover=buffer.getvalue(), front_matter=False),
                  BookLimits(max_image_pixels=1_000_000))


def test_five_thousand_chapters_are_refused_before_they_are_read(tmp_path):
    text = "\n\n".join(f"Chapter {n}\n\nLine {n}." for n in range(5000))
    (tmp_path / "long.txt").write_text(text)
    with pytest.raises(InvalidInput, match="more than 1000 chapters"):
        read_book(tmp_path / "long.txt")


def test_empty_chapters_are_left_out_and_said_and_an_empty_book_is_an_error(tmp_path):
    (tmp_path / "b.txt").write_text("Chapter 1\n\nSome text.\n\nChapter 2\n\n\nChapter 3\n\nMore.\n")
    book = read_book(tmp_path / "b.txt")
    assert [c.title for c in book.chapters] == ["Chapter 1", "Chapter 3"]
    assert "empty chapter: Chapter 2" in book.skipped
    (tmp_path / "e.txt").write_text("Chapter 1\n\n\nChapter 2\n")
    with pytest.raises(InvalidInput, match="no chapter with text"):
        read_book(tmp_path / "e.txt")


def test_text_in_a_legacy_encoding_says_how_to_name_it(tmp_path):
    (tmp_path / "old.txt").write_bytes("Chapter 1\n\nCafé crème, s'il vous plaît.\n".encode("cp1252"))
    with pytest.raises(InvalidInput, match="not UTF-8.*--encoding"):
        read_book(tmp_path / "old.txt")
    book = read_book(tmp_path / "old.txt", encoding="cp1252")
    assert book.chapters[0].paragraphs == ("Chapter 1", "Café crème, s'il vous plaît.")


def test_plain_text_with_a_named_marker_and_markdown_headings(tmp_path):
    (tmp_path / "b.txt").write_text("Preface words.\n\n=== The Start\nOne line\ngoes on.\n\n=== The End\nBye.\n")
    book = read_book(tmp_path / "b.txt", chapter_marker=r"^=== ")
    assert [(c.title, c.paragraphs) for c in book.chapters] == [
        ("b", ("Preface words.",)), ("=== The Start", ("=== The Start", "One line goes on.")),
        ("=== The End", ("=== The End", "Bye."))]
    (tmp_path / "m.md").write_text("# One\n\nSome *emphasis* and a [link](http://x).\n\n![pic](p.png)\n\n"
                                   "## Sub\n\nMore.\n\n```\ncode\n```\n\n# Two\n\nEnd.\n")
    book = read_book(tmp_path / "m.md")
    assert [(c.title, c.paragraphs) for c in book.chapters] == [
        ("One", ("One", "Some emphasis and a link.", "Sub", "More.")), ("Two", ("Two", "End."))]
    assert "1 images" in book.skipped and "1 code blocks" in book.skipped


def test_quotes_are_attributed_by_the_simple_rules():
    anna, ben = Voicing("anna", instruct="female"), Voicing("ben", instruct="male")
    narrator, dialogue = Voicing("narrator"), Voicing("dialogue", instruct="child")
    cast = {"Anna": anna, "Ben": ben}
    assert attributed_speaker('"Come here," said Anna.', cast) == "Anna"
    assert attributed_speaker('"Come here," Ben said.', cast) == "Ben"
    assert attributed_speaker('Anna said, "Come here."', cast) == "Anna"
    assert attributed_speaker('"Come here," said the man.', cast) is None
    parts = parts_of('“Come here,” said Anna. “Now.”', narrator, dialogue, cast)
    assert [(p.text, p.voicing.name, p.speaker) for p in parts] == [
        ("Come here,", "anna", "Anna"), ("said Anna.", "narrator", ""), ("Now.", "anna", "Anna")]
    assert [p.voicing.name for p in parts_of('"Hi," said the man.', narrator, dialogue, cast)] == [
        "dialogue", "narrator"]
    assert [(p.text, p.voicing.name) for p in parts_of("Ben: I am here.", narrator, None, cast)] == [
        ("I am here.", "ben")]
    assert [p.voicing.name for p in parts_of("Note: not a speaker.", narrator, None, cast)] == ["narrator"]


def test_a_shared_server_bounds_book_jobs_and_keeps_each_owners_apart(tmp_path, monkeypatch):
    from omnivoice_demo.book import jobs as book_jobs
    from omnivoice_demo.book.project import BookSettings
    from omnivoice_demo.settings.generation import GenerationConfig
    from omnivoice_demo.errors import ResourceLimitExceeded

    (tmp_path / "b.txt").write_text("Chapter 1\n\nOne. Two. Three. Four.\n")
    jobs = book_jobs.BookJobs(tmp_path / "books", shared=True)
    settings = BookSettings(config=GenerationConfig(), narrator=Voicing("d"))
    monkeypatch.setattr(book_jobs, "MAX_SHARED_SENTENCES", 4)
    with pytest.raises(ResourceLimitExceeded, match="5 sentences; this server makes books of at most 4"):
        jobs.open("owner-a", str(tmp_path / "b.txt"), settings)
    monkeypatch.setattr(book_jobs, "MAX_SHARED_SENTENCES", 100)
    monkeypatch.setattr(book_jobs, "MAX_SHARED_HOURS", 0.0001)
    with pytest.raises(ResourceLimitExceeded, match="hours of audio"):
        jobs.open("owner-a", str(tmp_path / "b.txt"), settings)
    monkeypatch.setattr(book_jobs, "MAX_SHARED_HOURS", 2.0)
    a = jobs.open("owner-a", str(tmp_path / "b.txt"), settings)
    b = jobs.open("owner-b", str(tmp_path / "b.txt"), settings)
    assert jobs.get("owner-a") is a and jobs.get("owner-b") is b and jobs.get("owner-c") is None
    assert a.folder != b.folder and a.folder.parent.parent == b.folder.parent.parent == tmp_path / "books"
    assert jobs.limits() == BookLimits.shared()


def test_the_book_tab_on_a_shared_server_names_no_server_file(tmp_path):
    from omnivoice_demo.ui.tabs.book import voicing

    class SharedStudio:
        shared = True

    assert voicing(SharedStudio(), "nova", "Narrator").instruct.startswith("female")
    assert voicing(SharedStudio(), "male, low pitch", "Narrator").instruct
    (tmp_path / "v.npz").write_bytes(b"x")
    with pytest.raises(InvalidInput, match="no voice name nor a description"):
        voicing(SharedStudio(), str(tmp_path / "v.npz"), "Narrator")
