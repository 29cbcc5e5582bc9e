"""The voices the HTTP API offers: saved (cloned) voices and named voice designs.

OpenAI's clients send fixed voice names (``alloy``, ``echo``, ...).  OmniVoice
has no such speakers; it designs a voice from attributes (``instruct``).  Each
OpenAI name is mapped to one documented design below, so a client with a
hard-coded name gets a stable kind of voice (the seed fixes the exact one).
A ``voice`` may also be a saved voice's name, or a design written out
(``"female, low pitch, british accent"``), or ``"auto"`` (the model chooses).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from ..errors import InvalidInput
from ..voice import Voice
from ..voice_design import resolve_instruct

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
    """What a ``voice`` value means: a saved voice, a design, or neither (the model chooses)."""

    name: str
    voice: Optional[Voice] = None
    instruct: Optional[str] = None


def voice_list(saved_names: list[str]) -> list[dict]:
    """``GET /v1/audio/voices``: saved voices first, then the designs."""
    items = [{"id": name, "name": name, "object": "voice", "type": "saved"} for name in saved_names]
    items += [{"id": name, "name": name, "object": "voice", "type": "design", "instructions": design}
              for name, design in DESIGNS.items()]
    items.append({"id": "auto", "name": "auto", "object": "voice", "type": "auto",
                  "instructions": "none: the model picks a voice (fixed by the seed)"})
    return items


def choose_voice(value, saved_names: list[str], load_saved) -> ChosenVoice:
    """Resolve a request's ``voice`` (a string, or ``{"id": ...}`` as newer OpenAI clients send).

    ``load_saved(name) -> Voice``.  Unknown names are ``InvalidInput`` (param ``voice``)
    listing what exists."""
    if isinstance(value, dict):
        value = value.get("id") or value.get("name")
    if value is not None and not isinstance(value, str):
        raise InvalidInput(f"voice must be a name (string), got {type(value).__name__}.", param="voice")
    name = (value or "").strip()
    if name.lower() in AUTO_NAMES:
        return ChosenVoice(name="auto")
    if name in saved_names:
        return ChosenVoice(name=name, voice=load_saved(name))
    folded = {n.casefold(): n for n in saved_names}
    if name.casefold() in folded:
        return ChosenVoice(name=folded[name.casefold()], voice=load_saved(folded[name.casefold()]))
    if name.lower() in DESIGNS:
        return ChosenVoice(name=name.lower(), instruct=DESIGNS[name.lower()])
    if "," in name or name.lower() in _single_items():
        try:
            resolve_instruct(name)
        except ValueError as exc:
            raise InvalidInput(f"voice {name!r} is not a saved voice or a known design, and as a voice design: "
                               f"{str(exc).splitlines()[0]}", param="voice") from None
        return ChosenVoice(name=name, instruct=name)
    known = saved_names + list(DESIGNS) + ["auto"]
    raise InvalidInput(f"Unknown voice {name!r}. Voices: {', '.join(known)} (GET /v1/audio/voices lists them), "
                       "or a voice design such as 'female, low pitch'.", param="voice")


def _single_items() -> set[str]:
    from ..voice_design import VALID_EN

    return {item.lower() for item in VALID_EN}
