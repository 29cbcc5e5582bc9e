"""A book's own title, author and language where they head its text: read as the book's, never read aloud.

* **Markdown front matter**: a YAML block at the very start of the file, between a ``---`` line and a ``---`` (or
  ``...``) line, as pandoc and static-site tools write it.  It is parsed with PyYAML's ``safe_load`` (no tags that
  build objects) once it is known to be at most ``MAX_FRONT_MATTER`` characters; ``title`` (a string), ``author``
  (a name, or a list of names or of mappings with a ``name``) and ``lang`` (or ``language``) are the book's;
  other keys are ignored.  The block is never part of the text, even when it is not YAML (said in the notes).
* **A text book's title block**: the file's first paragraph, before any chapter marker, when it is one to three
  lines of at most ``MAX_TITLE_LINE`` characters each, none ending as a sentence ends (``.``, ``!``, ``?``, ``…``,
  ``:``, ``;``, ``,``) and none a chapter marker, and more text follows it.  Its first line is the title; a line
  ``by NAME`` names the author; any other line is a subtitle, joined to the title after a colon.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Optional

from ..errors import excerpt

#: a front matter block longer than this is no front matter (the text is read as it is)
MAX_FRONT_MATTER = 64 * 1024
#: the longest line of a text book's title block
MAX_TITLE_LINE = 100
#: names of authors kept from a list
MAX_AUTHORS = 20

_OPENING = re.compile(r"\A\ufeff?---[ \t]*\r?\n")
_CLOSING = re.compile(r"^(?:---|\.\.\.)[ \t]*$", re.MULTILINE)
_BY = re.compile(r"(?i)^by\s+(\S.*)$")


@dataclasses.dataclass(frozen=True)
class Heading:
    """What the head of a book says of it (None: it says nothing of that), and notes on how it was read."""

    title: Optional[str] = None
    author: Optional[str] = None
    language: Optional[str] = None
    notes: tuple[str, ...] = ()


def split_front_matter(text: str) -> tuple[Heading, str]:
    """(what a Markdown file's front matter says, the text after it); the text as it is when it has none."""
    opening = _OPENING.match(text)
    if not opening:
        return Heading(), text
    closing = _CLOSING.search(text, opening.end(), opening.end() + MAX_FRONT_MATTER + 8)
    if closing is None:
        return Heading(), text
    block, rest = text[opening.end():closing.start()], text[closing.end():]
    import yaml

    try:
        data = yaml.safe_load(block) if block.strip() else {}
    except (yaml.YAMLError, RecursionError, ValueError, TypeError, OverflowError) as exc:
        problem = str(getattr(exc, "problem", None) or type(exc).__name__)
        return Heading(notes=(f"the front matter (the --- block at the top) is not YAML ({problem}); it was left "
                              "out",)), rest
    if not isinstance(data, dict):
        return Heading(notes=("the front matter (the --- block at the top) is no mapping of keys to values; it was "
                              "left out",)), rest
    return Heading(title=_text(data.get("title")), author=_names(data.get("author")),
                   language=_text(data.get("lang", data.get("language")))), rest


def _text(value) -> Optional[str]:
    """A scalar as one line of text (a YAML number or date too), None for anything else."""
    if isinstance(value, (str, int, float)) and not isinstance(value, bool) or hasattr(value, "isoformat"):
        text = re.sub(r"\s+", " ", str(value)).strip()
        return text[:500] or None
    return None


def _names(value) -> Optional[str]:
    """An author: a name, or a list of names (or of mappings with a ``name``, as pandoc's front matter allows)."""
    if isinstance(value, list):
        names = [_text(v.get("name") if isinstance(v, dict) else v) for v in value[:MAX_AUTHORS]]
        return ", ".join(name for name in names if name) or None
    return _text(value)


def split_title_block(lines: list[str], marker: re.Pattern) -> tuple[Heading, list[str]]:
    """(what a text book's title block says, the lines with the block blanked out): see the module for the
    rule; the lines as they are when they have none."""
    start = next((i for i, line in enumerate(lines) if line.strip()), None)
    if start is None:
        return Heading(), lines
    end = next((i for i in range(start, len(lines)) if not lines[i].strip()), len(lines))
    block = [line.strip() for line in lines[start:end]]
    if (len(block) > 3 or any(len(line) > MAX_TITLE_LINE or line.endswith((".", "!", "?", "\u2026", ":", ";", ","))
                              or marker.search(line) for line in block)
            or not any(line.strip() for line in lines[end:])):
        return Heading(), lines
    title, author, subtitles = block[0], None, []
    for line in block[1:]:
        by = _BY.match(line)
        if by and author is None:
            author = by.group(1)
        else:
            subtitles.append(line)
    title = ": ".join([title] + subtitles)
    notes = (f"the first lines ({excerpt(title)}) are the book's title block: its title"
             + (" and author" if author else "") + ", not read aloud",)
    return Heading(title=title, author=author, notes=notes), lines[:start] + [""] * (end - start) + lines[end:]
