"""``omnivoice book INPUT --output DIR``: a book in, an audiobook out (docs/books.md)."""

from __future__ import annotations

import argparse
import sys

from ..batch.cli import add_backend_arguments
from ..settings.generation import add_config_arguments, config_from_arguments
from ..text.lexicon import Lexicon, lexicon_argument
from ..errors import InvalidInput
from .project import OUTPUT_FORMATS


def add_book_command(commands, add_model_arguments) -> None:
    book = commands.add_parser(
        "book", help="read an EPUB, Markdown or text book aloud into an M4B audiobook (resumable)",
        description="Speak a book (.epub, .md, .txt) chapter by chapter into an audiobook: an M4B with chapters, "
                    "title, author and cover (or a file per chapter), chapter subtitles, a read-along EPUB and a "
                    "report. Running it again makes only what changed. Ends with one JSON line.")
    add_model_arguments(book)
    book.add_argument("input", help="the book: .epub (2 or 3), .md or .txt")
    book.add_argument("--output", required=True, help="the project folder (kept between runs)")
    book.add_argument("--voice", default=None,
                      help="the narrator: a saved voice, a named design (alloy, ...), a .npz file, or a description "
                           "in words (\"female, low pitch, british accent\")")
    book.add_argument("--dialogue-voice", default=None, help="a second voice for quoted speech")
    book.add_argument("--cast", default=None, metavar="FILE",
                      help="JSON mapping character names to voices; quotes are attributed by simple rules "
                           "(docs/books.md#voices)")
    book.add_argument("--chapter-voice", action="append", default=[], metavar="N=VOICE",
                      help="the narrator of chapter N (repeatable)")
    book.add_argument("--voices", "--voice-store", default=None, metavar="DIR|URL", dest="voices",
                      help="where voice names are looked up: a folder or postgresql://... (default: "
                           "$OMNIVOICE_VOICE_STORE, else the app's saved voices)")
    book.add_argument("--language", default=None, help="speak in this language (default: the book's)")
    book.add_argument("--chapters", default=None, metavar="1-3,5", help="only these chapters (as --list shows)")
    book.add_argument("--list", action="store_true", help="list the chapters with sentence counts and stop")
    book.add_argument("--format", default="m4b", choices=OUTPUT_FORMATS, dest="audio_format",
                      help="m4b: one audiobook file with chapters; mp3/opus/flac: a file per chapter")
    book.add_argument("--lexicon", default=None, metavar="FILE", type=lexicon_argument,
                      help="pronunciations (TSV or JSON, docs/text.md); a new entry remakes only its sentences")
    book.add_argument("--encoding", default=None,
                      help="the encoding of a text file, or of EPUB chapters that are not UTF-8 and declare none "
                           "(cp1252, shift_jis, gb18030, ...)")
    book.add_argument("--chapter-marker", default=None, metavar="REGEX",
                      help="a .txt chapter starts at a line matching this (default: 'Chapter ...', 'Part ...')")
    book.add_argument("--paragraph-pause", type=float, default=0.6, metavar="S", help="silence between paragraphs")
    book.add_argument("--chapter-pause", type=float, default=2.0, metavar="S", help="silence after each chapter")
    book.add_argument("--rms", type=float, default=-20.0, metavar="DB",
                      help="each chapter's RMS level, dBFS (ACX: -23..-18), peaks at most -3 dBFS")
    book.add_argument("--no-leveling", action="store_true", help="leave the chapters' level as made")
    book.add_argument("--no-readalong", action="store_true", help="no read-along EPUB")
    add_backend_arguments(book)   # --workers, --ray, --actor-cpus, --actor-gpus: the sentences run as a batch
    book.add_argument("--no-progress", action="store_true", help="no progress bars")
    add_config_arguments(book)
    book.set_defaults(limits="local", guard=True)   # a book is checked sentence by sentence unless --no-guard
    book.set_defaults(run=run)


def settings_from_arguments(args, book):
    from ..studio.voice_store import open_voice_store
    from .project import BookSettings, Loudness
    from .voices import Voicing, chapter_voices, read_cast, resolve_voicing

    from ..batch.plan import Workers
    from ..batch.worker import ModelSpec

    voices = open_voice_store(args.voices)
    config = config_from_arguments(args)
    if args.preset and "guard" not in getattr(args, "_config_flags_given", set()):
        config = config.replace(guard=True)
    for name, value in (("--paragraph-pause", args.paragraph_pause), ("--chapter-pause", args.chapter_pause)):
        if not 0 <= value <= 30:
            raise InvalidInput(f"{name} must be between 0 and 30 seconds, got {value}.", param=name[2:])
    if not -40 <= args.rms <= -6:
        raise InvalidInput(f"--rms must be between -40 and -6 dBFS, got {args.rms}.", param="rms")
    cast = read_cast(args.cast, voices) if args.cast else {}
    numbered = chapter_voices(args.chapter_voice, book.chapter_count,
                              lambda value, what: resolve_voicing(value, voices, None, what=f"--chapter-voice: {what}"))
    return BookSettings(config=config, narrator=resolve_voicing(args.voice, voices) or Voicing(name="default"),
                        dialogue=resolve_voicing(args.dialogue_voice, voices, what="--dialogue-voice"),
                        cast=cast, chapter_voices=numbered, language=args.language, lexicon=args.lexicon or Lexicon(),
                        paragraph_pause=args.paragraph_pause, chapter_pause=args.chapter_pause,
                        loudness=None if args.no_leveling else Loudness(rms_db=args.rms),
                        audio_format=args.audio_format, readalong=not args.no_readalong,
                        model=ModelSpec.from_arguments(args), workers=Workers.from_arguments(args))


def check_recognizer(settings) -> None:
    """The speech recogniser the run's checks need (the sentence check, on for books; word timings), looked for
    before any work and said once with the flags ``book`` has (``checks``).  A Ray run is left to its actors (the
    cluster may have what this machine has not)."""
    from .checks import COMMAND_LINE, check_recognizer as check

    if not settings.workers.ray:
        model = settings.model
        check(settings.config, COMMAND_LINE, offline=True if model is not None and model.offline else None)


def run(args: argparse.Namespace) -> int:
    from .project import chapter_summary, estimated_seconds, plan_book, run_book
    from .reading import book_of_chapters, read_book

    book = book_of_chapters(read_book(args.input, encoding=args.encoding, chapter_marker=args.chapter_marker),
                            args.chapters)
    settings = settings_from_arguments(args, book)   # every voice, the cast, the model and the workers, before any work
    plan = plan_book(book, settings)
    if args.list:
        for row in chapter_summary(plan):
            print(f"{row['number']:>4}  {row['sentences']:>6} sentences  {row['title']}")
        print(f"{len(plan.sentences)} sentences ({len(plan.items)} distinct), about "
              f"{estimated_seconds(plan) / 3600:.2f} h of audio")
        for line in book.skipped:
            print(f"skipped: {line}")
        for line in book.garbled:
            print(f"warning: {line}")
        return 0
    for line in book.garbled:   # said before any work, and again in report.json's notes
        print(f"warning: {line}", file=sys.stderr)
    check_recognizer(settings)
    done = run_book(plan, settings, args.output, progress=not args.no_progress)
    failures: dict[str, list[str]] = {}   # the same reason for many sentences is said once
    for item_id, message in done.summary.errors.items():
        failures.setdefault(message, []).append(item_id)
    for message, ids in failures.items():
        print(f"failed {ids[0]}: {message}" if len(ids) == 1 else
              f"failed {len(ids)} sentences ({', '.join(ids[:3])}{', ...' if len(ids) > 3 else ''}): {message}")
    for entry in done.silent:
        print(f"kept as silence (no take had audio): chapter {','.join(map(str, entry['chapters']))}: "
              f"{entry['text'][:100]!r}")
    if done.failed_checks:   # said in words, and again in the last line's figures
        print(f"{done.checks_words()}: {done.report} names them (failed_checks: their audio and transcripts)")
    print(done.line())
    return 0 if done.failed == 0 else 3
