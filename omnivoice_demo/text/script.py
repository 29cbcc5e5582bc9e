"""Dialogue scripts: ``Name: text`` (or ``[Name] text``) lines -> turns, each name a voice.

    Anna: Did you hear the news?
    [Ben] No, tell me.
    Anna: The bass player left.
          (a line without a name goes on with the turn before it)

A name is one to four words before a colon and a space, or anything but brackets inside them.  Each name is
looked up in ``speakers`` (a name -> voice table, names compared as voice names are,
``voice_names.find_name``) and otherwise read as a voice itself; either way the voice is read as every
front end reads a ``voice`` (``vocabulary.choose_voice``: a saved voice, a named design such as
``alloy``, a design written out).  A name that is none of these refuses the script, naming it and
its line.  The model's own bracket controls at the start of a line (``[laughter]``, a CMU override
``[B EY1 S]``) are text, not names.  The front ends pass their own ``resolve`` (the voices of the
visitor, the server or the command line) and run the turns with ``engine.prepare_turns``.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Callable, Mapping, Optional

from .lexicon import kind_of
from .prompt import NONVERBAL_TAGS
from ..errors import InvalidInput, excerpt
from .voice_names import MAX_NAME_LENGTH, find_name

#: distinct speakers of one script (each may load a saved voice)
MAX_SPEAKERS = 16
#: ``Name: text``: a name of one to four words, starting with a letter ("Anna", "Dr. Ng", "Speaker 2"), then a
#: colon and a space (so "at 10:30" and "http://" are no names)
_COLON = re.compile(r"^\s*([^\W\d_][\w.'’-]*(?: [\w.'’-]+){0,3})\s*:(?:\s+|$)(.*)$")
_BRACKET = re.compile(r"^\s*\[([^\[\]\n]{1,%d})\]\s*(.*)$" % MAX_NAME_LENGTH)
_TAGS = {tag.casefold() for tag in NONVERBAL_TAGS}


@dataclasses.dataclass(frozen=True)
class Turn:
    """One turn of several: who speaks (a name, for the subtitles), what, and with which voice."""

    speaker: str
    text: str
    voice: object = None              # a Voice, the path of a saved voice, or None
    instruct: Optional[str] = None    # a voice design (used when there is no voice)


def parse_script(text: str) -> list[tuple[str, str, int]]:
    """``(name, text, line)`` of each turn, in order; ``InvalidInput`` naming the line that has no speaker."""
    if not isinstance(text, str):
        raise InvalidInput(f"A script must be text, not {type(text).__name__}.", param="input")
    turns: list[list] = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        speaker = _speaker_line(line)
        if speaker is not None:
            turns.append([speaker[0], speaker[1].strip(), number])
        elif turns:
            turns[-1][1] = f"{turns[-1][1]} {line.strip()}".strip()
        else:
            raise InvalidInput(f"The script's line {number} names no speaker: start each turn with 'Name: text' or "
                               f"'[Name] text' (line {number}: {excerpt(line.strip())}).", param="input")
    if not turns:
        raise InvalidInput("The script has no turns: write lines such as 'Anna: Hello.'", param="input")
    for name, said, number in turns:
        if not said:
            raise InvalidInput(f"The script's turn of {excerpt(name)} on line {number} says nothing.", param="input")
    return [(name, said, number) for name, said, number in turns]


def _speaker_line(line: str) -> Optional[tuple[str, str]]:
    bracket = _BRACKET.match(line)
    if bracket:
        name = bracket.group(1).strip()
        if name and name.casefold() not in _TAGS and kind_of(f"[{name}]") != "cmu":
            return name, bracket.group(2)
        return None
    colon = _COLON.match(line)
    return (colon.group(1), colon.group(2)) if colon and len(colon.group(1)) <= MAX_NAME_LENGTH else None


def script_names(text: str) -> list[str]:
    """The speakers of a script, each once, in the order they first speak (for a name -> voice table)."""
    seen: dict[str, str] = {}
    for name, _, _ in parse_script(text):
        if find_name(name, seen) is None:
            seen[name] = name
    return list(seen)


def read_script(text: str, resolve: Callable[[str], tuple[object, Optional[str]]],
                speakers: Optional[Mapping[str, str]] = None) -> list[Turn]:
    """The turns of a script, each with its voice: ``resolve(voice)`` -> ``(voice, design)`` as the front end
    reads a ``voice`` (``vocabulary.resolve_voice``); ``speakers`` maps names to voices."""
    speakers = check_speakers(speakers)
    parsed = parse_script(text)
    voices: dict[str, tuple[object, Optional[str]]] = {}
    turns = []
    for name, said, number in parsed:
        key = find_name(name, voices)
        if key is None:
            if len(voices) >= MAX_SPEAKERS:
                raise InvalidInput(f"The script has more than {MAX_SPEAKERS} speakers (line {number}: "
                                   f"{excerpt(name)}); split it.", param="input")
            mapped = find_name(name, speakers)
            value = speakers[mapped] if mapped is not None else name
            try:
                voices[name] = resolve(value)
            except InvalidInput as exc:
                given = f" (given as {excerpt(value)})" if mapped is not None else ""
                raise InvalidInput(f"The script's speaker {excerpt(name)}{given} on line {number} is not a saved "
                                   f"voice, a design or an OpenAI voice name: {exc}", param="speakers") from None
            key = name
        voice, design = voices[key]
        turns.append(Turn(speaker=key, text=said, voice=voice, instruct=None if voice is not None else design))
    return turns


def check_speakers(speakers) -> dict[str, str]:
    """A name -> voice table as a request gives it: an object of texts, at most ``MAX_SPEAKERS``."""
    if speakers is None:
        return {}
    if not isinstance(speakers, Mapping) or not all(isinstance(k, str) and isinstance(v, str)
                                                     for k, v in speakers.items()):
        raise InvalidInput("speakers must be an object of names to voices, e.g. {\"Anna\": \"alloy\", \"Ben\": "
                           "\"my voice\"}.", param="speakers")
    if len(speakers) > MAX_SPEAKERS:
        raise InvalidInput(f"speakers has {len(speakers)} names; at most {MAX_SPEAKERS}.", param="speakers")
    return {k.strip(): v.strip() for k, v in speakers.items() if k.strip()}


def plan_script(engine, text: str, resolve: Callable[[str], tuple[object, Optional[str]]],
                speakers: Optional[Mapping[str, str]] = None, **kwargs):
    """``engine.prepare_turns`` of a script (its other arguments: language, config, pronunciations, ...), the
    script's length checked against the engine's text limit before it is read."""
    if isinstance(text, str):
        engine.limits.check("The script", len(text), "max_text_chars", " characters")
    return engine.prepare_turns(read_script(text, resolve, speakers), **kwargs)
