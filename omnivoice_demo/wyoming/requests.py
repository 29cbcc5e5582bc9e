"""What a ``synthesize`` (or ``synthesize-start``) event asks for: voice, language and seed.

Wyoming's fields: ``voice.name`` (a voice of ``describe``: a saved voice, a named design or ``default``;
a design written out, ``"female, low pitch"``, works too), ``voice.language`` (sent by clients only
without a name) and ``voice.speaker``.  OmniVoice has no speakers inside a voice; ``speaker`` is the
seed, as a whole number, so a Home Assistant automation can fix the exact voice of ``default`` or a
design (``options: {voice: default, speaker: "42"}``).

The extension, fields of the event's ``data`` next to ``text`` and ``voice`` (other servers ignore them):
``seed`` (a whole number, 0 to 2**31 - 1), ``language`` (any language of the model, by code or
name: ``de``, ``de-DE``, ``yue``, ``German``) and ``instructions`` (the voice in one's own words, as
OpenAI's field: read leniently, its items replace the voice's design, the words left out are logged).
Without a seed each request draws one.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Optional

from ..errors import InvalidInput, excerpt
from ..text.languages import resolve_language

MAX_SEED = 2**31 - 1
#: a speaker that is a seed: ASCII digits only ("²" and "٣" are digits to str.isdigit, not to int), at most 12
SEED_DIGITS = re.compile(r"[0-9]{1,12}")


@dataclasses.dataclass
class SpeechRequest:
    voice: Optional[str] = None      # None: the model chooses
    language: Optional[str] = None   # a code the model knows, None: no language token
    seed: Optional[int] = None
    instructions: Optional[str] = None   # a voice description (text.descriptions)


def parse_request(data: dict) -> SpeechRequest:
    """The voice, language and seed of a ``synthesize``/``synthesize-start`` event's data; ``InvalidInput``
    naming the field when one is malformed."""
    voice = data.get("voice") or {}
    if not isinstance(voice, dict):
        raise InvalidInput("voice must be an object such as {\"name\": \"default\"}.", param="voice")
    name = _text(voice, "name", "voice.name")
    language = _text(data, "language", "language") or _text(voice, "language", "voice.language")
    seed = data.get("seed")
    speaker = _text(voice, "speaker", "voice.speaker")
    if seed is None and speaker is not None:
        if not SEED_DIGITS.fullmatch(speaker.strip()):
            raise InvalidInput(f"voice.speaker {excerpt(speaker)} is not a seed: OmniVoice's speaker is the seed, "
                               "a whole number (e.g. \"42\") that fixes the voice; leave it out for a new voice "
                               "each time.",
                               param="speaker")
        seed = int(speaker.strip())
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED):
        raise InvalidInput(f"seed must be a whole number from 0 to {MAX_SEED}, got {excerpt(seed)}.", param="seed")
    return SpeechRequest(voice=name, language=wyoming_language(language), seed=seed,
                         instructions=_text(data, "instructions", "instructions"))


def wyoming_language(value: Optional[str]) -> Optional[str]:
    """A language as clients send it (``en``, ``en-US``, ``pt_BR``, ``yue``, ``English``) -> the model's code.

    The whole value first (a code or name the model knows), then its primary subtag (``en-US`` -> ``en``);
    an unknown language is ``InvalidInput`` with close matches."""
    if value is None or not value.strip():
        return None
    try:
        return resolve_language(value)
    except InvalidInput:
        primary = value.strip().replace("_", "-").split("-")[0]
        if primary and primary != value.strip():
            try:
                return resolve_language(primary)
            except InvalidInput:
                pass
        raise


def _text(mapping: dict, key: str, label: str) -> Optional[str]:
    value = mapping.get(key)
    if value is not None and not isinstance(value, str):
        raise InvalidInput(f"{label} must be a string, got {type(value).__name__}.", param=label)
    return value
