"""A book once read (``Book``, its ``Chapter``s), and what every reader of ``reading`` and ``epub`` ends with: the
chapters' count and each paragraph's length checked against ``BookLimits`` (``check_chapter_count``, ``bounded``), a
book with no text refused and its mis-decoded chapters named (``finished``, ``garbled_chapters``), a stated language
as a BCP 47 tag (``language_tag``)."""

from __future__ import annotations

import dataclasses
from typing import Optional

from ..errors import InvalidInput, ModelNotAvailable, excerpt
from .limits import BookLimits

BOOK_INSTALL = ("pip install ebooklib==0.20 av==18.1.0 langcodes==3.5.1 (in a checkout: .venv/bin/pip install "
                "ebooklib==0.20 av==18.1.0 langcodes==3.5.1; scripts/run_app.sh installs them)")


@dataclasses.dataclass(frozen=True)
class Chapter:
    title: str
    paragraphs: tuple[str, ...]
    source: str = ""        # the file (and anchor) it came from


@dataclasses.dataclass(frozen=True)
class Book:
    title: str
    author: Optional[str]
    language: Optional[str]      # as the book states it ("en-GB"); None when it does not
    chapters: tuple[Chapter, ...]
    cover: Optional[bytes] = None
    cover_type: Optional[str] = None   # "image/jpeg" or "image/png"
    skipped: tuple[str, ...] = ()      # what was left out, in words ("front matter: cover.xhtml", "3 images")
    notes: tuple[str, ...] = ()        # how it was read (a chapter read leniently, ...)
    kind: str = "text"                 # "epub", "markdown" or "text"
    #: chapters whose text is largely U+FFFD (bytes that were not UTF-8 and named no encoding), in words
    garbled: tuple[str, ...] = ()
    # each chapter's number in the whole book (empty: 1, 2, ...) and the whole book's count (0: these): a book
    # made in parts (``book_of_chapters``) keeps its chapters' numbers, so their files and markers do too
    numbers: tuple[int, ...] = ()
    whole_chapters: int = 0
    #: every chapter of the whole book when only some are chosen (empty: ``chapters`` are all): what a run of some
    #: chapters plans of the others an earlier run joined, to check they are what it would make
    whole: tuple[Chapter, ...] = ()

    def numbered(self) -> list[tuple[int, "Chapter"]]:
        """(the chapter's number in the whole book, the chapter), in book order."""
        return list(zip(self.numbers or range(1, len(self.chapters) + 1), self.chapters))

    @property
    def chapter_count(self) -> int:
        """How many chapters the whole book has (not only those chosen)."""
        return self.whole_chapters or len(self.chapters)


def language_tag(value: Optional[str], notes: list[str]) -> Optional[str]:
    """``value`` as a BCP 47 language tag in its standard form (``langcodes``, the IANA registry: ``en_GB`` ->
    ``en-GB``), or None, with a note, when it is none (``en" onload="..."``): a book's language lands in every
    read-along page's ``lang``."""
    if not value:
        return None
    try:
        import langcodes
    except ImportError:
        raise ModelNotAvailable(f"Checking a book's language needs langcodes, which is not installed: "
                                f"{BOOK_INSTALL}.") from None
    try:
        if len(value) <= 64 and langcodes.tag_is_valid(value):
            return langcodes.standardize_tag(value)
    except (ValueError, langcodes.LanguageTagError):
        pass
    notes.append(f"the book's language {excerpt(value)!r} is not a BCP 47 language tag; it was ignored (give "
                 "--language to set one)")
    return None


def check_chapter_count(count: int, limits: BookLimits) -> None:
    if count > limits.max_chapters:
        raise InvalidInput(f"The book has more than {limits.max_chapters} chapters (at least {count}); that many "
                           "is not a book this tool reads in one go: split it.", param="input")


def bounded(text: str, limits: BookLimits) -> str:
    if len(text) > limits.max_paragraph_chars:
        raise InvalidInput(f"A paragraph of the book has {len(text):,} characters; at most "
                           f"{limits.max_paragraph_chars:,} (a text without paragraph breaks?).", param="input")
    return text


def finished(book: Book) -> Book:
    if not book.chapters:
        raise InvalidInput("The book has no chapter with text to speak"
                           + (f" (left out: {'; '.join(book.skipped[:5])})" if book.skipped else "") + ".",
                           param="input")
    return dataclasses.replace(book, garbled=garbled_chapters(book.chapters))


#: a chapter is mis-decoded when at least this share of its characters is U+FFFD (a book written so has none;
#: one stray from an old conversion stays under it in any chapter of more than a thousand characters)
GARBLED_SHARE = 0.001


def garbled_chapters(chapters) -> tuple[str, ...]:
    """What to say of each chapter whose text is largely U+FFFD, the character a reader puts where bytes were not
    UTF-8: a chapter in cp1252 or Shift_JIS that declares no encoding, which would be spoken as noise."""
    said = []
    for number, chapter in enumerate(chapters, 1):
        text = "".join(chapter.paragraphs)
        # U+FFFD, or C1 controls (U+0080-U+009F: cp1252's quotes and Shift_JIS's lead bytes read as Latin-1)
        lost = sum(text.count(ch) for ch in set(text) if ch == "\ufffd" or "\x80" <= ch <= "\x9f")
        if lost and lost / max(len(text), 1) >= GARBLED_SHARE:
            said.append(f"chapter {number} ({chapter.source or chapter.title}): {lost} of {len(text)} characters "
                        "could not be read (U+FFFD): it is not UTF-8 and declares no other encoding; give its encoding "
                        "(--encoding cp1252, shift_jis, gb18030, ...) or it is spoken as noise")
    return tuple(said)
