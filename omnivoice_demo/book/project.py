"""A book project: the book's sentences as batch items, made once, then joined into chapters and the outputs.

The output folder::

    DIR/sentences/        the batch output folder: one item per distinct sentence (``<id>.flac`` + sidecar)
    DIR/chapters/         NN.flac (and .mp3/.opus with --format), NN.srt, NN.vtt: each chapter, joined; NN is the
                          chapter's number in the book; NN.chapter.json: what the outputs need of it (below)
    DIR/<title>.m4b       the audiobook: AAC in MP4, chapter markers, title, author, cover
    DIR/<title>.readalong.epub   the text with media overlays (SMIL): read along, sentence by sentence
    DIR/report.json       chapters, loudness per chapter, sentences that failed every take, what was skipped

A sentence's item is its text after the lexicon, its voice (a voice file), its generation settings and its
seed (the book's ``--seed``, else one from the spoken text); the item's id is the digest of what it asks
(``BatchItem.request_digest``), so a sentence is found again wherever it moved and the same sentence twice is
made once.  Whether a sentence made before is reused is decided by its render key alone
(``engine.render_key``: the text as the model reads it, the voice's content, the settings and seed, the
model's content, the backbone compute that runs, the normaliser, the engine's output version), so a lexicon
entry changes exactly the sentences that hold its word, a new voice for one character exactly that
character's sentences, and other weights or another compute every sentence, while the same compute under
another name (``auto`` resolving to it) or a copy of the model folder elsewhere remakes none.  The book hands
the batch machinery one plan (``sentence_batch``: the distinct sentences, their folder and format, the model and
the workers of the settings) in one call (``batch.runner.run_batch``), which does the rest: what is done is
reused (its audio's sha256 checked), every file is written atomically, sidecar last, so ``kill -9`` loses at most
the sentences in flight; the same items run in this process, in worker processes or on Ray actors.  The chapters
are joined from what it hands back (``batch.results.BatchResult``: each sentence's audio and record).

A book made in parts (``--chapters 1-3`` one evening, ``--chapters 5-6`` the next) is one book that grows: each
chapter keeps its number in the book (its files ``chapters/NN.*``), each joined chapter leaves a record
(``chapters/NN.chapter.json``, ``records``), and the outputs (the M4B, the read-along) hold every chapter made so
far, in book order: the chapters of this run and those earlier runs joined, each kept only when its sentences
and their render keys are what this run would make (else joined again from sentences made as this run makes
them: one M4B never mixes voices, models or editions).  Files in ``chapters/`` that no kept chapter wrote (a
word-level subtitle of an earlier run, another book's chapter) are removed.  ``sentences/`` and ``chapters/``
are folders of the project's own: a link there is replaced, never written through (``storage.links``).
"""

from __future__ import annotations

import dataclasses
import json
import pathlib
import re
import time
from typing import Callable, Mapping, Optional

import numpy as np

from ..batch.items import BatchItem, default_seed
from ..batch.plan import BatchPlan, Workers
from ..batch.results import BatchResult, Summary
from ..batch.runner import Backend, run_batch
from ..batch.store import OutputFolder
from ..storage.links import own_folder
from ..asr.alignment import WordTiming
from ..batch.subtitles import FORMATS as SUBTITLE_FORMATS, Cue, render, word_subtitles
from ..batch.worker import NO_AUDIO_TAKES, Job, ModelSpec
from ..settings.generation import GenerationConfig
from ..text.lexicon import Lexicon
from ..text.sentences import sentence_texts
from ..errors import InvalidInput
from .contents import Book
from .records import (JoinedChapter, Sentence, join_settings, read_chapter_records, remove_stale_chapter_files,
                      stale_chapters, write_chapter_record)
from .voices import Part, Voicing, parts_of

#: how each sentence is kept (lossless)
SENTENCE_FORMAT = "flac"
OUTPUT_FORMATS = ("m4b", "mp3", "opus", "flac")
#: ACX (Audible): RMS between -23 and -18 dBFS, peaks at most -3 dBFS; the target is the middle
ACX_RMS_RANGE = (-23.0, -18.0)
ACX_PEAK_CEILING = -3.0
#: seconds of silence kept for a sentence whose every take had no audio (the report names it)
SILENT_SENTENCE = 0.5


@dataclasses.dataclass(frozen=True)
class Loudness:
    """A chapter's level target: RMS (dBFS) under a peak ceiling (dBFS), and the range that passes."""

    rms_db: float = -20.0
    peak_ceiling_db: float = ACX_PEAK_CEILING
    rms_range: tuple[float, float] = ACX_RMS_RANGE


@dataclasses.dataclass(frozen=True)
class BookSettings:
    config: GenerationConfig
    narrator: Voicing
    dialogue: Optional[Voicing] = None
    cast: Mapping[str, Voicing] = dataclasses.field(default_factory=dict)
    chapter_voices: Mapping[int, Voicing] = dataclasses.field(default_factory=dict)   # chapter number -> narrator
    language: Optional[str] = None        # overrides the book's
    lexicon: Lexicon = Lexicon()
    paragraph_pause: float = 0.6          # seconds of silence between paragraphs
    chapter_pause: float = 2.0            # and after each chapter
    loudness: Optional[Loudness] = Loudness()
    audio_format: str = "m4b"
    subtitles: tuple[str, ...] = SUBTITLE_FORMATS
    readalong: bool = True
    #: how the workers find the model (None: the caller runs the book on an engine already open, the app's)
    model: Optional[ModelSpec] = None
    workers: Workers = Workers()           # where the sentences run: this process, N processes, Ray actors


@dataclasses.dataclass
class BookPlan:
    book: Book
    language: Optional[str]
    sentences: list[Sentence]
    items: list[BatchItem]          # one per distinct sentence (its id is its key)
    notes: list[str]


def book_language(book: Book, override: Optional[str]) -> tuple[Optional[str], list[str]]:
    """The language to speak: ``override``, else the book's (``en-GB`` -> ``en`` when the model has no ``en-GB``)."""
    from ..text.languages import resolve_language

    if override:
        return resolve_language(override), []
    if not book.language:
        return None, ["the book names no language: the model chooses (give --language to set it)"]
    for candidate in (book.language, book.language.replace("_", "-").split("-")[0]):
        try:
            return resolve_language(candidate), []
        except InvalidInput:
            continue
    return None, [f"the book's language {book.language!r} is not one the model knows; the model chooses "
                  "(give --language to set it)"]


def plan_book(book: Book, settings: BookSettings) -> BookPlan:
    """Every sentence of ``book`` with its voice, and the distinct items to make (no compute)."""
    language, notes = book_language(book, settings.language)
    sentences: list[Sentence] = []
    items: dict[str, BatchItem] = {}
    for number, chapter in book.numbered():
        narrator = settings.chapter_voices.get(number, settings.narrator)
        for index, paragraph in enumerate(chapter.paragraphs):
            for part in parts_of(paragraph, narrator, settings.dialogue, settings.cast):
                for text in sentence_texts(part.text, language):
                    item = sentence_item(text, part, language, settings)
                    items.setdefault(item.id, dataclasses.replace(item, line=len(items) + 1))
                    sentences.append(Sentence(number, index, text, item.id, part.speaker))
    return BookPlan(book=book, language=language, sentences=sentences, items=list(items.values()), notes=notes)


def sentence_item(text: str, part: Part, language: Optional[str], settings: BookSettings) -> BatchItem:
    """The batch item of one sentence; its id is the digest of what it asks (see the module)."""
    spoken = settings.lexicon.apply(text)
    config = settings.config
    if config.seed is None:
        config = config.replace(seed=default_seed("book", spoken))
    item = BatchItem(id="pending", line=0, text=spoken, language=language, instruct=part.voicing.instruct,
                     voice=part.voicing.voice, config=config)
    return dataclasses.replace(item, id="s" + item.request_digest()[:32])


@dataclasses.dataclass
class BookRun:
    """What a run did: the JSON line's figures, the report's path, the outputs."""

    chapters: int
    sentences: int
    made: int
    reused: int
    failed: int
    output: Optional[str]
    report: str
    summary: Summary
    timings: dict = dataclasses.field(default_factory=dict)   # seconds (and _cpu: this process's CPU seconds) of
    # synthesis (with start-up; local workers and Ray actors are other processes), join, outputs
    silent: list = dataclasses.field(default_factory=list)   # sentences kept as silence (``silent_sentences``)
    failed_checks: int = 0   # sentences whose every take failed the sentence check (``failed_checks``)

    def line(self) -> str:
        """The run's last line: one JSON object; where sentences failed their check, how many and the report
        that names them."""
        figures = {"chapters": self.chapters, "sentences": self.sentences, "made": self.made,
                   "reused": self.reused, "output": self.output}
        if self.failed_checks:
            figures.update(failed_checks=self.failed_checks, report=self.report)
        return json.dumps(figures, ensure_ascii=False)

    def checks_words(self) -> str:
        """How many sentences failed the sentence check in every take, in words."""
        return (f"{self.failed_checks} of {self.made + self.reused} sentences failed the sentence check in every "
                "take (the best take was kept)")


def sentence_batch(plan: BookPlan, settings: BookSettings, output) -> BatchPlan:
    """What the batch runner is handed: the book's distinct sentences, kept lossless in ``<output>/sentences``,
    those that failed before tried again, one whose every take had no audio kept as ``SILENT_SENTENCE`` of
    silence, made by the model and on the workers ``settings`` name."""
    job = Job(output=str(pathlib.Path(output) / "sentences"), audio_format=SENTENCE_FORMAT,
              silence_for_no_audio=SILENT_SENTENCE)
    return BatchPlan(items=tuple(plan.items), job=job, model=settings.model, workers=settings.workers,
                     retry_failed=True)


def run_book(plan: BookPlan, settings: BookSettings, output, progress: bool = True,
             on_chapter: Optional[Callable[[int, str], None]] = None,
             backend: Optional[Callable[[], Backend]] = None) -> BookRun:
    """Make what is missing, then join the chapters and write the outputs (only when every sentence is made).
    ``backend``: run the sentences on it (an engine already open: the app's) rather than on ``settings.model``.

    The chapters earlier runs joined (``records``) are planned again with this run's settings and their sentences
    run with this run's, so each is reused exactly when its render key is the key of what would run now; a
    chapter whose sentences, keys or joining differ from its record's is joined again (``stale_chapters``)."""
    folder = OutputFolder(output).create()
    linked = [f"{name}/ was a link to another folder; it was replaced by a folder of its own (nothing was written "
              "through it)" for name in ("sentences", "chapters") if own_folder(folder.path / name)]
    ours = {number for number, _ in plan.book.numbered()}
    earlier = {n: r for n, r in read_chapter_records(folder, plan.book).items()
               if n not in ours and n <= len(plan.book.whole)}
    work = with_chapters(plan, settings, sorted(earlier))
    tick, cpu = time.perf_counter(), time.process_time()
    done = run_batch(sentence_batch(work, settings, folder.path), backend=backend, progress=progress)
    summary = done.summary
    timings = {"synthesis": time.perf_counter() - tick, "synthesis_cpu": time.process_time() - cpu}
    report: dict = {"title": plan.book.title, "author": plan.book.author, "language": plan.language,
                    "made": summary.done, "reused": summary.skipped, "failed": summary.errors,
                    "remade": [{"sentences": count, "changed": why} for why, count in summary.remade.items()],
                    "skipped": list(plan.book.skipped),
                    "notes": list(plan.book.garbled) + list(plan.book.notes) + plan.notes + linked}
    output_path, checks = None, []
    if done.complete:   # not paused or stopped
        with folder.lock():
            stale = stale_chapters(earlier, work, done, settings)
            report["notes"] += [f"chapter {n} was joined again: {why}" for n, why in sorted(stale.items())]
            tick, cpu = time.perf_counter(), time.process_time()
            joined = join_chapters(work, settings, folder, done, on_chapter, numbers=ours | set(stale))
            timings.update(join=time.perf_counter() - tick, join_cpu=time.process_time() - cpu)
            chapters = sorted(joined + [r.chapter for n, r in earlier.items() if n not in stale],
                              key=lambda c: c.number)
            report["chapters"] = [{k: v for k, v in dataclasses.asdict(c).items() if k not in ("cues", "words")}
                                  for c in chapters]
            report["failed_checks"] = checks = failed_checks(work, done)
            report["silent"] = silent_sentences(work, done)
            tick, cpu = time.perf_counter(), time.process_time()
            output_path = write_outputs(work, settings, folder, chapters, made_now={c.number for c in joined})
            remove_stale_chapter_files(folder, chapters, settings)
            timings.update(outputs=time.perf_counter() - tick, outputs_cpu=time.process_time() - cpu)
    report_path = folder.path / "report.json"
    folder.write_json(report_path, report)
    return BookRun(chapters=len(work.book.chapters), sentences=len(work.sentences), made=summary.done,
                   reused=summary.skipped, failed=summary.failed, output=output_path, report=str(report_path),
                   summary=summary, timings=timings, silent=report.get("silent", []),
                   failed_checks=len({entry["audio"] for entry in checks}))


def with_chapters(plan: BookPlan, settings: BookSettings, numbers: list[int]) -> BookPlan:
    """``plan`` with the chapters ``numbers`` of the whole book (``Book.whole``) planned as well, with the same
    settings, in book order: what this run would make of chapters an earlier run joined."""
    if not numbers:
        return plan
    chapters = dict(plan.book.numbered())
    chapters.update({n: plan.book.whole[n - 1] for n in numbers})
    order = sorted(chapters)
    return plan_book(dataclasses.replace(plan.book, chapters=tuple(chapters[n] for n in order), numbers=tuple(order)),
                     settings)


def join_chapters(plan: BookPlan, settings: BookSettings, folder: OutputFolder, done: BatchResult,
                  on_chapter: Optional[Callable[[int, str], None]] = None,
                  numbers: Optional[set] = None) -> list[JoinedChapter]:
    """Each chapter's sentences (as ``done``, the batch run, made or reused them) end to end (a pause between
    paragraphs and after the chapter), at the loudness target, as ``chapters/NN.flac`` with its subtitles and its
    record (``records``); one chapter in memory at a time.  ``numbers``: only these chapters (None: all)."""
    joined = []
    for number, chapter in plan.book.numbered():
        if numbers is not None and number not in numbers:
            continue
        mine = [s for s in plan.sentences if s.chapter == number]
        pieces, cues, offset, rate, paragraph = [], [], 0, None, None
        words: list[list[dict]] = []
        for sentence in mine:
            audio, rate = _sentence_audio(done, sentence)
            if paragraph is not None and sentence.paragraph != paragraph:
                pieces.append(np.zeros(int(settings.paragraph_pause * rate), np.float32))
                offset += len(pieces[-1])
            paragraph = sentence.paragraph
            cues.append(Cue(offset / rate, (offset + len(audio)) / rate, sentence.text, sentence.speaker))
            words.append(done.record(sentence.item_id).get("words") or [])
            pieces.append(audio)
            offset += len(audio)
        pieces.append(np.zeros(int(settings.chapter_pause * rate), np.float32))
        audio = np.concatenate(pieces)
        audio, gain, rms, peak = level(audio, settings.loudness)
        target = settings.loudness
        meets = None if target is None else bool(target.rms_range[0] <= rms <= target.rms_range[1]
                                                 and peak <= target.peak_ceiling_db + 1e-6)
        name = f"chapters/{number:02d}.flac"
        folder.write_audio(folder.path / name, audio, rate, "flac", "PCM_16")
        files = [name]
        for kind in settings.subtitles:
            files.append(f"chapters/{number:02d}.{kind}")
            folder.write_bytes(folder.path / files[-1], render(cues, kind).encode("utf-8"))
        on_chapter_line = [WordTiming(**w).shifted(cue.start) for cue, sentence_words in zip(cues, words)
                           for w in sentence_words]
        for kind in settings.subtitles if on_chapter_line else ():   # made with word timings: word-level too
            files.append(f"chapters/{number:02d}.words.{kind}")
            folder.write_bytes(folder.path / files[-1],
                               word_subtitles(on_chapter_line, kind, plan.language).encode("utf-8"))
        made = JoinedChapter(number=number, title=chapter.title, file=name, samples=len(audio), sample_rate=rate,
                             sentences=len(mine), rms_db=rms, peak_db=peak, gain_db=gain, meets_target=meets,
                             cues=cues, words=words, files=files)
        write_chapter_record(folder, plan.book, made, mine, [done.items[s.item_id].key for s in mine],
                             join_settings(settings))
        joined.append(made)
        if on_chapter:
            on_chapter(number, name)
    return joined


def _sentence_audio(done: BatchResult, sentence: Sentence) -> tuple[np.ndarray, int]:
    """A made sentence's audio; a file that is not audio (a 0-byte FLAC an older version wrote for a take with no
    audio) is removed with its sidecar, so the next run makes the sentence again, and the error says so."""
    import soundfile

    try:
        audio, rate = soundfile.read(str(done.items[sentence.item_id].audio), dtype="float32")
    except (soundfile.LibsndfileError, RuntimeError, ValueError):
        done.discard(sentence.item_id)
        raise InvalidInput(f"The audio of the sentence {sentence.text[:80]!r} (chapter {sentence.chapter}) was not "
                           "audio; it was removed: run the book again to make that sentence again.") from None
    if not len(audio):
        return np.zeros(int(SILENT_SENTENCE * rate), np.float32), rate
    return audio, rate


def chapters_of_items(plan: BookPlan) -> dict[str, list[int]]:
    """Each distinct sentence's item id: the chapters it is read in (a sentence said twice is made once)."""
    where: dict[str, set[int]] = {}
    for sentence in plan.sentences:
        where.setdefault(sentence.item_id, set()).add(sentence.chapter)
    return {item_id: sorted(chapters) for item_id, chapters in where.items()}


def silent_sentences(plan: BookPlan, done: BatchResult) -> list[dict]:
    """The sentences whose every take had no audio, kept as ``SILENT_SENTENCE`` seconds of silence."""
    where = chapters_of_items(plan)
    return [{"chapters": where.get(item.id, []), "text": item.text,
             "audio": f"sentences/{item.id}.{SENTENCE_FORMAT}"} for item in plan.items
            if done.record(item.id).get("no_audio_takes", 0) >= NO_AUDIO_TAKES]


def level(audio: np.ndarray, target: Optional[Loudness]) -> tuple[np.ndarray, float, float, float]:
    """(audio at the target RMS, its peak at most the ceiling: the ceiling wins; gain dB, RMS dBFS, peak dBFS).

    ACX measures RMS over the whole file and the sample peak, so these are plain RMS and the largest sample."""
    def measure(wav):
        rms = float(np.sqrt(np.mean(np.square(wav, dtype=np.float64)))) if wav.size else 0.0
        peak = float(np.abs(wav).max()) if wav.size else 0.0
        return (20 * np.log10(rms) if rms > 0 else float("-inf"), 20 * np.log10(peak) if peak > 0 else float("-inf"))

    rms, peak = measure(audio)
    if target is None or not np.isfinite(rms):
        return audio, 0.0, rms, peak
    gain = min(target.rms_db - rms, target.peak_ceiling_db - peak)
    audio = (audio * np.float32(10 ** (gain / 20))).astype(np.float32)
    rms, peak = measure(audio)
    return audio, float(gain), rms, peak


def failed_checks(plan: BookPlan, done: BatchResult) -> list[dict]:
    """The sentences whose every take failed the sentence check (guard), where they are, to listen to."""
    where = chapters_of_items(plan)
    found = []
    for item in plan.items:
        for check in done.record(item.id).get("checks", []):
            if not check.get("passed", True):
                takes = check.get("takes", [])
                found.append({"chapters": where.get(item.id, []), "text": item.text,
                              "audio": f"sentences/{item.id}.{SENTENCE_FORMAT}",
                              "takes": len(takes), "transcripts": [t.get("transcript") for t in takes]})
    return found


def write_outputs(plan: BookPlan, settings: BookSettings, folder: OutputFolder,
                  chapters: list[JoinedChapter], made_now: Optional[set] = None) -> str:
    """The chosen format (an M4B, or a chapter file each), and the read-along EPUB; returns the main output.
    ``made_now``: the chapters joined in this run (None: all); another chapter's MP3 / Opus is kept if there."""
    from .containers import write_chapter_audio, write_m4b

    title = safe_name(plan.book.title)
    if settings.audio_format == "m4b":
        main = folder.path / f"{title}.m4b"
        with folder.atomic(main) as temp:
            write_m4b(temp, [(c.title, folder.path / c.file, c.samples, c.sample_rate) for c in chapters],
                      title=plan.book.title, author=plan.book.author, cover=plan.book.cover,
                      cover_type=plan.book.cover_type)
    else:
        main = folder.path / "chapters"
        if settings.audio_format != "flac":
            for chapter in chapters:
                final = folder.path / f"chapters/{chapter.number:02d}.{settings.audio_format}"
                if made_now is not None and chapter.number not in made_now and final.is_file():
                    continue
                with folder.atomic(final) as temp:
                    write_chapter_audio(temp, folder.path / chapter.file, settings.audio_format,
                                        title=chapter.title, album=plan.book.title, author=plan.book.author,
                                        track=chapter.number)
    if settings.readalong:
        from .overlay import write_readalong

        final = folder.path / f"{title}.readalong.epub"
        with folder.atomic(final) as temp:
            write_readalong(temp, plan, chapters, folder.path)
    return str(main)


def safe_name(title: str) -> str:
    """A file name from a title: letters, digits, spaces, dots, dashes; at most 80 characters."""
    name = re.sub(r"[^\w .-]+", "", title, flags=re.UNICODE).strip(" .") or "book"
    return name[:80]


def estimated_seconds(plan: BookPlan) -> float:
    """The audio's planned length from the text alone (the engine's duration estimate at the default rate)."""
    from ..constants import FRAME_RATE
    from ..engine.duration import FALLBACK_REF_FRAMES, FALLBACK_REF_TEXT, estimate_duration

    frames = sum(estimate_duration(s.text, FALLBACK_REF_TEXT, FALLBACK_REF_FRAMES) for s in plan.sentences)
    return frames / FRAME_RATE


def chapter_summary(plan: BookPlan) -> list[dict]:
    counts: dict[int, int] = {}
    for sentence in plan.sentences:
        counts[sentence.chapter] = counts.get(sentence.chapter, 0) + 1
    return [{"number": n, "title": c.title, "sentences": counts.get(n, 0)} for n, c in plan.book.numbered()]
