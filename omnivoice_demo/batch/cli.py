"""``omnivoice batch``: the command line of a batch run."""

from __future__ import annotations

import argparse

from ..settings.generation import add_config_arguments, config_from_arguments
from ..text.lexicon import lexicon_argument
from ..errors import InvalidInput

AUDIO_FORMATS = ("wav", "flac")


def add_batch_command(commands, add_model_arguments) -> None:
    batch = commands.add_parser(
        "batch", help="speak every item of a .jsonl/.csv/.txt file into a folder (resumable)",
        description="Speak every item of a JSONL file (rows: id, text, and any of voice, language, instruct and "
                    "the generation settings below) or a text file (one item per line). Rerunning the same "
                    "command skips the items already done; the settings given here are every item's defaults.")
    add_model_arguments(batch)
    batch.add_argument("--input", required=True, help="items.jsonl, items.csv (a header row: text, id, voice, ...) or items.txt")
    batch.add_argument("--output", required=True, help="the output folder (shared by every node with --ray)")
    add_backend_arguments(batch)
    batch.add_argument("--format", default="wav", choices=AUDIO_FORMATS, dest="audio_format")
    batch.add_argument("--subtitles", default="", metavar="srt,vtt", help="subtitle formats to write per item")
    batch.add_argument("--book", action="store_true",
                       help="the items are the parts of one book: also write book.<format> and its subtitles")
    batch.add_argument("--voices", "--voice-store", default=None, metavar="DIR|URL", dest="voices",
                       help="where voice names of the rows are looked up: a folder or postgresql://... (default: "
                            "$OMNIVOICE_VOICE_STORE, else the app's saved voices, as omnivoice voices list shows "
                            "them); a row's voice may also be a named design "
                            "(alloy, ...) or a .npz path relative to the input's folder")
    batch.add_argument("--lexicon", default=None, metavar="FILE", type=lexicon_argument,
                       help="pronunciations for every item (TSV or JSON, docs/text.md); a row's own pronunciations "
                            "take precedence word by word")
    batch.add_argument("--retry-failed", action="store_true", help="run the items that failed before again")
    batch.add_argument("--no-progress", action="store_true", help="no progress bars")
    add_config_arguments(batch)
    batch.set_defaults(limits="local")  # a batch runs on one's own machines; --limits and --max-... still apply
    batch.set_defaults(run=run)


def add_backend_arguments(parser) -> None:
    """Where the items run (``plan.Workers``): --workers, --ray, --actor-cpus, --actor-gpus (batch and book)."""
    parser.add_argument("--workers", type=int, default=1,
                        help="local worker processes, each with its own engine and its share of the cores")
    parser.add_argument("--ray", nargs="?", const="auto", default=None, metavar="auto|local|ADDRESS",
                        help="run on a Ray cluster (pip install .[batch]): auto = the running cluster, "
                             "local = start one here, or ray://HOST:PORT")
    parser.add_argument("--actor-cpus", type=int, default=1, help="CPUs (and engine threads) per Ray actor")
    parser.add_argument("--actor-gpus", type=float, default=0, help="GPUs per Ray actor (with --provider cuda)")


def parse_subtitles(text: str) -> tuple[str, ...]:
    from .subtitles import FORMATS

    kinds = tuple(dict.fromkeys(k.strip().lower() for k in text.split(",") if k.strip()))
    unknown = [k for k in kinds if k not in FORMATS]
    if unknown:
        raise InvalidInput(f"--subtitles: unknown format {unknown[0]!r}; use {', '.join(FORMATS)}.", param="subtitles")
    return kinds


def run(args: argparse.Namespace) -> int:
    from .items import read_batch
    from .plan import BatchPlan, Workers
    from .runner import run_batch
    from .worker import Job, ModelSpec

    workers = Workers.from_arguments(args)
    job = Job(output=str(args.output), audio_format=args.audio_format, subtitles=parse_subtitles(args.subtitles))
    # a bad row fails alone: listed as failed (exit status 3), the others run
    items, rejected = read_batch(args.input, base=config_from_arguments(args), voices_dir=args.voices,
                                 lexicon=args.lexicon)
    plan = BatchPlan(items=tuple(items), job=job, model=ModelSpec.from_arguments(args), workers=workers,
                     retry_failed=args.retry_failed, book=args.book, rejected=tuple(rejected))
    summary = run_batch(plan, progress=not args.no_progress).summary
    for line in summary.lines():
        print(line)
    return 0 if summary.failed == 0 else 3
