"""``describe`` -> ``info``: one TTS program, its voices and the languages Home Assistant can show.

Voices: the saved voices (``VoiceLibrary``), each style variant of one as a voice of its own
(``Anna (cheerful)``, ``studio.variants``), the named designs (``studio.vocabulary.DESIGNS``) and
``default`` (the model chooses a voice; the seed fixes which).  Every voice speaks every language of
the model (a cloned voice speaks other languages too), so each lists the same languages: the model's
ISO 639-1 codes (125), the forms Home Assistant shows and matches to a pipeline's ``en-US``.  A
request may still name any of the model's 646 languages by code (``yue``) or name (``Cantonese``).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Mapping, Optional

from wyoming.info import Attribution, Info, TtsProgram, TtsVoice

from ..constants import app_version
from ..text.languages import supported_language_codes
from ..studio.variants import variant_name
from ..studio.vocabulary import DESIGNS, is_built_in

PROGRAM = "omnivoice"
ATTRIBUTION = Attribution(name="k2-fsa (OmniVoice); OmniVoice ONNX Studio", url="https://github.com/k2-fsa/OmniVoice")
DEFAULT_VOICE = "default"


@lru_cache(maxsize=1)
def advertised_languages() -> tuple[str, ...]:
    """The model's languages that have a two-letter (ISO 639-1) code, sorted."""
    return tuple(sorted(code for code in supported_language_codes() if len(code) == 2))


def voice_descriptions(saved_names: list[str], tags: Optional[Mapping[str, list[str]]] = None
                       ) -> list[tuple[str, str]]:
    """(name, description) of every voice: saved ones first, each followed by its style variants (``tags``: saved
    name -> its tags), then the designs, then ``default``.  A saved voice named like a built-in one (a design,
    ``auto``, ``default``: only a voice written around the program, such as another client's database row, can
    be) is left out: that name speaks the built-in voice (``studio.vocabulary.choose_voice`` resolves built-in
    names before the saved voices)."""
    tags = tags or {}
    reachable = [name for name in saved_names if not is_built_in(name)]
    return ([item for name in reachable for item in
             [(name, "saved voice (cloned)")] + [(variant_name(name, tag), f"saved voice {name}, its {tag} style")
                                                 for tag in tags.get(name, ())]]
            + [(name, f"voice design: {design}") for name, design in DESIGNS.items()]
            + [(DEFAULT_VOICE, "the model chooses a voice (fixed by the seed)")])


def build_info(saved_names: list[str], model_label: str = "", version: str = "",
               tags: Optional[Mapping[str, list[str]]] = None) -> Info:
    version = version or app_version()
    languages = list(advertised_languages())
    voices = [TtsVoice(name=name, description=text, attribution=ATTRIBUTION, installed=True, version=None,
                       languages=languages) for name, text in voice_descriptions(saved_names, tags)]
    about = "OmniVoice text to speech on ONNX Runtime" + (f" ({model_label})" if model_label else "")
    program = TtsProgram(name=PROGRAM, description=about, attribution=ATTRIBUTION, installed=True,
                         version=version, voices=voices, supports_synthesize_streaming=True)
    return Info(tts=[program])
