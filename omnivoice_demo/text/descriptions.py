"""A voice described in one's own words -> the model's voice-design items, and what was left out and why.

OmniVoice designs a voice from a fixed list of items (``text.voice_design``: gender, age, pitch,
whisper, an English accent or a Chinese dialect).  People write "a deep, calm British man" or
"温柔的年轻女声".  ``read_description`` reads such text, English or Chinese:

* the items themselves ("male", "low pitch", "男", "四川话"), in any case;
* synonyms ("deep"/"bass" -> low pitch, "old"/"senior" -> elderly, "kid" -> child, "whispering"/"hushed" ->
  whisper, "UK"/"English" -> British accent, "Aussie" -> Australian accent, "低沉" -> low pitch, "东北" -> 东北话);
* well-known places of an accent ("from London", "from Texas", "from Sydney": ``ACCENT_PLACES``);
* nouns that carry a gender, and sometimes an age ("man", "woman", "girl", "老人", "女声"); an age
  written out ("a young girl") wins over the noun's;
* degree words before a pitch ("very deep" -> very low pitch; "slightly high" -> high pitch, the mildest);
* negation ("not whispering", "不要耳语"): the item is left out, and said so;
* conflicts ("male, female"; an accent with a dialect): reported, and none of them applied (never guessed).

Words it does not understand, and words for things the model cannot design (tone, emotion: "cheerful",
"温柔"), are ignored and reported with the reason.  Every front end reads descriptions here: lenient
(apply what was understood, report the rest) by default, ``strict=True`` refuses anything not understood
and lists the known items.  A description made only of items gives the same items, in the same order, as
``resolve_instruct`` does today, so the prompt is token for token the same.
"""

from __future__ import annotations

import dataclasses
import difflib
import re
import unicodedata
from typing import Optional

from ..settings.limits import Limits
from ..errors import check_unicode
from .description_words import (CATEGORY as _CATEGORY, EN as _EN, EN_ITEM_WORDS as _EN_ITEM_WORDS,
                                EN_LONGEST as _EN_LONGEST, FILLER as _FILLER, ITEM as _ITEM, NOT as _NOT,
                                TONE as _TONE, UP as _UP, ZH as _ZH, ZH_LONGEST as _ZH_LONGEST, Entry as _Entry)
from .voice_design import INSTRUCT_CATEGORIES, VALID_EN, VALID_ZH
from ..errors import InvalidInput

__all__ = ["Description", "read_description", "known_items_text"]

TONE_WHY = ("tone and emotion are not voice-design items (the model designs gender, age, pitch, whisper, "
            "accent and dialect; a saved voice's own clip carries its manner)")
UNKNOWN_WHY = "not a word the voice design knows"


_CJK = r"\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_TOKEN = re.compile(rf"(?P<zh>[{_CJK}]+)|(?P<word>[^\W_{_CJK}]+(?:[.'’-][^\W_{_CJK}]+)*)|(?P<stop>[,，;；.。!！?？、:：()（）\[\]/\n])")
_MARKUP = re.compile(r"<\s*/?\s*[A-Za-z!?][^<>]*>|&(?:[A-Za-z]+|#\d+|#x[0-9A-Fa-f]+);")
_WORD_COUNT = re.compile(rf"[{_CJK}]|[^\W_{_CJK}]+")


@dataclasses.dataclass(frozen=True)
class Description:
    """What a description gave: ``items`` applied (the model's items, English except dialects), in order;
    ``ignored``: the words left out, as written; ``why``: one line per reason (ignored words, conflicts,
    negations); ``style``: the tag of the saved voice's clip a word chose (``studio.variants``), if any."""

    text: Optional[str]
    items: tuple[str, ...] = ()
    ignored: tuple[str, ...] = ()
    why: tuple[str, ...] = ()
    style: Optional[str] = None      # the saved voice's style variant a word picked (``studio.variants``)

    @property
    def instruct(self) -> Optional[str]:
        """The items as an instruct for the engine (``resolve_instruct`` unifies their language); None: no item."""
        return ", ".join(self.items) or None

    def note(self) -> str:
        """One line: what was applied and what was ignored, and why (for the CLI's stderr and logs)."""
        applied = f"applied '{self.instruct}'" if self.items else "no item applied (the model chooses the voice)"
        if self.style:
            applied = f"spoke with the voice's {self.style!r} clip; " + (applied if self.items else "no item applied")
        return f"voice description: {applied}" + ("; " + "; ".join(self.why) if self.why else "")


@dataclasses.dataclass
class _Match:
    words: str                   # as written
    entry: _Entry
    position: int
    degree: Optional[str] = None
    negated: bool = False


def known_items_text() -> str:
    return ("Known items: " + ", ".join(sorted(VALID_EN)) + "; in Chinese: " + "，".join(sorted(VALID_ZH))
            + ". Synonyms such as deep, old, kid, whispering, UK, Aussie, 低沉, 老人 are read too.")


def check_description(text: str, limits: Limits, what: str = "The voice description", param=None) -> None:
    """A description is plain text within the text limits: valid Unicode, no control characters, no markup,
    at most ``max_text_chars`` characters and ``max_description_words`` words."""
    if not isinstance(text, str):
        raise InvalidInput(f"{what} must be text, not {type(text).__name__}.", param=param)
    check_unicode(text, what)
    control = next((i for i, c in enumerate(text) if unicodedata.category(c) == "Cc" and c not in "\t\n\r"), None)
    if control is not None:
        raise InvalidInput(f"{what} holds a control character (U+{ord(text[control]):04X} at position {control}); "
                           "write plain words.", param=param)
    markup = _MARKUP.search(text)
    if markup:
        raise InvalidInput(f"{what} holds markup ({markup.group()[:40]!r}); write plain words such as "
                           "'a deep British man' (SSML and HTML are not read).", param=param)
    limits.check(what, len(text), "max_text_chars", " characters")
    limits.check(what, len(_WORD_COUNT.findall(text)), "max_description_words", " words")


def read_description(text: Optional[str], *, strict: bool = False, limits: Optional[Limits] = None,
                     param: Optional[str] = None) -> Description:
    """Read a voice description (see the module).  ``strict``: ``InvalidInput`` (``param``) when any word is not
    understood or items conflict, with the known items.  ``limits`` (default: the public ``Limits()``) bound it."""
    if text is None or (isinstance(text, str) and not text.strip()):
        return Description(text=None)
    check_description(text, limits or Limits(), param=param)
    matches, unknown = _scan(text)
    items, ignored, why = _resolve(matches, unknown)
    description = Description(text=text, items=tuple(items), ignored=tuple(ignored), why=tuple(why))
    if strict and ignored:
        raise InvalidInput("The voice description has words it cannot apply: " + "; ".join(why) + ". "
                           + known_items_text(), param=param)
    return description


def _scan(text: str) -> tuple[list[_Match], list[tuple[int, str, str]]]:
    """The phrases of ``text`` in order, and the words not understood: (position, words, why)."""
    matches: list[_Match] = []
    unknown: list[tuple[int, str, str]] = []
    pending: list[_Match] = []   # "very" and "not" waiting for the word they qualify
    words: list[tuple[str, int]] = []

    def take(written: str, entry: _Entry, position: int):
        if entry.kind == _FILLER:
            return
        if entry.kind == _TONE:
            miss(written, position, TONE_WHY)
            return
        match = _Match(written, entry, position)
        if entry.kind in (_UP, _NOT):
            pending.append(match)
            return
        if pending:
            match.negated = any(q.entry.kind == _NOT for q in pending)
            match.degree = _UP if any(q.entry.kind == _UP for q in pending) else None
            match.words, match.position = _join(*[q.words for q in pending], written), pending[0].position
        pending.clear()
        matches.append(match)

    def miss(written: str, position: int, why: str = UNKNOWN_WHY):
        negations = [q for q in pending if q.entry.kind == _NOT]
        pending.clear()
        if negations:
            written, position = _join(*[q.words for q in negations], written), negations[0].position
        unknown.append((position, written, why))

    def flush_words():
        i = 0
        while i < len(words):
            age = _age_in_years(words, i)
            if age:
                n, item = age
                take(" ".join(w for w, _ in words[i:i + n]), _Entry(_ITEM, (item,)), words[i][1])
                i += n
                continue
            for n in range(min(_EN_LONGEST, len(words) - i), 0, -1):
                phrase = " ".join(w.lower() for w, _ in words[i:i + n])
                entry = _EN.get(phrase) or _EN.get(re.sub(r"['’]s$", "", phrase))   # a woman's voice
                if entry:
                    take(" ".join(w for w, _ in words[i:i + n]), entry, words[i][1])
                    i += n
                    break
            else:
                word, position = words[i]
                parts = [p for p in re.split(r"[-’'.]", word.lower()) if p]
                if len(parts) > 1 and all(p in _EN for p in parts):
                    for part in parts:
                        take(part, _EN[part], position)
                else:
                    miss(word, position, TONE_WHY if _tone_adverb(word.lower()) else _unknown_why(word))
                i += 1
        words.clear()

    def end_clause():
        """A comma or a full stop: a negation with nothing after it was not understood."""
        unknown.extend((q.position, q.words, "a negation of nothing") for q in pending if q.entry.kind == _NOT)
        pending.clear()

    for token in _TOKEN.finditer(text):
        if token.group("word"):
            words.append((token.group("word"), token.start()))
            continue
        flush_words()
        if token.group("zh"):
            _scan_chinese(token.group("zh"), token.start(), take, miss)
        else:
            end_clause()
    flush_words()
    end_clause()
    return matches, unknown


def _join(*words: str) -> str:
    """Words as written: Chinese ones without spaces between them."""
    out = words[0]
    for word in words[1:]:
        out += word if re.match(f"[{_CJK}]", word) and re.search(f"[{_CJK}]$", out) else " " + word
    return out


def _scan_chinese(run: str, start: int, take, miss) -> None:
    """Longest phrases first; characters between known phrases are one word not understood."""
    i, missed = 0, ""
    while i < len(run):
        for n in range(min(_ZH_LONGEST, len(run) - i), 0, -1):
            entry = _ZH.get(run[i:i + n])
            if entry:
                if missed:
                    miss(missed, start + i - len(missed))
                    missed = ""
                take(run[i:i + n], entry, start + i)
                i += n
                break
        else:
            missed += run[i]
            i += 1
    if missed:
        miss(missed, start + len(run) - len(missed))


_YEARS = re.compile(r"(\d{1,3})(s|-year-old|-years-old)?$")


def _age_in_years(words: list[tuple[str, int]], i: int) -> Optional[tuple[int, str]]:
    """"30 years old", "a 70-year-old", "in her 40s": (words taken, the age item), or None."""
    found = _YEARS.match(words[i][0].lower())
    if not found:
        return None
    following = [w.lower() for w, _ in words[i + 1:i + 3]]
    if found.group(2):
        n = 1
    elif following[:2] in (["year", "old"], ["years", "old"]):
        n = 3
    elif following[:1] in (["yo"], ["y/o"]):
        n = 2
    else:
        return None
    years = int(found.group(1))
    bounds = ((12, "child"), (19, "teenager"), (35, "young adult"), (59, "middle-aged"))
    return n, next((item for top, item in bounds if years <= top), "elderly")


def _unknown_why(word: str) -> str:
    """Why a word is ignored, with the item it is closest to (a typo: 'femal')."""
    close = difflib.get_close_matches(word.lower(), _EN_ITEM_WORDS, n=1, cutoff=0.75)
    return f"{UNKNOWN_WHY} (did you mean '{close[0]}'?)" if close else UNKNOWN_WHY


def _tone_adverb(word: str) -> bool:
    """``cheerfully``, ``angrily``: an adverb of a tone word."""
    if not word.endswith("ly"):
        return False
    stem = word[:-2]
    stems = (stem, stem[:-1] + "y" if stem.endswith("i") else stem, stem + "le")
    return any(_EN.get(s) is not None and _EN[s].kind == _TONE for s in stems)


_DEGREE = {(_UP, "low pitch"): "very low pitch", (_UP, "high pitch"): "very high pitch"}


def _resolve(matches: list[_Match], unknown: list[tuple[int, str, str]]):
    """The items applied (in order of first mention), the words ignored (in order) and why."""
    stated: dict[str, list[tuple[str, _Match]]] = {}    # category -> (item, match)
    implied: dict[str, list[tuple[str, _Match]]] = {}   # items a noun suggests ("girl": child)
    excluded: dict[str, list[_Match]] = {}              # item -> the negations that leave it out
    for match in matches:
        for bucket, items in ((stated, match.entry.items), (implied, match.entry.implied)):
            for item in items:
                item = _DEGREE.get((match.degree, item), item)
                if match.negated:
                    if bucket is stated:
                        excluded.setdefault(item, []).append(match)
                else:
                    bucket.setdefault(_CATEGORY[item], []).append((item, match))
    chosen: dict[str, _Match] = {}                     # item -> its first mention
    dropped: list[tuple[int, str]] = []
    notes: list[str] = []

    def drop(found: list[_Match], reason: str):
        dropped.extend((m.position, m.words) for m in found)
        notes.append(f"{' and '.join(dict.fromkeys(repr(m.words) for m in found))}: {reason}")

    for category in INSTRUCT_CATEGORIES:
        candidates = stated.get(category) or implied.get(category) or []
        distinct = list(dict.fromkeys(item for item, _ in candidates))
        if len(distinct) > 1:
            drop([m for _, m in candidates], f"conflict ({category}: {' vs '.join(distinct)}), none is applied")
        elif distinct and distinct[0] in excluded:
            drop([candidates[0][1]] + excluded.pop(distinct[0]), f"contradict each other, '{distinct[0]}' is not applied")
        elif distinct:
            chosen[distinct[0]] = min((m for _, m in candidates), key=lambda m: m.position)
    for item, negations in excluded.items():
        notes.append(f"{' and '.join(repr(m.words) for m in negations)}: understood, '{item}' is left out")
    accent = next((i for i in chosen if _CATEGORY[i] == "accent"), None)
    dialect = next((i for i in chosen if _CATEGORY[i] == "dialect"), None)
    if accent and dialect:
        drop([chosen.pop(accent), chosen.pop(dialect)],
             "an English accent and a Chinese dialect cannot be mixed, neither is applied")
    items = sorted(chosen, key=lambda i: (chosen[i].position, list(chosen).index(i)))
    ignored = [w for _, w in sorted(set(dropped) | {(p, w) for p, w, _ in unknown})]
    by_reason: dict[str, list[str]] = {}
    for _, word, why in sorted(unknown):
        by_reason.setdefault(why, []).append(word)
    return items, ignored, [f"{', '.join(repr(w) for w in ws)}: {why}" for why, ws in by_reason.items()] + notes
