"""Family 67 of the hardening probe (issue 57, point 9):
an earlier run's chapters reused only when this run would make them: a book made in parts with another voice,
a revised edition under the same title.

``omnivoice book`` on a three-chapter text book with the tiny model: chapters 1-2 one evening in one voice, chapter
3 the next in another with ``--format m4b``.  Held: the M4B does not mix voices (every sentence of every chapter
joined in it is in the last run's voice, read from the chapters' records and the sentences' sidecars), the
chapters remade are said in report.json's notes; a revised sentence under the same title is in the remade
chapter's subtitles, and the chapter that did not change is kept as it was."""

from __future__ import annotations

import hashlib
import json
import pathlib

from ..probe import Probe
from ..visitor import tail
from .book_links import TEXT, make
from .books import clean

FAMILY = 67
WHAT = "book chapters reused by render key: a book made in parts with another voice, a revised edition"
#: starts its own processes (``run(probe)``)
SHARED = False


def voices_joined(output: pathlib.Path) -> set[str]:
    """The voice (its design's instruct, else its name) of every sentence the chapters' records join."""
    found = set()
    for record in sorted((output / "chapters").glob("*.chapter.json")):
        for row in json.loads(record.read_text()).get("sentence_rows", []):
            sidecar = json.loads((output / "sentences" / f"{row[2]}.json").read_text())
            found.add(str(sidecar.get("instruct") or sidecar.get("voice")))
    return found


def notes(output: pathlib.Path) -> list[str]:
    try:
        return json.loads((output / "report.json").read_text()).get("notes", [])
    except (OSError, ValueError):
        return []


def sha(path: pathlib.Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else ""


def run(probe: Probe) -> None:
    root = probe.work / "book-reuse"
    root.mkdir(parents=True, exist_ok=True)
    book = root / "b.txt"
    book.write_text(TEXT)
    output = root / "out"

    def in_parts() -> tuple[str, str]:
        code1, out1, first = make(probe, book, output, "--chapters", "1-2", "--voice", "alloy")
        before = {n: sha(output / "chapters" / f"0{n}.flac") for n in (1, 2)}
        code2, out2, second = make(probe, book, output, "--chapters", "3", "--voice", "nova", "--format", "m4b")
        joined = voices_joined(output)
        remade = [n for n in (1, 2) if sha(output / "chapters" / f"0{n}.flac") != before[n]]
        said = [n.split(":")[0] for n in notes(output) if "joined again" in n]
        m4b = list(output.glob("*.m4b"))
        held = code1 == 0 and code2 == 0 and clean(out1 + out2) and len(joined) == 1 and remade == [1, 2] and \
            len(said) == 2 and len(m4b) == 1
        return ("held" if held else "broke"), (f"exits {code1}, {code2}; second run made {second.get('made')}, "
                                               f"reused {second.get('reused')}; voices joined: {len(joined)}; "
                                               f"chapters remade {remade}; notes: {said}; M4B {[p.name for p in m4b]}; "
                                               f"{tail(out2, 80)}")
    probe.guarded(None, 67, "chapters 1-2 with voice alloy, then chapter 3 with voice nova and --format m4b",
                  "both exit 0; the M4B's chapters all in nova's voice (1-2 joined again and said), never mixed",
                  in_parts)

    def revised() -> tuple[str, str]:
        if not (output / "chapters" / "02.flac").is_file():
            return "broke", "the chapters of the case before are missing"
        unchanged = sha(output / "chapters" / "02.flac")
        book.write_text(TEXT.replace("The sea was calm.", "The sea was rough."))   # same title, author, chapters
        code, out, line = make(probe, book, output, "--chapters", "3", "--voice", "nova", "--format", "m4b")
        srt = (output / "chapters" / "01.srt")
        revised_in = srt.is_file() and "The sea was rough." in srt.read_text()
        kept = sha(output / "chapters" / "02.flac") == unchanged
        said = [n for n in notes(output) if "joined again" in n]
        held = code == 0 and clean(out) and revised_in and kept and len(said) == 1 and said[0].startswith("chapter 1")
        return ("held" if held else "broke"), (f"exit {code}, made {line.get('made')}, reused {line.get('reused')}; "
                                               f"the revised sentence in 01.srt: {revised_in}; chapter 2 kept: {kept};"
                                               f" notes: {said}")
    probe.guarded(None, 67, "a revised edition under the same title (one sentence of chapter 1 changed), chapter 3 "
                  "asked for", "exit 0; chapter 1 joined again with the new sentence and said; chapter 2 kept",
                  revised)
