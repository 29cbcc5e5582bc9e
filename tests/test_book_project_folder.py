"""What a book's project folder holds is input: links are never followed, and an earlier run's chapters are kept
only when they are what this run would make (issue 57, points 8 and 9).

* A ``chapters/`` folder that is a link to another folder was written through (an outside file overwritten, and
  files there that no chapter wrote removed); it is now replaced by a folder of its own.  A sentence's sidecar or
  audio that is a link out of the project was followed and trusted (the sentence reused); it is now made again,
  and the atomic write replaces the link.
* Chapters joined by an earlier run were put in the M4B when title, author and chapter count matched, whatever
  made them: a book made in parts with another voice for the later part mixed two voices, and a revised edition
  under the same title kept the old chapters' audio.  Now each earlier chapter is planned again with this run's
  settings and kept only when its sentences and their render keys match; otherwise it is joined again from
  sentences made as this run makes them, and the report says which chapter and why.

The tiny model's audio is noise-like (random weights): these tests check files and bookkeeping only.
"""

from __future__ import annotations

import json

import pytest

from omnivoice_demo.storage.digests import file_sha256

pytest.importorskip("ebooklib")

TEXT = "Chapter 1\n\nThe sea was calm.\n\nChapter 2\n\nThe storm came.\n\nChapter 3\n\nThe morning was bright.\n"


def make(model, book, output, capsys, *extra) -> dict:
    from omnivoice_demo.cli.main import main

    capsys.readouterr()
    code = main(["book", str(book), "--model", str(model), "--output", str(output), "--num-step", "2", "--no-guard",
                 "--no-progress", "--format", "flac", "--no-readalong", *extra])
    out = capsys.readouterr().out.strip().splitlines()
    assert code == 0, out
    return json.loads(out[-1])


def report(output) -> dict:
    return json.loads((output / "report.json").read_text())


def test_a_chapters_folder_linked_elsewhere_is_replaced_not_written_through(tiny_fp32_folder, tmp_path, capsys):
    book = tmp_path / "b.txt"
    book.write_text(TEXT)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "01.flac").write_bytes(b"not yours")
    (outside / "07.srt").write_text("someone's subtitles")
    output = tmp_path / "out"
    output.mkdir()
    (output / "chapters").symlink_to(outside, target_is_directory=True)
    make(tiny_fp32_folder, book, output, capsys)
    assert (outside / "01.flac").read_bytes() == b"not yours"                     # not overwritten
    assert (outside / "07.srt").read_text() == "someone's subtitles"              # not removed as stale
    assert sorted(p.name for p in outside.iterdir()) == ["01.flac", "07.srt"]    # nothing written there
    assert not (output / "chapters").is_symlink() and (output / "chapters" / "03.flac").is_file()
    assert any("chapters/ was a link" in note for note in report(output)["notes"])


def test_a_sentence_file_linked_out_of_the_project_is_never_trusted(tiny_fp32_folder, tmp_path, capsys):
    book = tmp_path / "b.txt"
    book.write_text(TEXT)
    output, outside = tmp_path / "out", tmp_path / "outside"
    first = make(tiny_fp32_folder, book, output, capsys)
    assert first["made"] == 6
    outside.mkdir()
    sentences = sorted((output / "sentences").glob("*.json"))
    linked_sidecar, linked_audio = sentences[0], sentences[1].with_suffix(".flac")
    for path in (linked_sidecar, linked_audio):   # the same bytes, but a link to a file out of the project
        copy = outside / path.name
        copy.write_bytes(path.read_bytes())
        path.unlink()
        path.symlink_to(copy)
    kept = {p.name: file_sha256(p) for p in outside.iterdir()}
    again = make(tiny_fp32_folder, book, output, capsys)
    assert (again["made"], again["reused"]) == (2, 4)   # the two linked sentences made again, not trusted
    assert {p.name: file_sha256(p) for p in outside.iterdir()} == kept   # nothing written through the links
    assert not linked_sidecar.is_symlink() and not linked_audio.is_symlink()
    assert json.loads(linked_sidecar.read_text())["status"] == "done"


def test_a_record_naming_a_file_out_of_its_chapter_is_not_one(tiny_fp32_folder, tmp_path, capsys):
    """A chapter record's ``file`` is read into the M4B: one naming a path elsewhere is no record of ours."""
    from omnivoice_demo.batch.store import OutputFolder
    from omnivoice_demo.book.reading import book_of_chapters, read_book
    from omnivoice_demo.book.records import read_chapter_records

    book = tmp_path / "b.txt"
    book.write_text(TEXT)
    output = tmp_path / "out"
    make(tiny_fp32_folder, book, output, capsys, "--chapters", "1")
    whole = book_of_chapters(read_book(book), "2")
    assert set(read_chapter_records(OutputFolder(output), whole)) == {1}
    record = output / "chapters" / "01.chapter.json"
    data = json.loads(record.read_text())
    (tmp_path / "secret.flac").write_bytes((output / "chapters" / "01.flac").read_bytes())
    record.write_text(json.dumps(dict(data, file="../secret.flac")))
    assert read_chapter_records(OutputFolder(output), whole) == {}
    record.unlink()
    (tmp_path / "elsewhere.json").write_text(json.dumps(data))
    record.symlink_to(tmp_path / "elsewhere.json")
    assert read_chapter_records(OutputFolder(output), whole) == {}


def chapter_digests(output) -> dict[str, str]:
    return {name: file_sha256(output / "chapters" / name) for name in ("01.flac", "02.flac")}


def test_a_book_made_in_parts_with_another_voice_remakes_the_earlier_chapters(tiny_fp32_folder, tmp_path, capsys):
    """The first evening's chapters 1-2 in one voice, the next evening's chapter 3 in another: the M4B must not mix
    them, so chapters 1-2 are made again in the voice of this run (their sentences too), and a run as the last
    one makes and joins nothing again."""
    from omnivoice_demo.book.containers import read_chapters

    book = tmp_path / "b.txt"
    book.write_text(TEXT)
    output = tmp_path / "out"
    first = make(tiny_fp32_folder, book, output, capsys, "--chapters", "1-2", "--voice", "alloy")
    assert first["made"] == 4
    before = chapter_digests(output)
    second = make(tiny_fp32_folder, book, output, capsys, "--chapters", "3", "--voice", "nova", "--format", "m4b")
    assert (second["made"], second["reused"], second["chapters"]) == (6, 0, 3)   # 1-2 made again with nova
    assert all(chapter_digests(output)[name] != digest for name, digest in before.items())
    notes = report(output)["notes"]
    assert [n.split(":")[0] for n in notes if "joined again" in n] == ["chapter 1 was joined again",
                                                                       "chapter 2 was joined again"]
    assert "render keys differ" in notes[-1]
    assert [c["title"] for c in read_chapters(output / "b.m4b")] == ["Chapter 1", "Chapter 2", "Chapter 3"]
    joined = [row[2] for n in (1, 2, 3)
              for row in json.loads((output / "chapters" / f"0{n}.chapter.json").read_text())["sentence_rows"]]
    assert {json.loads((output / "sentences" / f"{item}.json").read_text())["instruct"] for item in joined} == {
        "female, young adult, high pitch, american accent"}   # nova's design, in every chapter
    # the same run again: every chapter is what it would make, nothing is made or joined again
    kept = chapter_digests(output)
    third = make(tiny_fp32_folder, book, output, capsys, "--chapters", "3", "--voice", "nova", "--format", "m4b")
    assert (third["made"], third["reused"]) == (0, 6) and chapter_digests(output) == kept
    assert not [n for n in report(output)["notes"] if "joined again" in n]


def test_a_revised_edition_under_the_same_title_remakes_its_changed_chapters(tiny_fp32_folder, tmp_path, capsys):
    book = tmp_path / "b.txt"
    book.write_text(TEXT)
    output = tmp_path / "out"
    make(tiny_fp32_folder, book, output, capsys, "--chapters", "1-2")
    unchanged = file_sha256(output / "chapters" / "02.flac")
    book.write_text(TEXT.replace("The sea was calm.", "The sea was rough."))   # same title, author, chapters
    again = make(tiny_fp32_folder, book, output, capsys, "--chapters", "3")
    assert (again["made"], again["reused"]) == (3, 3)   # chapter 3's two, and the revised sentence
    assert "The sea was rough." in (output / "chapters" / "01.srt").read_text()
    assert file_sha256(output / "chapters" / "02.flac") == unchanged   # chapter 2 is what this run makes: kept
    notes = [n for n in report(output)["notes"] if "joined again" in n]
    assert notes == ["chapter 1 was joined again: its text is not the book's now (a revised edition?)"]


def test_an_earlier_chapter_joined_at_another_loudness_is_joined_again(tiny_fp32_folder, tmp_path, capsys):
    book = tmp_path / "b.txt"
    book.write_text(TEXT)
    output = tmp_path / "out"
    make(tiny_fp32_folder, book, output, capsys, "--chapters", "1", "--rms", "-20")
    again = make(tiny_fp32_folder, book, output, capsys, "--chapters", "2", "--rms", "-23")
    assert (again["made"], again["reused"]) == (2, 2)
    notes = [n for n in report(output)["notes"] if "joined again" in n]
    assert notes == ["chapter 1 was joined again: it was joined otherwise (pauses, loudness or subtitles)"]
    assert json.loads((output / "chapters" / "01.chapter.json").read_text())["joined_with"]["loudness"][0] == -23
