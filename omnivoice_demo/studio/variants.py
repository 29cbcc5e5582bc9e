"""Style variants of a saved voice: more clips of the same speaker, each tagged with a style word.

OmniVoice cannot design a tone or an emotion; a clip of the speaker in that tone can carry it.  A saved
voice keeps such clips as variants (``Voice.variants``: tag -> clip), in its own file (or its browser
entry), so renaming, deleting, exporting and importing the voice carry them.  Every front end uses these
rules:

* a tag is one word (letters and digits of any script, inner hyphens; ``cheerful``, ``very-sad``, ``开心``),
  NFKC, at most ``MAX_TAG_CHARS`` characters (``clean_tag``); tags compare as voice names do (``name_key``:
  ``Cheerful`` and ``cheerful`` are one tag), and a taken tag is refused, never overwritten;
* a voice keeps at most ``Limits.max_voice_variants`` variants (``add_variant``, ``check_variants``);
* a word of a description (OpenAI's ``instructions``, the app's box, ``--instruct``) that is one of the
  voice's tags speaks with that clip, and the rest of the description is read as always
  (``read_voice_description``); a word that is no tag is reported as ignored, and the main clip speaks;
* ``Anna (cheerful)`` names the variant directly (``variant_name``, ``split_variant_name``): Wyoming lists
  each variant so, and ``studio.vocabulary`` resolves the name for every front end.
"""

from __future__ import annotations

import dataclasses
import re
import unicodedata
from typing import Iterable, Optional

from ..settings.limits import Limits
from ..storage.voice_file import MAX_TAG_CHARS, Voice
from ..errors import InvalidInput, ResourceLimitExceeded, excerpt
from ..text.descriptions import Description, check_description, read_description
from ..text.voice_names import MAX_NAME_LENGTH, find_name, name_key

__all__ = ["add_variant", "check_room", "check_variants", "clean_tag", "listed_variants", "read_voice_description",
           "remove_variant", "split_variant_name", "variant_listing", "variant_name", "variant_of"]

_TAG = re.compile(r"[^\W_]+(?:-[^\W_]+)*")
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_VARIANT_NAME = re.compile(r"^(?P<voice>.*[^\s(])\s*\((?P<tag>[^()]+)\)\s*$")
EXAMPLES = "cheerful, sad, angry, calm, excited, serious, whisper"


def clean_tag(tag) -> str:
    """A style tag as it is kept (NFKC, one word); ``InvalidInput`` (param ``tag``) naming what is wrong."""
    if not isinstance(tag, str):
        raise InvalidInput(f"A style tag must be text, not {type(tag).__name__}.", param="tag")
    cleaned = unicodedata.normalize("NFKC", tag).strip()
    if not cleaned or len(cleaned) > MAX_TAG_CHARS or not _TAG.fullmatch(cleaned):
        raise InvalidInput(f"The style tag {excerpt(tag)} is not one word: give a word of letters or digits (inner "
                           f"hyphens allowed), at most {MAX_TAG_CHARS} characters, such as {EXAMPLES}.", param="tag")
    return cleaned


def variant_name(voice: str, tag: str) -> str:
    """How a variant is named as a voice of its own: ``Anna (cheerful)``."""
    return f"{voice} ({tag})"


def split_variant_name(value: str) -> Optional[tuple[str, str]]:
    """(voice, tag) of ``Anna (cheerful)``; None for a name without a tag in brackets (voice names hold none),
    or one longer than a voice name and a tag can be."""
    if len(value or "") > MAX_NAME_LENGTH + MAX_TAG_CHARS + 4:
        return None
    found = _VARIANT_NAME.match(value or "")
    return (found["voice"].strip(), found["tag"].strip()) if found else None


def _styles(voice: Voice) -> str:
    return ", ".join(voice.variants) or "none"


def check_variants(voice: Voice, max_variants: int) -> Voice:
    """``voice``, or an error when its variants break the rules: more than ``max_variants``, a tag that is not
    a clean word, two tags that are one (``name_key``).  Every save and import goes through here."""
    if len(voice.variants) > max_variants:
        raise ResourceLimitExceeded(f"The voice {excerpt(voice.name)} has {len(voice.variants)} style variants; this "
                                    f"server keeps at most {max_variants} a voice (max_voice_variants).",
                                    param="max_voice_variants")
    seen: dict[str, str] = {}
    for tag in voice.variants:
        try:
            clean = clean_tag(tag)
        except InvalidInput:
            clean = None
        if clean != tag:
            raise InvalidInput(f"The voice {excerpt(voice.name)} has a style tagged {excerpt(tag)}, which is not a "
                               "clean word (one word of letters or digits, inner hyphens allowed); it cannot be kept "
                               "as it is.", param="tag")
        if name_key(tag) in seen:
            raise InvalidInput(f"The voice {excerpt(voice.name)} has the styles {excerpt(seen[name_key(tag)])} and "
                               f"{excerpt(tag)}, which are one tag; keep one of them.", param="tag")
        seen[name_key(tag)] = tag
    return voice


def check_room(voice: Voice, tag: str, max_variants: int) -> str:
    """The clean ``tag`` when ``voice`` can take a variant so tagged (checked before a clip is encoded):
    refused when the tag is taken (``name_key``) or the voice has ``max_variants`` already."""
    tag = clean_tag(tag)
    taken = find_name(tag, voice.variants)
    if taken is not None:
        raise InvalidInput(f"The voice {excerpt(voice.name)} has a style {excerpt(taken)} already; delete it first, "
                           "or choose another tag.", param="tag")
    if len(voice.variants) >= max_variants:
        raise ResourceLimitExceeded(f"The voice {excerpt(voice.name)} has {len(voice.variants)} style variants, the "
                                    f"most kept for one voice (max_voice_variants); delete one first.",
                                    param="max_voice_variants")
    return tag


def add_variant(voice: Voice, tag: str, clip: Voice, max_variants: int) -> Voice:
    """``voice`` with ``clip`` as its variant ``tag`` (``check_room``).  The clip keeps its codes, transcript and
    loudness; it is named by its tag."""
    tag = check_room(voice, tag, max_variants)
    variant = dataclasses.replace(clip, name=tag, variants={})
    return dataclasses.replace(voice, variants={**voice.variants, tag: variant})


def _found(voice: Voice, tag: str) -> str:
    found = find_name(tag, voice.variants) if isinstance(tag, str) else None
    if found is None:
        raise InvalidInput(f"The voice {excerpt(voice.name)} has no style {excerpt(tag)}; its styles: "
                           f"{_styles(voice)}.", param="tag")
    return found


def remove_variant(voice: Voice, tag: str) -> Voice:
    """``voice`` without its variant ``tag`` (``InvalidInput`` listing its styles when it has none of that tag)."""
    found = _found(voice, tag)
    return dataclasses.replace(voice, variants={k: v for k, v in voice.variants.items() if k != found})


def variant_of(voice: Voice, tag: str) -> Voice:
    """The clip to speak with for ``voice``'s style ``tag``, named ``Anna (cheerful)``."""
    found = _found(voice, tag)
    return dataclasses.replace(voice.variants[found], name=variant_name(voice.name, found), variants={})


def listed_variants(name: str, tags: Iterable[str]) -> list[dict]:
    """The variants of the voice ``name`` as the APIs list them: the tag and the name to ask for."""
    return [{"tag": tag, "id": variant_name(name, tag)} for tag in tags]


def variant_listing(voice: Voice, details: bool = False) -> list[dict]:
    """``listed_variants`` of ``voice`` (``details``: with each clip's length and transcript)."""
    listed = listed_variants(voice.name, voice.variants)
    for item in listed if details else ():
        clip = voice.variants[item["tag"]]
        item.update(seconds=round(clip.seconds, 2), transcript=clip.transcript)
    return listed


def _tag_words(text: str, tags: Iterable[str]) -> list[tuple[int, int, str]]:
    """(start, end, tag) of each place in ``text`` that names one of ``tags``: a whole word (``name_key``), or, for
    a tag in Chinese characters (written without spaces), its characters anywhere."""
    keys = {name_key(tag): tag for tag in tags}
    found = [(m.start(), m.end(), keys[name_key(m.group())]) for m in _TAG.finditer(text)
             if name_key(m.group()) in keys]
    taken = [(start, end) for start, end, _ in found]
    for tag in keys.values():
        if _CJK.search(tag):
            for m in re.finditer(re.escape(tag), text):
                if not any(s <= m.start() < e for s, e in taken):
                    found.append((m.start(), m.end(), tag))
    return sorted(found)


def read_voice_description(voice: Optional[Voice], text: Optional[str], *, strict: bool = False,
                           limits: Optional[Limits] = None, param: Optional[str] = None
                           ) -> tuple[Optional[Voice], Description]:
    """(the voice to speak with, the description) of a description given with ``voice`` (None: a design or the
    model's choice).  A word that is one of the voice's tags picks that clip (``Description.style``) and is not
    read as a design word; the rest is ``read_description``'s (``strict``, ``limits``, ``param`` as there).  A
    second tag is ignored, said why (one clip speaks); with ``strict`` it is refused."""
    if voice is None or not voice.variants or text is None or not text.strip():
        return voice, read_description(text, strict=strict, limits=limits, param=param)
    check_description(text, limits or Limits(), param=param)
    places = _tag_words(text, voice.variants)
    if not places:
        description = read_description(text, strict=strict, limits=limits, param=param)
        if description.ignored:  # what the voice could have taken instead
            description = dataclasses.replace(description, why=description.why + (
                f"the voice {voice.name!r} has the styles {_styles(voice)} (a style word picks its clip)",))
        return voice, description
    style = places[0][2]
    extra = [text[start:end] for start, end, tag in places if tag != style]   # the same tag twice is one style
    rest, last = [], 0
    for start, end, _ in places:
        rest.append(text[last:start])
        last = end
    rest.append(text[last:])
    why = (f"{', '.join(repr(w) for w in extra)}: one style at a time, the voice speaks with its {style!r} clip",) \
        if extra else ()
    if strict and extra:
        raise InvalidInput(f"The description names more than one style of the voice {excerpt(voice.name)}: "
                           f"{'; '.join(why)}.", param=param)
    description = read_description(" ".join(rest), strict=strict, limits=limits, param=param)
    chosen = variant_of(voice, style)
    return chosen, dataclasses.replace(description, text=text, style=style,
                                       ignored=tuple(extra) + description.ignored, why=why + description.why)
