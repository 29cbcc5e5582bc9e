"""The names every front end accepts, in one place: presets, voices and languages.

* Presets: ``reference``, ``balanced``, ``fast`` (``presets.PRESETS``); ``quality`` and ``hd`` are
  aliases of ``reference`` (``presets.ALIASES``), accepted wherever a preset is.
* Voices (``choose_voice``): ``"auto"`` or empty: the model chooses; a built-in name (a named design:
  OpenAI's names, mapped below, and our own; a design written out, ``"female, low pitch"``, or one design
  word) is that design, decided before the saved voices are asked for, so it never waits on the voice store
  (a saved voice may not take such a name, ``voices.check_not_built_in``); then a saved voice (exactly, then
  ignoring case), or one of its style variants (``Anna (cheerful)``, ``studio.variants``); then -- where the
  front end reads local files (the command line, batch) -- a path to a ``.npz``.  Servers never take a path.
* Languages: ``languages.language_choices`` (a name or a code, ``"Auto"``).
* Voice descriptions (``read_description``, in ``text.descriptions``): a voice in one's own words, English or
  Chinese ("a deep, calm British man", "温柔的年轻女声") -> the model's design items, with the words left out
  and why; every front end reads OpenAI's ``instructions``, the app's box, ``--instruct`` and batch rows there.

OpenAI's clients send fixed voice names (``alloy``, ``echo``, ...).  OmniVoice has no such
speakers; it designs a voice from attributes (``instruct``).  Each OpenAI name is mapped to one
documented design below, so a client with a hard-coded name gets a stable kind of voice (the seed
fixes the exact one).
"""

from __future__ import annotations

import pathlib
import time
from dataclasses import dataclass
from typing import Callable, Optional, Union

from ..errors import InvalidInput, excerpt
from ..text.languages import language_choices  # noqa: F401 - the vocabulary's languages
from ..settings.presets import ALIASES as PRESET_ALIASES, PRESETS, canonical_preset  # noqa: F401 - the vocabulary's presets
from ..storage.voice_file import Voice
from ..text.voice_design import resolve_instruct
from ..text.descriptions import Description, read_description  # noqa: F401 - the vocabulary's descriptions
from .variants import split_variant_name, variant_of
from ..text.voice_names import find_name

#: a voice design written out is a few items (its error quotes it whole): a longer voice is no design
MAX_DESIGN_CHARS = 300

#: name -> voice design (items of ``voice_design.INSTRUCT_CATEGORIES``)
DESIGNS: dict[str, str] = {
    # OpenAI's voice names
    "alloy": "female, young adult, moderate pitch",
    "ash": "male, young adult, low pitch",
    "ballad": "male, elderly, moderate pitch, british accent",
    "coral": "female, young adult, high pitch",
    "echo": "male, young adult, moderate pitch",
    "fable": "male, middle-aged, moderate pitch, british accent",
    "nova": "female, young adult, high pitch, american accent",
    "onyx": "male, middle-aged, very low pitch",
    "sage": "female, middle-aged, low pitch",
    "shimmer": "female, teenager, high pitch",
    "verse": "male, teenager, moderate pitch",
    "marin": "female, young adult, moderate pitch, american accent",
    "cedar": "male, middle-aged, low pitch, american accent",
    # OmniVoice's own presets
    "whisper": "female, young adult, whisper",
    "elder": "male, elderly, low pitch",
    "child": "female, child, high pitch",
}
AUTO_NAMES = ("auto", "default", "")


@dataclass
class ChosenVoice:
    """What a ``voice`` value means: ``kind`` is ``saved`` (``name`` in the library; ``variant``: the tag of
    its style variant asked for, ``Anna (cheerful)``), ``design`` (``instruct``), ``path`` (a voice file,
    ``path``) or ``auto`` (the model chooses)."""

    name: str
    kind: str = "auto"
    instruct: Optional[str] = None
    path: Optional[pathlib.Path] = None
    variant: Optional[str] = None


#: the ``object`` of a voice, as OpenAI's API names its voices
VOICE_OBJECT = "audio.voice"
#: when the named designs (and ``auto``) came to be, for their ``created_at``: when this server started
_BUILT_IN_SINCE = int(time.time())


def voice_object(name: str, kind: str, created_at: Optional[int] = None, **extra) -> dict:
    """One voice as the API shows it (``created_at``: Unix seconds; a built-in voice's is the server's start)."""
    return {"id": name, "name": name, "object": VOICE_OBJECT, "type": kind,
            "created_at": _BUILT_IN_SINCE if created_at is None else int(created_at), **extra}


def voice_list(saved_names: list[str], created_at: Optional[Callable[[str], int]] = None,
               variants: Optional[Callable[[str], list[dict]]] = None) -> list[dict]:
    """``GET /v1/audio/voices``: saved voices first (``created_at(name)``: when each was saved; ``variants(name)``:
    its style variants), then the designs."""
    items = [voice_object(name, "saved", created_at(name) if created_at else None,
                          **({"variants": variants(name)} if variants else {})) for name in saved_names]
    items += [voice_object(name, "design", instructions=design) for name, design in DESIGNS.items()]
    items.append(voice_object("auto", "auto", instructions="none: the model picks a voice (fixed by the seed)"))
    return items


#: the saved voices a ``voice`` is looked up among: their names, or a function (name -> the saved voice's name
#: it asks for, or None: ``VoiceStore.find``, one query) asked only for a name that is not built in
SavedNames = Union[list[str], Callable[[str], Optional[str]]]


def is_built_in(name: str) -> bool:
    """Whether ``name`` is a built-in voice's (``auto``, a named design, one design word, a design written out):
    resolved without the saved voices."""
    name = (name or "").strip().lower()
    return name in AUTO_NAMES or name in DESIGNS or name in _single_items() or \
        ("," in name and len(name) <= MAX_DESIGN_CHARS)


def finder(saved_names: SavedNames) -> Callable[[str], Optional[str]]:
    if callable(saved_names):
        return saved_names
    return lambda name: find_name(name, saved_names)


def choose_voice(value, saved_names: SavedNames, listed_by: str = "GET /v1/audio/voices",
                 path_base: Optional[pathlib.Path] = None, auto_name: str = "auto") -> ChosenVoice:
    """Resolve a ``voice`` (a string, or ``{"id": ...}`` as newer OpenAI clients send): ``auto``, a named design,
    a design written out (none of them asks the saved voices), then a saved voice or its style variant, then
    (only with ``path_base``: local front ends) a voice file.

    Unknown names are ``InvalidInput`` (param ``voice``) naming the voice asked for and where the voices are
    listed (``listed_by``, whose list calls the model's own choice ``auto_name``)."""
    if isinstance(value, dict):
        value = value.get("id") or value.get("name")
    if value is not None and not isinstance(value, str):
        raise InvalidInput(f"voice must be a name (string), got {type(value).__name__}.", param="voice")
    name = (value or "").strip()
    if name.lower() in AUTO_NAMES:
        return ChosenVoice(name="auto")
    if name.lower() in DESIGNS:
        return ChosenVoice(name=name.lower(), kind="design", instruct=DESIGNS[name.lower()])
    if len(name) <= MAX_DESIGN_CHARS and ("," in name or name.lower() in _single_items()):
        try:
            resolve_instruct(name)
        except ValueError as exc:
            raise InvalidInput(f"voice {excerpt(name)} is not a known design, and as a voice design: "
                               f"{str(exc).splitlines()[0]}", param="voice") from None
        return ChosenVoice(name=name, kind="design", instruct=name)
    find = finder(saved_names)
    saved = find(name)
    if saved is not None:
        return ChosenVoice(name=saved, kind="saved")
    styled = split_variant_name(name)
    if styled:
        saved = find(styled[0])
        if saved is not None:
            return ChosenVoice(name=saved, kind="saved", variant=styled[1])
    if path_base is not None:
        path = pathlib.Path(name).expanduser()
        path = path if path.is_absolute() else pathlib.Path(path_base) / path
        for candidate in (path, path.with_name(path.name + ".npz")):
            if candidate.suffix == ".npz" and candidate.is_file():
                return ChosenVoice(name=candidate.stem, kind="path", path=candidate.resolve())
    also = " or a saved voice file (.npz)" if path_base else ""
    raise InvalidInput(f"No saved voice or named design is called {excerpt(name)}. Designs: {', '.join(DESIGNS)}, "
                       f"{auto_name} ({listed_by} lists them and the saved voices); or write a design such as "
                       f"'female, low pitch'{also}.", param="voice")


def resolve_voice(value, saved_names: SavedNames, load_saved: Callable[[str], Voice],
                  listed_by: str = "GET /v1/audio/voices", path_base: Optional[pathlib.Path] = None, max_frames: Optional[int] = None,
                  auto_name: str = "auto") -> tuple[Optional[Voice], Optional[str]]:
    """``choose_voice``, then the voice itself: (a saved or file voice, None) or (None, its design or None).  A
    style variant (``Anna (cheerful)``) is that clip (``variants.variant_of``)."""
    chosen = choose_voice(value, saved_names, listed_by, path_base, auto_name)
    if chosen.kind == "saved":
        voice = load_saved(chosen.name)
        return (variant_of(voice, chosen.variant) if chosen.variant else voice), None
    if chosen.kind == "path":
        return (Voice.load(chosen.path) if max_frames is None else Voice.load(chosen.path, max_frames=max_frames)), None
    return None, chosen.instruct


def _single_items() -> set[str]:
    from ..text.voice_design import VALID_EN

    return {item.lower() for item in VALID_EN}
