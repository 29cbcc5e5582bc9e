"""Issue 49's book causes, each at the place it starts: a chapter that declares a legacy encoding (3), chapters
that are not UTF-8 and say nothing (4), a zip bomb of many small entries (5), the read-along EPUB's language
(6), every visitor's Book tab job being one job (7), a full disk (10) and a sentence with no audio (12)."""

from __future__ import annotations

import types
import zipfile

import pytest

from omnivoice_demo.book.reading import read_book
from omnivoice_demo.errors import InvalidInput
from tests.support.books import write_epub2

pytest.importorskip("ebooklib")


def _chapter(text: str, declared: str | None) -> str:
    declaration = f'<?xml version="1.0" encoding="{declared}"?>' if declared else ""
    return (f'{declaration}<html xmlns="http://www.w3.org/1999/xhtml"><head><title>x</title></head>'
            f"<body><p>{text}</p></body></html>")


# --- 3. a chapter that declares a legacy encoding --------------------------------------------------------------

def test_a_chapter_declaring_shift_jis_is_read_in_it(tmp_path):
    """expat (defusedxml's parser) reads no multi-byte legacy encoding: it raised a ValueError, an internal
    error in the CLI and the Book tab."""
    text = "吾輩は猫である。名前はまだ無い。"
    path = write_epub2(tmp_path / "sj.epub", [("Un", []), ("Deux", ["Plain."])],
                       raw={0: _chapter(text, "Shift_JIS").encode("shift_jis")})
    book = read_book(path)
    assert book.chapters[0].paragraphs == (text,) and book.garbled == ()
    assert any("c0.xhtml was read as Shift_JIS" in note for note in book.notes)


def test_a_chapter_declaring_an_unknown_encoding_or_belying_its_declaration_is_refused_by_name(tmp_path):
    unknown = write_epub2(tmp_path / "u.epub", [("Un", [])], raw={0: _chapter("Hello.", "x-klingon").encode()})
    with pytest.raises(InvalidInput, match=r"OEBPS/c0.xhtml declares the encoding 'x-klingon'.*UTF-8"):
        read_book(unknown)
    lying = write_epub2(tmp_path / "l.epub", [("Un", [])],
                        raw={0: _chapter("Hello.", "Shift_JIS").encode() + b"\x81\xff"})
    with pytest.raises(InvalidInput, match=r"OEBPS/c0.xhtml declares Shift_JIS but byte 0x81"):
        read_book(lying)


# --- 4. chapters that are not UTF-8 and declare nothing --------------------------------------------------------

CP1252 = "Café crème, s’il vous plaît — très “bien”."


def test_an_undeclared_cp1252_chapter_is_found_garbled_and_read_with_the_encoding_named(tmp_path):
    path = write_epub2(tmp_path / "cp.epub", [("Un", []), ("Deux", ["Fine text here."])],
                       raw={0: _chapter(CP1252, None).encode("cp1252")})
    book = read_book(path)
    assert len(book.garbled) == 1 and book.garbled[0].startswith("chapter 1 (c0.xhtml): 8 of 42 characters")
    assert "--encoding cp1252" in book.garbled[0]
    named = read_book(path, encoding="cp1252")
    assert named.chapters[0].paragraphs == (CP1252,) and named.garbled == ()
    with pytest.raises(InvalidInput, match="no encoding Python knows"):
        read_book(path, encoding="klingon")


def test_list_and_the_run_say_a_chapter_is_garbled_before_any_work(tmp_path, capsys):
    from omnivoice_demo.cli.main import main

    path = write_epub2(tmp_path / "cp.epub", [("Un", [])], raw={0: _chapter(CP1252, None).encode("cp1252")})
    code = main(["book", str(path), "--output", str(tmp_path / "out"), "--model", str(tmp_path / "no-model"),
                 "--list"])
    listed = capsys.readouterr().out
    assert code == 0 and "warning: chapter 1 (c0.xhtml)" in listed and "--encoding" in listed
    code = main(["book", str(path), "--output", str(tmp_path / "out"), "--model", str(tmp_path / "no-model"),
                 "--list", "--encoding", "cp1252"])
    assert code == 0 and "warning" not in capsys.readouterr().out


def test_a_chapter_with_one_stray_replacement_character_is_not_called_garbled(tmp_path):
    text = "A long and ordinary paragraph of a book. " * 40 + "\ufffd"
    path = write_epub2(tmp_path / "ok.epub", [("Un", [text])])
    assert read_book(path).garbled == ()


# --- 5. a zip bomb of many small entries -----------------------------------------------------------------------

def test_many_small_entries_that_unpack_far_beyond_their_size_are_refused_from_the_directory(tmp_path, monkeypatch):
    """1 MiB entries skipped the ratio check one by one; the whole archive's ratio is judged before any entry is
    read (zipfile.ZipFile.read is never called)."""
    path = write_epub2(tmp_path / "many.epub", [("Un", ["Bonjour."])])
    with zipfile.ZipFile(path, "a") as archive:
        for index in range(40):   # 40 MiB from about 40 kB: each under the per-entry floor
            archive.writestr(f"OEBPS/pad{index}.xhtml", b"\0" * (1024 * 1024), compress_type=zipfile.ZIP_DEFLATED)
    reads: list[str] = []
    original = zipfile.ZipFile.read
    monkeypatch.setattr(zipfile.ZipFile, "read", lambda self, name, pwd=None: reads.append(name) or
                        original(self, name, pwd))
    with pytest.raises(InvalidInput, match=r"unpacks to 40 MiB from .*over its 45 files\); that is a zip bomb"):
        read_book(path)
    assert reads == []


def test_only_the_entries_the_package_and_spine_need_are_unpacked(tmp_path, monkeypatch):
    path = write_epub2(tmp_path / "extra.epub", [("Un", ["Bonjour."]), ("Deux", ["Salut."])])
    with zipfile.ZipFile(path, "a") as archive:   # files the manifest does not list, and one it lists off-spine
        archive.writestr("OEBPS/unlisted.xhtml", b"<html/>" * 1000, compress_type=zipfile.ZIP_DEFLATED)
        archive.writestr("OEBPS/fonts/big.ttf", bytes(range(256)) * 4000)
    reads: list[str] = []
    original = zipfile.ZipFile.read
    monkeypatch.setattr(zipfile.ZipFile, "read", lambda self, name, pwd=None: reads.append(
        getattr(name, "filename", name)) or original(self, name, pwd))
    book = read_book(path)
    assert [c.title for c in book.chapters] == ["Un", "Deux"]
    assert sorted(reads) == ["META-INF/container.xml", "OEBPS/c0.xhtml", "OEBPS/c1.xhtml", "OEBPS/content.opf",
                             "OEBPS/toc.ncx"]


# --- 7. every visitor's Book tab job was one job ---------------------------------------------------------------

def _visitor(token: str):
    return types.SimpleNamespace(cookies={"omnivoice-owner-lax": token * 32}, headers={}, client=None)


def test_the_book_tab_handlers_receive_the_visitor_and_keep_their_books_apart(tiny_fp32_folder, tmp_path):
    """Gradio hands ``gr.Request`` only to a parameter before ``*args``: the tab's open and start handlers took
    ``*values`` first, never saw the visitor, and every visitor's book was the one job "local"."""
    import gradio as gr
    from gradio.helpers import special_args

    from omnivoice_demo.ui.tabs import book as book_tab
    from tests.support.studios import folder_studio

    studio = folder_studio(tiny_fp32_folder, tmp_path, shared=True)
    with gr.Blocks() as demo:
        book_tab.build(studio)
    handlers = {block.fn.__name__: block for block in demo.fns.values()}
    for name in ("opened", "started", "paused", "ticked", "listen"):
        marker = object()
        inputs, *_ = special_args(handlers[name].fn, [None] * len(handlers[name].inputs), marker)
        assert marker in inputs, f"{name} never receives the visitor"
    (tmp_path / "a.txt").write_text("Chapter 1\n\nOne. Two.\n")
    (tmp_path / "b.txt").write_text("Chapter 1\n\nOne. Two. Three. Four. Five.\n")

    def call(name, *values, visitor):
        inputs, *_ = special_args(handlers[name].fn, list(values), visitor)
        return handlers[name].fn(*inputs)

    controls = ["alloy", "(none)", "", "", 4, False, ""]
    call("opened", str(tmp_path / "a.txt"), "", *controls, visitor=_visitor("a"))
    call("opened", str(tmp_path / "b.txt"), "", *controls, visitor=_visitor("b"))
    assert "of 3 sentences" in call("ticked", visitor=_visitor("a"))[0]
    assert "of 6 sentences" in call("ticked", visitor=_visitor("b"))[0]
    assert call("ticked", visitor=_visitor("c"))[0] == ""
    # issue 49, cause 4, in the tab: a chapter that is not UTF-8 is said before any work; the Encoding box reads it
    garbled = write_epub2(tmp_path / "cp.epub", [("Un", [])], raw={0: _chapter(CP1252, None).encode("cp1252")})
    summary = call("opened", str(garbled), "", *controls, visitor=_visitor("d"))[0]
    assert "Not readable as UTF-8: chapter 1 (c0.xhtml)" in summary and "give its encoding" in summary
    summary = call("opened", str(garbled), "", *controls[:-1], "cp1252", visitor=_visitor("d"))[0]
    assert "Not readable" not in summary


def test_a_shared_server_opens_no_book_without_a_visitor(tmp_path):
    from omnivoice_demo.book.jobs import BookJobs
    from omnivoice_demo.book.project import BookSettings
    from omnivoice_demo.book.voices import Voicing
    from omnivoice_demo.settings.generation import GenerationConfig

    (tmp_path / "b.txt").write_text("Chapter 1\n\nOne.\n")
    settings = BookSettings(config=GenerationConfig(), narrator=Voicing("d"))
    with pytest.raises(InvalidInput, match="cookie"):
        BookJobs(tmp_path / "books", shared=True).open(None, str(tmp_path / "b.txt"), settings)
    assert BookJobs(tmp_path / "local", shared=False).open(None, str(tmp_path / "b.txt"), settings).owner == \
        "local"


# --- 12. a sentence with no audio ------------------------------------------------------------------------------

def _silent_takes(monkeypatch, texts: set[str] | None = None):
    """Every take comes out all silence, removed by the post-processing (what a random-weight model did)."""
    from omnivoice_demo.audio import processing

    original = processing.remove_silence
    monkeypatch.setattr(processing, "remove_silence", lambda audio, *args, **kwargs: audio[:, :0])
    return original


def test_a_batch_item_whose_every_take_has_no_audio_fails_by_name_and_leaves_no_file(tiny_fp32_folder, tmp_path,
                                                                                      monkeypatch):
    """A take with no audio was written as a 0-byte FLAC and the item called done."""
    from omnivoice_demo.batch.items import BatchItem
    from omnivoice_demo.batch.worker import NO_AUDIO_TAKES, Job, ItemWorker, ModelSpec
    from omnivoice_demo.settings.generation import GenerationConfig

    worker = ItemWorker(ModelSpec(model=str(tiny_fp32_folder), precision="fp32"))
    seeds: list[int] = []
    original = worker.engine.run
    monkeypatch.setattr(worker.engine, "run", lambda plan: seeds.append(plan.config.seed) or original(plan))
    _silent_takes(monkeypatch)
    item = BatchItem(id="quiet", line=1, text="Hello there.", language=None, instruct=None, voice=None,
                     config=GenerationConfig(num_step=2, seed=11))
    record = worker.run(item, Job(output=str(tmp_path), audio_format="flac"))
    assert record["status"] == "failed" and "came out with no audio" in record["error"]
    assert "'Hello there.'" in record["error"] and seeds == [11, 12, 13][:NO_AUDIO_TAKES]
    assert list(tmp_path.glob("*.flac")) == []
    kept = worker.run(item, Job(output=str(tmp_path / "book"), audio_format="flac", silence_for_no_audio=0.5))
    import soundfile

    audio, rate = soundfile.read(str(tmp_path / "book" / "quiet.flac"))
    assert kept["status"] == "done" and kept["no_audio_takes"] == NO_AUDIO_TAKES and len(audio) == rate // 2


def test_a_book_whose_sentences_have_no_audio_finishes_and_names_them(tiny_fp32_folder, tmp_path, monkeypatch,
                                                                      capsys):
    """Joining a chapter crashed on the 0-byte FLAC ("Format not recognised", an internal error)."""
    import json

    import soundfile

    from omnivoice_demo.cli.main import main

    (tmp_path / "b.txt").write_text("Chapter 1\n\nHello there.\n")
    _silent_takes(monkeypatch)
    code = main(["book", str(tmp_path / "b.txt"), "--model", str(tiny_fp32_folder), "--output",
                 str(tmp_path / "out"), "--num-step", "2", "--no-guard", "--no-progress", "--format", "flac",
                 "--no-readalong"])
    out = capsys.readouterr().out
    assert code == 0 and "kept as silence (no take had audio): chapter 1: 'Hello there.'" in out
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert [entry["text"] for entry in report["silent"]] == ["Chapter 1", "Hello there."]
    for path in (tmp_path / "out").rglob("*.flac"):
        assert len(soundfile.read(str(path))[0]) > 0, path


def test_a_sentence_file_that_is_not_audio_is_removed_and_remade_by_the_next_run(tiny_fp32_folder, tmp_path,
                                                                                 capsys):
    import json

    from omnivoice_demo.storage.digests import file_sha256
    from omnivoice_demo.cli.main import main

    (tmp_path / "b.txt").write_text("Chapter 1\n\nHello there.\n")
    args = ["book", str(tmp_path / "b.txt"), "--model", str(tiny_fp32_folder), "--output", str(tmp_path / "out"),
            "--num-step", "2", "--no-guard", "--no-progress", "--format", "flac", "--no-readalong"]
    assert main(args) == 0
    flac = sorted((tmp_path / "out" / "sentences").glob("*.flac"))[-1]
    flac.write_bytes(b"")   # what an older version left for a take with no audio, its sidecar saying so
    sidecar = flac.with_suffix(".json")
    record = json.loads(sidecar.read_text())
    sidecar.write_text(json.dumps(dict(record, sha256=file_sha256(flac), samples=0)))
    capsys.readouterr()
    assert main(args) != 0
    said = capsys.readouterr()
    assert "was not audio; it was removed: run the book again" in said.err + said.out
    assert "Traceback" not in said.err + said.out and not flac.exists()
    assert main(args) == 0 and flac.stat().st_size > 0


# --- 6. the read-along EPUB's language and text ----------------------------------------------------------------

HOSTILE = 'en" onload="alert(1)'


def test_a_language_that_is_no_bcp47_tag_is_ignored_when_the_book_is_read(tmp_path):
    book = read_book(write_epub2(tmp_path / "l.epub", [("Un", ["Bonjour."])], language=HOSTILE.replace('"', "&quot;")))
    assert book.language is None
    assert any("is not a BCP 47 language tag; it was ignored" in note for note in book.notes)
    assert read_book(write_epub2(tmp_path / "g.epub", [("Un", ["Hi."])], language="en_GB")).language == "en-GB"


def test_every_file_of_the_readalong_is_xml_whatever_the_book_holds(tmp_path, monkeypatch):
    """The language went unescaped into every page's ``lang``: the pages were no longer XML (and carried an
    ``onload``).  Every text and attribute goes through the XML library's escaping; characters XML cannot hold are
    left out."""
    from lxml import etree

    from omnivoice_demo.book import overlay
    from omnivoice_demo.book.project import BookPlan, JoinedChapter, Sentence
    from omnivoice_demo.book.contents import Book, Chapter
    from omnivoice_demo.batch.subtitles import Cue

    monkeypatch.setattr("omnivoice_demo.book.containers.write_chapter_audio",
                        lambda path, *args, **kwargs: path.write_bytes(b"m4a"))
    odd = 'A <b>"quote"</b> & \'apostrophe\' \x01\x0b]]> end'
    book = Book(title=odd, author=odd, language=HOSTILE, chapters=(Chapter(title=odd, paragraphs=(odd,)),))
    plan = BookPlan(book=book, language=None, sentences=[Sentence(1, 0, odd, "s1")], items=[], notes=[])
    chapter = JoinedChapter(number=1, title=odd, file="chapters/01.flac", samples=24000, sample_rate=24000,
                            sentences=1, rms_db=-20.0, peak_db=-3.0, gain_db=0.0, meets_target=True,
                            cues=[Cue(0.0, 1.0, odd, "")], words=[[]])
    overlay.write_readalong(tmp_path / "r.epub", plan, [chapter], tmp_path)
    with zipfile.ZipFile(tmp_path / "r.epub") as archive:
        for name in archive.namelist():
            if name.endswith((".xhtml", ".smil", ".opf", ".xml")):
                root = etree.fromstring(archive.read(name))   # raises when it is not XML
                assert "onload" not in {key for element in root.iter() for key in element.attrib}, name
        page = etree.fromstring(archive.read("OEBPS/ch01.xhtml"))
    assert page.get("lang") == "und"
    assert "".join(page.find(".//{*}span").itertext()) == odd.replace("\x01", "").replace("\x0b", "")


# --- 10. a full disk -------------------------------------------------------------------------------------------

def test_a_full_disk_stops_the_book_with_what_to_do_and_a_rerun_completes(tiny_fp32_folder, tmp_path, monkeypatch,
                                                                          capsys):
    """The disk fills after three files (ENOSPC from the atomic write's fsync, where a full disk can surface
    first): the run ended in "internal error" with a traceback (libsndfile's "problem with initialization of the
    flac decoder", then the failed sidecar's OSError)."""
    import errno
    import json

    from omnivoice_demo.cli.main import main
    from omnivoice_demo.storage import atomic

    (tmp_path / "b.txt").write_text("Chapter 1\n\nOne is here. Two is here. Three is here. Four is here.\n")
    args = ["book", str(tmp_path / "b.txt"), "--model", str(tiny_fp32_folder), "--output", str(tmp_path / "out"),
            "--num-step", "2", "--no-guard", "--no-progress", "--format", "flac", "--no-readalong"]
    synced = []
    real_sync = atomic._sync_file

    def full_after_three(name):
        if len(synced) >= 3:
            raise OSError(errno.ENOSPC, "No space left on device", name)
        synced.append(name)
        real_sync(name)

    monkeypatch.setattr(atomic, "_sync_file", full_after_three)
    capsys.readouterr()
    assert main(args) == 2
    said = capsys.readouterr()
    assert "is full (ENOSPC). Free some space" in said.err and "run the same command again" in said.err
    assert "internal error" not in said.err + said.out and "Traceback" not in said.err + said.out
    assert str(tmp_path) not in said.err   # the file and folder by name, no path
    assert not list((tmp_path / "out").rglob("*.part"))   # no half-written file left
    monkeypatch.setattr(atomic, "_sync_file", real_sync)   # space freed
    assert main(args) == 0
    line = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert line["made"] + line["reused"] == 5 and (tmp_path / "out" / "chapters" / "01.flac").is_file()


def test_a_read_only_output_folder_is_said_not_an_internal_error(tmp_path, monkeypatch):
    """Opening the run's lock file on a read-only disk raised a bare OSError (an internal error)."""
    import builtins
    import errno

    from omnivoice_demo.batch.store import LOCK_NAME, FolderNotWritable, OutputFolder

    real_open = builtins.open

    def read_only(file, *args, **kwargs):
        if str(file).endswith(LOCK_NAME):
            raise OSError(errno.EROFS, "Read-only file system", str(file))
        return real_open(file, *args, **kwargs)

    folder = OutputFolder(tmp_path / "out").create()
    monkeypatch.setattr(builtins, "open", read_only)
    with pytest.raises(FolderNotWritable, match=r"is read-only \(EROFS\)\. Free some space \(or make the folder "
                                                r"writable\) and run the same command again"):
        with folder.lock():
            pass
