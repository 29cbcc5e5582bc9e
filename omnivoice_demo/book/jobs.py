"""Book jobs of the app: one per owner, run on the studio's engine between other requests, paused and resumed.

A job is a book project (``project``) in a folder of its owner's that no file route serves
(``<outputs>/books/<owner hash>/<book hash>``); the app copies a finished chapter or the M4B into an output
file of that owner's when it is asked for (``Studio.output_path``: on a shared server only they may fetch it).
Each sentence is made holding the model's lock, so other visitors' requests take turns with the book;
Pause stops the job after the sentence in flight, and Resume (or a new Start) runs the same project again,
which reuses every sentence made.  On a shared server a book is bounded before any work: its file and
unpacked size (``BookLimits.shared()``), its sentences (``MAX_SHARED_SENTENCES``) and its estimated hours
of audio (``MAX_SHARED_HOURS``); each owner has one job and the server ``MAX_SHARED_JOBS`` at a time.
"""

from __future__ import annotations

import dataclasses
import hashlib
import pathlib
import threading
import time
from typing import Optional

from ..batch.local import SharedEngineBackend
from ..errors import InvalidInput, ResourceLimitExceeded
from ..storage.links import is_regular_file
from .limits import BookLimits
from .project import (BookPlan, BookRun, BookSettings, chapter_summary, estimated_seconds, plan_book, run_book,
                      sentence_batch)
from .reading import book_of_chapters, read_book
from .voices import check_chapter_voices

MAX_SHARED_SENTENCES = 3000
MAX_SHARED_HOURS = 2.0
MAX_SHARED_JOBS = 2


@dataclasses.dataclass
class BookJob:
    owner: str
    folder: pathlib.Path
    plan: BookPlan
    settings: BookSettings
    state: str = "ready"          # ready, running, paused, done, failed
    message: str = ""
    result: Optional[BookRun] = None
    started: float = 0.0
    stop: threading.Event = dataclasses.field(default_factory=threading.Event)
    thread: Optional[threading.Thread] = None

    def chapters(self) -> list[dict]:
        """Each chapter: number, title, sentences, sentences made so far, estimated minutes."""
        made = sentence_batch(self.plan, self.settings, self.folder).written()
        rows = chapter_summary(self.plan)
        for row in rows:
            mine = [s for s in self.plan.sentences if s.chapter == row["number"]]
            row["made"] = sum(s.item_id in made for s in mine)
        return rows


class BookJobs:
    """The app's book jobs, by owner (``None``: the one person of a local app)."""

    def __init__(self, root: pathlib.Path, shared: bool):
        self.root, self.shared = pathlib.Path(root), shared
        self.jobs: dict[str, BookJob] = {}
        self.lock = threading.Lock()

    def limits(self) -> BookLimits:
        return BookLimits.shared() if self.shared else BookLimits()

    def open(self, owner: Optional[str], path: str, settings: BookSettings,
             chapters: Optional[str] = None, encoding: Optional[str] = None) -> BookJob:
        """Read and plan the book (every bound checked) as ``owner``'s job; replaces their job that is not running.
        ``chapters``: only these (``"1-3,5"``, as ``reading.book_of_chapters`` reads it); the settings' chapter
        voices count the chapters chosen; ``encoding``: as ``read_book``'s."""
        if self.shared and not owner:   # one job for every visitor without one would mix their books
            raise InvalidInput("This server keeps each visitor's book apart by a cookie, and this request has none: "
                               "allow cookies for this page and reload it.")
        key = owner or "local"
        with self.lock:
            current = self.jobs.get(key)
            if current is not None and current.state == "running":
                raise InvalidInput("Your book is being made; pause it before you open another.")
        book = book_of_chapters(read_book(path, self.limits(), encoding=encoding), chapters)
        check_chapter_voices(settings.chapter_voices, book.chapter_count)
        plan = plan_book(book, settings)
        if self.shared:
            hours = estimated_seconds(plan) / 3600
            if len(plan.sentences) > MAX_SHARED_SENTENCES:
                raise ResourceLimitExceeded(f"The book has {len(plan.sentences):,} sentences; this server makes "
                                            f"books of at most {MAX_SHARED_SENTENCES:,}. Choose fewer chapters.")
            if hours > MAX_SHARED_HOURS:
                raise ResourceLimitExceeded(f"The book would be about {hours:.1f} hours of audio; this server "
                                            f"makes at most {MAX_SHARED_HOURS:g} hours. Choose fewer chapters.")
        digest = hashlib.sha256(pathlib.Path(path).read_bytes()).hexdigest()[:20]
        folder = self.root / hashlib.sha256(key.encode()).hexdigest()[:20] / digest
        job = BookJob(owner=key, folder=folder, plan=plan, settings=settings)
        with self.lock:
            self.jobs[key] = job
        return job

    def get(self, owner: Optional[str]) -> Optional[BookJob]:
        return self.jobs.get(owner or "local")

    def start(self, owner: Optional[str], loaded) -> BookJob:
        """Run (or resume) ``owner``'s job in the background on ``loaded`` (the studio's model)."""
        job = self.get(owner)
        if job is None:
            raise InvalidInput("Upload a book first.")
        with self.lock:
            if job.state == "running":
                return job
            running = sum(j.state == "running" for j in self.jobs.values())
            if self.shared and running >= MAX_SHARED_JOBS:
                raise ResourceLimitExceeded(f"{running} books are being made on this server; try again later.")
            job.stop = threading.Event()
            job.state, job.message, job.started = "running", "", time.monotonic()

        def work():
            try:
                job.result = run_book(job.plan, job.settings, job.folder, progress=False,
                                      backend=lambda: SharedEngineBackend(loaded.engine, loaded.lock, job.stop))
                if job.result.failed:
                    job.state = "failed"
                    errors = list(job.result.summary.errors.values())   # one reason said once, with its count
                    job.message = "; ".join(f"{errors.count(m)} sentence{'s' if errors.count(m) > 1 else ''} failed: "
                                            f"{m}" for m in list(dict.fromkeys(errors))[:3])
                else:
                    job.state = "done" if job.result.output else "paused"
            except Exception as exc:  # noqa: BLE001 - the job's error is shown to its owner, not raised in a thread
                from ..errors import one_line

                job.state, job.message = "failed", one_line(exc) if isinstance(exc, InvalidInput) else (
                    f"internal error ({type(exc).__name__}); please report it")

        job.thread = threading.Thread(target=work, name=f"book-{job.owner[:8]}", daemon=True)
        job.thread.start()
        return job

    def pause(self, owner: Optional[str]) -> Optional[BookJob]:
        job = self.get(owner)
        if job is not None and job.state == "running":
            job.stop.set()
        return job

    def chapter_file(self, owner: Optional[str], number: int) -> Optional[pathlib.Path]:
        job = self.get(owner)
        if job is None:
            return None
        path = job.folder / "chapters" / f"{number:02d}.flac"
        return path if is_regular_file(path) else None   # never a link out of the project (``storage.links``)
