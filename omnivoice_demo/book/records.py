"""What a joined chapter leaves behind (``chapters/NN.chapter.json``), and when a later run may keep it.

A book made in parts (``--chapters 1-3`` one evening, ``--chapters 5-6`` the next) is one book: the outputs hold
every chapter made so far.  A chapter joined by an earlier run is kept only when it is what this run would make:
its record names the book (title, author, chapter count), its sentences as the book writes them (paragraph, text,
item id, speaker) with the render key each was made under, its title, and how it was joined (pauses, loudness,
subtitles: ``join_settings``).  The run plans the earlier chapters again with its own settings and the book as it
is now, hands their sentences to the batch with its own (each reused exactly when its render key is the key of
what would run now), and keeps a chapter only when every sentence's row and key and the joining match
(``stale_chapters`` says why one does not): another voice, model, backbone or lexicon, a revised text under the
same title, or another loudness makes the chapter again, so one M4B never mixes two ways of making it.

A record is input too: it is read only when it is a regular file of ``chapters/`` (never through a link,
``storage.links``), and the files it names must be the chapter's own (``chapters/NN.*``), never a path elsewhere.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import pathlib
import re
from typing import TYPE_CHECKING, Optional

from ..batch.subtitles import Cue
from ..storage.links import is_regular_file, read_regular

if TYPE_CHECKING:
    from ..batch.results import BatchResult
    from ..batch.store import OutputFolder
    from .contents import Book

#: bump when a change of the joining alters a chapter made from the same sentences (a chapter record of another
#: version is joined again)
JOIN_VERSION = 1
#: a record larger than this is no record of ours (a chapter of 5,000 sentences with word timings is ~3 MB)
MAX_RECORD_BYTES = 64 * 2**20


@dataclasses.dataclass(frozen=True)
class Sentence:
    chapter: int          # from 1
    paragraph: int        # from 0, in its chapter
    text: str             # as the book writes it
    item_id: str
    speaker: str = ""


@dataclasses.dataclass
class JoinedChapter:
    number: int
    title: str
    file: str            # chapters/NN.flac, relative to the output folder
    samples: int
    sample_rate: int
    sentences: int
    rms_db: float
    peak_db: float
    gain_db: float
    meets_target: Optional[bool]
    cues: list = dataclasses.field(default_factory=list, repr=False)
    # per sentence (as ``cues``), its words' times in the sentence's own seconds (the batch sidecar's ``words``,
    # made with ``word_timestamps``); empty lists without them
    words: list = dataclasses.field(default_factory=list, repr=False)
    files: list = dataclasses.field(default_factory=list)   # chapters/NN.* it wrote (relative to the output folder)

    @property
    def seconds(self) -> float:
        return self.samples / self.sample_rate


@dataclasses.dataclass
class Record:
    """An earlier run's chapter as its record says: the chapter, its sentences, their render keys, its joining."""

    chapter: JoinedChapter
    sentences: list[Sentence]
    keys: list
    joined_with: dict


def join_settings(settings) -> dict:
    """What decides a joined chapter besides its sentences' audio: the pauses, the loudness target, the subtitles
    (``BookSettings``), and ``JOIN_VERSION``."""
    loudness = settings.loudness
    return {"version": JOIN_VERSION, "paragraph_pause": settings.paragraph_pause,
            "chapter_pause": settings.chapter_pause, "subtitles": list(settings.subtitles),
            "loudness": None if loudness is None else [loudness.rms_db, loudness.peak_ceiling_db]}


def book_fingerprint(book: "Book") -> str:
    """Which book a chapter record belongs to: its title, author and number of chapters."""
    return hashlib.sha256(json.dumps([book.title, book.author, book.chapter_count]).encode()).hexdigest()[:16]


def record_path(folder: "OutputFolder", number: int) -> pathlib.Path:
    return folder.path / f"chapters/{number:02d}.chapter.json"


def write_chapter_record(folder: "OutputFolder", book: "Book", chapter: JoinedChapter, sentences, keys: list,
                         joined_with: dict) -> None:
    """What the outputs need of a joined chapter when a later run makes other chapters, and what that run checks
    before it keeps it (the module's parts)."""
    data = {k: v for k, v in dataclasses.asdict(chapter).items() if k != "cues"}
    data["cues"] = [[c.start, c.end, c.text, c.speaker] for c in chapter.cues]
    data["sentence_rows"] = [[s.paragraph, s.text, s.item_id, s.speaker] for s in sentences]
    data["keys"] = list(keys)
    data["joined_with"] = joined_with
    data["book"] = book_fingerprint(book)
    data["files"] = chapter.files + [f"chapters/{chapter.number:02d}.chapter.json"]
    folder.write_json(record_path(folder, chapter.number), data)


def read_chapter_records(folder: "OutputFolder", book: "Book") -> dict[int, Record]:
    """The chapters earlier runs joined for this book (by number); a record of another book, one unreadable or no
    regular file, one naming a file that is not its chapter's own, or whose audio is gone, is not one."""
    found: dict[int, Record] = {}
    fingerprint = book_fingerprint(book)
    chapters = folder.path / "chapters"
    if chapters.is_symlink() or not chapters.is_dir():
        return found
    for path in sorted(chapters.glob("*.chapter.json")):
        raw = read_regular(path, MAX_RECORD_BYTES)
        try:
            data = json.loads(raw) if raw is not None else None
            if not isinstance(data, dict) or data.get("book") != fingerprint:
                continue
            number = int(data["number"])
            own = f"chapters/{number:02d}."
            files = [str(name) for name in data["files"]]
            if (path.name != f"{number:02d}.chapter.json" or data["file"] != f"{own}flac"
                    or not all(re.fullmatch(re.escape(own) + r"[\w.]+", name) for name in files)
                    or not is_regular_file(folder.path / data["file"])):
                continue
            chapter = JoinedChapter(
                number=number, title=str(data["title"]), file=str(data["file"]), samples=int(data["samples"]),
                sample_rate=int(data["sample_rate"]), sentences=int(data["sentences"]), rms_db=data["rms_db"],
                peak_db=data["peak_db"], gain_db=data["gain_db"], meets_target=data["meets_target"],
                cues=[Cue(float(a), float(b), str(t), str(s)) for a, b, t, s in data["cues"]],
                words=list(data["words"]), files=files)
            rows = [Sentence(number, int(p), str(t), str(i), str(s)) for p, t, i, s in data["sentence_rows"]]
            record = Record(chapter, rows, list(data.get("keys") or []), dict(data.get("joined_with") or {}))
        except (ValueError, KeyError, TypeError):
            continue
        if 1 <= number <= book.chapter_count:
            found[number] = record
    return found


def stale_chapters(records: dict[int, Record], plan, done: "BatchResult", settings) -> dict[int, str]:
    """Of the earlier runs' ``records``, those this run would make otherwise, each with why: its sentences now
    (``plan``'s, as the book is now, with this run's settings) are other sentences, or were made under other
    render keys (``done``: this run's batch, which made or reused them), or its title or joining differ."""
    stale = {}
    joined_with = join_settings(settings)
    titles = dict(plan.book.numbered())
    for number, record in records.items():
        mine = [s for s in plan.sentences if s.chapter == number]
        keys = [done.items[s.item_id].key if s.item_id in done.items else None for s in mine]
        written = [(s.paragraph, s.text, s.speaker) for s in mine]
        if written != [(s.paragraph, s.text, s.speaker) for s in record.sentences] or (
                titles[number].title != record.chapter.title):
            stale[number] = "its text is not the book's now (a revised edition?)"
        elif mine != record.sentences or keys != record.keys or None in keys:   # the items, their keys
            stale[number] = ("its sentences were made otherwise (another voice, model, compute, lexicon or settings: "
                             "their render keys differ)")
        elif record.joined_with != joined_with:
            stale[number] = "it was joined otherwise (pauses, loudness or subtitles)"
    return stale


def remove_stale_chapter_files(folder: "OutputFolder", chapters: list[JoinedChapter], settings) -> None:
    """Remove what no kept chapter wrote from ``chapters/``: an earlier run's word-level subtitles or other
    format, a chapter file of another book or numbered otherwise (temporary ``.part-`` files are the batch
    store's)."""
    kept = {name for c in chapters for name in c.files} | {f"chapters/{c.number:02d}.chapter.json" for c in chapters}
    if settings.audio_format not in ("m4b", "flac"):
        kept |= {f"chapters/{c.number:02d}.{settings.audio_format}" for c in chapters}
    for path in (folder.path / "chapters").iterdir():
        if re.match(r"\d+\.", path.name) and f"chapters/{path.name}" not in kept and (path.is_file()
                                                                                       or path.is_symlink()):
            path.unlink()
