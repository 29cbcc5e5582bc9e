"""The speech recogniser a book's checks need, looked for before any work and said once, in words for a book.

The sentence check (on for books) and word timings need a speech recogniser.  Without one every sentence would
fail with the same line, after its item id, in words for a single request ("type the transcript of the
reference", "guard off, the default").  ``check_recognizer`` looks for it before any sentence is made and says
once what to do, in the words of the front end that runs the book: the command line's flags
(``COMMAND_LINE``) or the Book tab's box (``BOOK_TAB``).
"""

from __future__ import annotations

import dataclasses
from typing import Optional


@dataclasses.dataclass(frozen=True)
class Front:
    """How a front end names the checks and the ways out: each check (what it is called, how it is turned off),
    the verb before those ways, and how a recogniser folder is given."""

    guard: tuple[str, str]
    words: tuple[str, str]
    turn_off: str
    give_folder: str


COMMAND_LINE = Front(guard=("The sentence check (on for books)", "with --no-guard"),
                     words=("Word timings (--word-timestamps)", "without --word-timestamps"),
                     turn_off="Or run", give_folder="give a recogniser folder (built with 'python -m convert.whisper') "
                                                    "as OMNIVOICE_ASR_MODEL=DIR")
BOOK_TAB = Front(guard=("Checking each sentence", "untick \u201cCheck each sentence\u201d"),
                 words=("Word timings", "turn word timings off"),
                 turn_off="Or", give_folder="start the app with OMNIVOICE_ASR_MODEL=DIR naming a recogniser folder "
                                            "(built with 'python -m convert.whisper')")


def check_recognizer(config, front: Front = COMMAND_LINE, recognizer=None, offline: Optional[bool] = None) -> None:
    """Refuse, once and before any work, a book whose checks (``config``: ``guard``, ``word_timestamps``) need a
    speech recogniser that cannot be had, saying what to do in ``front``'s words.  ``recognizer``: the engine's
    (``asr.LazyRecognizer``: its folder, precision and offline setting are looked for; one loaded already, or a
    stand-in that loads nothing, passes); ``offline``: as the model's setting (None: the environment's)."""
    from ..asr.source import DEFAULT_RECOGNIZER_REPO, resolve_recognizer
    from ..errors import ModelNotAvailable, one_line

    needs = [check for check, on in ((front.guard, config.guard), (front.words, config.word_timestamps)) if on]
    if not needs or getattr(recognizer, "loaded", False) or (recognizer is not None and not hasattr(recognizer, "get")):
        return
    how_to = f"{front.give_folder}, or run once online to download {DEFAULT_RECOGNIZER_REPO} into the cache"
    try:
        resolve_recognizer(getattr(recognizer, "spec", None), getattr(recognizer, "precision", None),
                           offline=offline if offline is not None else getattr(recognizer, "offline", None),
                           how_to=how_to)
    except ModelNotAvailable as exc:
        raise ModelNotAvailable(f"{' and '.join(what for what, _ in needs)} need{'s' if len(needs) == 1 else ''} a "
                                f"speech recogniser. {one_line(exc).rstrip('.')}. {front.turn_off} "
                                f"{' and '.join(off for _, off in needs)}.") from None
