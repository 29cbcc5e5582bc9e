"""Who speaks each part of a paragraph: the narrator, a dialogue voice for quoted speech, the cast's characters.

A voice is read as a batch row's ``voice`` is (a voice saved in the app or in ``--voices DIR``, a named
design such as ``alloy``, a ``.npz`` path), or is a description in one's own words (``instruct``).  A cast
file is JSON, ``{"Anna": "alloy", "Ben": "voices/ben.npz"}`` (paths relative to the file); every voice it
names is looked up when it is read, so a missing one is an error before any work.

Attribution rules (simple on purpose; docs/books.md shows their limits):

* a paragraph written as a dialogue-script turn, ``Anna: text`` or ``[Anna] text``, whose name is in the
  cast, is all Anna's;
* otherwise the quoted parts of a paragraph ("...", “...”) are spoken by the character its narration names
  with a speech verb right after or before a quote: ``"...," said Anna`` / ``"...," Anna said`` /
  ``Anna said, "..."`` (the name must be in the cast); else by the dialogue voice; else by the narrator;
* the narration around them is the narrator's (the chapter's voice, when one is set for it).
"""

from __future__ import annotations

import dataclasses
import json
import pathlib
import re
from typing import Callable, Mapping, Optional

from ..errors import InvalidInput, excerpt

#: verbs that attribute speech
SPEECH_VERBS = ("said", "says", "asked", "asks", "replied", "replies", "answered", "cried", "shouted", "whispered",
                "called", "added", "muttered", "exclaimed", "told")
_QUOTE = re.compile(r"“[^”]*”|\"[^\"]*\"")
MAX_CAST = 64


@dataclasses.dataclass(frozen=True)
class Voicing:
    """One voice: a voice file's absolute path, or a design / description (``instruct``); ``name`` for the report."""

    name: str
    voice: Optional[str] = None
    instruct: Optional[str] = None


@dataclasses.dataclass(frozen=True)
class Part:
    """A piece of a paragraph and its voice."""

    text: str
    voicing: Voicing
    speaker: str = ""     # the character (for subtitles); "" for the narrator


def resolve_voicing(value: Optional[str], voices, base: Optional[pathlib.Path] = None,
                    what: str = "--voice") -> Optional[Voicing]:
    """A voice name, a named design, a ``.npz`` path (relative to ``base``) or a description in words."""
    from ..batch.items import voice_of
    from ..text.descriptions import read_description

    if not value:
        return None
    try:
        path, design = voice_of(value, voices, base or pathlib.Path.cwd())
        return Voicing(name=value, voice=path, instruct=design)
    except InvalidInput as exc:
        if " " not in value.strip():
            raise InvalidInput(f"{what}: {exc}", param="voice") from None
    description = read_description(value, param="voice")   # several words: a description of the voice
    if not description.instruct:
        raise InvalidInput(f"{what}: {value!r} is no saved voice, design or voice file, nor a description the "
                           "model understands (docs/http-api.md#describing-the-voice).", param="voice")
    return Voicing(name=value, instruct=description.instruct)


def read_cast(path, voices) -> dict[str, Voicing]:
    """A cast file's names -> voices, every voice looked up now."""
    path = pathlib.Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InvalidInput(f"The cast file {path.name} cannot be read ({exc.strerror}).", param="cast") from None
    except ValueError as exc:
        raise InvalidInput(f"The cast file {path.name} is not JSON ({exc}); write {{\"Anna\": \"alloy\"}}.",
                           param="cast") from None
    if not isinstance(data, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in data.items()):
        raise InvalidInput(f"The cast file {path.name} must map names to voices: {{\"Anna\": \"alloy\"}}.",
                           param="cast")
    if len(data) > MAX_CAST:
        raise InvalidInput(f"The cast file names {len(data)} characters; at most {MAX_CAST}.", param="cast")
    return {name.strip(): resolve_voicing(voice, voices, path.parent, what=f"the cast's {name!r}")
            for name, voice in data.items()}


def parts_of(paragraph: str, narrator: Voicing, dialogue: Optional[Voicing],
             cast: Mapping[str, Voicing]) -> list[Part]:
    """The paragraph's parts in order, each with its voice (see the module)."""
    turn = _script_turn(paragraph, cast)
    if turn is not None:
        return [Part(turn[1], cast[turn[0]], turn[0])]
    quotes = list(_QUOTE.finditer(paragraph))
    if not quotes or (dialogue is None and not cast):
        return [Part(paragraph, narrator)]
    speaker = attributed_speaker(paragraph, cast)
    quoted = cast[speaker] if speaker else dialogue or narrator
    parts, end = [], 0
    for match in quotes:
        before = paragraph[end:match.start()].strip()
        if before:
            parts.append(Part(before, narrator))
        inner = match.group()[1:-1].strip()
        if inner:
            parts.append(Part(inner, quoted, speaker or ""))
        end = match.end()
    rest = paragraph[end:].strip()
    if rest:
        parts.append(Part(rest, narrator))
    return _merged(parts)


def attributed_speaker(paragraph: str, cast: Mapping[str, Voicing]) -> Optional[str]:
    """The cast name the narration attributes the paragraph's quotes to, or None."""
    narration = _QUOTE.sub(" \u2016 ", paragraph)    # a mark where each quote was
    names = sorted(cast, key=len, reverse=True)
    if not names:
        return None
    name = "|".join(re.escape(n) for n in names)
    verb = "|".join(SPEECH_VERBS)
    for pattern in (rf"\u2016\s*,?\s*(?:{verb})\s+({name})\b",       # "...," said Anna
                    rf"\u2016\s*,?\s*({name})\s+(?:{verb})\b",       # "...," Anna said
                    rf"\b({name})\s+(?:{verb})\s*[,:]?\s*\u2016"):  # Anna said, "..."
        found = re.search(pattern, narration)
        if found:
            return next(n for n in names if n == found.group(1))
    return None


def _script_turn(paragraph: str, cast: Mapping[str, Voicing]) -> Optional[tuple[str, str]]:
    from ..text.script import parse_script

    if not cast or "\n" in paragraph.strip():
        return None
    try:
        [(name, said, _)] = parse_script(paragraph)
    except (InvalidInput, ValueError):
        return None
    return (name, said) if name in cast else None


def _merged(parts: list[Part]) -> list[Part]:
    """Neighbouring parts of the same voice as one."""
    merged: list[Part] = []
    for part in parts:
        if merged and merged[-1].voicing == part.voicing and merged[-1].speaker == part.speaker:
            merged[-1] = Part(f"{merged[-1].text} {part.text}", part.voicing, part.speaker)
        else:
            merged.append(part)
    return merged


def chapter_voices(entries, count: Optional[int], resolve: Callable[[str, str], Optional[Voicing]]
                   ) -> dict[int, Voicing]:
    """The narrator of some chapters: ``N=VOICE`` entries (the CLI's ``--chapter-voice``, the Book tab's
    "Chapter voices" box, ``3=nova, 5=onyx``), each voice looked up with ``resolve(value, what)``; N is the
    chapter's number in the book (as listed, also when only some are made), at most ``count`` (None: checked once
    the book is read, ``check_chapter_voices``)."""
    found: dict[int, Voicing] = {}
    for entry in entries:
        match = re.fullmatch(r"\s*(\d+)\s*=\s*(.+?)\s*", entry)
        if not match:
            raise InvalidInput(f"Chapter voice {excerpt(entry)}: write N=VOICE, for example 3=alloy.",
                               param="chapter_voice")
        number = int(match.group(1))
        check_chapter_voices([number], count)
        voicing = resolve(match.group(2), f"the voice of chapter {number}")
        if voicing is not None:
            found[number] = voicing
    return found


def check_chapter_voices(numbers, count: Optional[int]) -> None:
    """Every chapter a voice is given to is one of the book's ``count`` chapters (None: not known yet, only that
    chapters count from 1)."""
    for number in numbers:
        if number < 1:
            raise InvalidInput(f"Chapter voice {number}: chapters are numbered from 1.", param="chapter_voice")
        if count is not None and number > count:
            raise InvalidInput(f"Chapter voice {number}: the book has chapters 1-{count}.", param="chapter_voice")

