"""Family 66 of the hardening probe (issue 57, point 8):
links in a book's project folder: chapters/ linked to another folder, a sentence's files linked out of the project.

Every case runs ``omnivoice book`` (``.books.book_run``) on a three-chapter text book with the tiny model.  Held:
nothing outside the project is written, overwritten or removed through a link; the link is replaced by a file or
folder of the project's own; a sentence whose files were links is made again, not trusted; no traceback."""

from __future__ import annotations

import hashlib
import json
import pathlib

from ..probe import Probe
from ..visitor import tail
from .book_faults import last_line
from .books import book_run, clean

FAMILY = 66
WHAT = "links in a book's folder: chapters/ linked elsewhere, a sentence's files linked out of the project"
#: starts its own processes (``run(probe)``)
SHARED = False

TEXT = "Chapter 1\n\nThe sea was calm.\n\nChapter 2\n\nThe storm came.\n\nChapter 3\n\nThe morning was bright.\n"


def make(probe: Probe, book: pathlib.Path, output: pathlib.Path, *extra: str) -> tuple[int, str, dict]:
    code, out, _, _ = book_run(probe, str(book), "--output", str(output), "--model", str(probe.model), "--precision",
                               "fp32", "--num-step", "1", "--no-guard", "--no-progress", "--format", "flac",
                               "--no-readalong", *extra, timeout=600)
    return code, out, last_line(out)


def digests(folder: pathlib.Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir()) if p.is_file()}


def run(probe: Probe) -> None:
    root = probe.work / "book-links"
    root.mkdir(parents=True, exist_ok=True)
    book = root / "b.txt"
    book.write_text(TEXT)

    def chapters_linked() -> tuple[str, str]:
        outside = root / "outside-chapters"
        outside.mkdir(exist_ok=True)
        (outside / "01.flac").write_bytes(b"not yours")
        (outside / "07.srt").write_text("someone's subtitles")
        before = digests(outside)
        output = root / "out-chapters"
        output.mkdir(exist_ok=True)
        (output / "chapters").symlink_to(outside, target_is_directory=True)
        code, out, line = make(probe, book, output)
        untouched = digests(outside) == before
        replaced = not (output / "chapters").is_symlink() and (output / "chapters" / "03.flac").is_file()
        held = code == 0 and clean(out) and untouched and replaced
        return ("held" if held else "broke"), (f"exit {code}; outside untouched: {untouched} "
                                               f"({sorted(digests(outside))}); chapters/ a folder of its own with "
                                               f"03.flac: {replaced}; {tail(out, 120)}")
    probe.guarded(None, 66, "chapters/ a link to a folder outside the project holding 01.flac and 07.srt",
                  "exit 0; the outside files neither overwritten nor removed, nothing added there; chapters/ "
                  "replaced by a folder of the project's own", chapters_linked)

    def sentence_linked() -> tuple[str, str]:
        output = root / "out-sentences"
        code0, out0, first = make(probe, book, output)
        sidecars = sorted((output / "sentences").glob("*.json"))
        if code0 != 0 or len(sidecars) < 2:
            return "broke", f"the first run: exit {code0}: {tail(out0)}"
        outside = root / "outside-sentences"
        outside.mkdir(exist_ok=True)
        linked = [sidecars[0], sidecars[1].with_suffix(".flac")]
        for path in linked:   # the same bytes, but a link to a file out of the project
            copy = outside / path.name
            copy.write_bytes(path.read_bytes())
            path.unlink()
            path.symlink_to(copy)
        before = digests(outside)
        code, out, line = make(probe, book, output)
        untouched = digests(outside) == before
        replaced = not any(path.is_symlink() for path in linked)
        done = json.loads(linked[0].read_text()).get("status") == "done" if linked[0].is_file() else False
        held = code == 0 and clean(out) and untouched and replaced and done and line.get("made") == 2
        return ("held" if held else "broke"), (f"first run made {first.get('made')}; again: exit {code}, made "
                                               f"{line.get('made')}, reused {line.get('reused')}; outside untouched: "
                                               f"{untouched}; links replaced: {replaced}; {tail(out, 100)}")
    probe.guarded(None, 66, "a sentence's sidecar and another's audio made links to copies out of the project, "
                  "then the book run again", "exit 0; those two sentences made again (not trusted), nothing written "
                  "through the links, the links replaced by files of the project's own", sentence_linked)
