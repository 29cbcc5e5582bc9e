"""Server limits: what one request may cost, in one typed place.

``Limits`` bounds text, planned audio, chunks, steps, input audio, decode
frames and upload bytes.  The engine enforces them, so every entry point
inherits them; ``Limits()`` is safe for a public deployment and
``Limits.local()`` is for one person's machine.  ``add_limit_arguments`` gives
every program the same ``--limits public|local`` and ``--max-...`` flags.
"""

from __future__ import annotations

import argparse
import dataclasses
import math

from ..constants import FRAME_RATE
from ..errors import ResourceLimitExceeded, excerpt
from .generation import _cli_number, _show


@dataclasses.dataclass(frozen=True)
class Limits:
    """What one request may cost.  The defaults suit a public server; ``Limits.local()`` one person's machine."""

    max_text_chars: int = 2000              # characters of text to speak (and of a transcript, an instruct)
    max_description_words: int = 60         # words of a voice description ("a deep, calm British man")
    max_normalize_chars: int = 600          # characters read through normalize_text (its cost grows with them)
    max_number_digits: int = 20             # digits of one number read through normalize_text (text/text_work.py)
    max_numbers: int = 100                  # numbers of one text read through normalize_text
    max_prompt_tokens: int = 4096           # text tokens of one forward's prompt: style, transcript and text
    max_audio_seconds: float = 180.0        # planned seconds of speech of one request
    max_chunks: int = 16                    # chunks a long text is split into
    max_steps: int = 64                     # unmasking steps
    max_reference_seconds: float = 60.0     # a reference clip for cloning (read only up to this)
    max_codec_input_seconds: float = 60.0   # audio given to the codec round trip
    max_decode_frames: int = 180 * FRAME_RATE  # frames of codes given to decode (180 s)
    max_upload_bytes: int = 25 * 1024 * 1024  # any uploaded file (audio, codes, voice)
    max_voice_variants: int = 8             # style variants (clips tagged cheerful, sad, ...) one saved voice keeps
    max_ssml_chars: int = 20000             # characters of SSML markup (its text counts in max_text_chars)
    max_ssml_elements: int = 500            # elements of one SSML document

    @classmethod
    def local(cls) -> "Limits":
        """For one person's own machine: long texts and inputs, still bounded."""
        return cls(max_text_chars=50000, max_description_words=200, max_normalize_chars=50000,
                   max_number_digits=100, max_numbers=10000, max_prompt_tokens=32768, max_audio_seconds=3600.0,
                   max_chunks=400, max_steps=256,
                   max_reference_seconds=300.0, max_codec_input_seconds=1800.0,
                   max_decode_frames=3600 * FRAME_RATE,
                   max_upload_bytes=500 * 1024 * 1024, max_voice_variants=32,
                   max_ssml_chars=1_000_000, max_ssml_elements=50_000)

    def check(self, what: str, value: float, limit_name: str, unit: str = "", advice: str = "Shorten the input") -> None:
        """Raise ``ResourceLimitExceeded`` naming the limit when ``value`` is over ``self.<limit_name>``;
        ``advice``: what the user can change in the input (before the way to raise the limit)."""
        limit = getattr(self, limit_name)
        if value > limit:
            raise ResourceLimitExceeded(
                f"{what} is {value:g}{unit}; the limit is {limit:g}{unit} ({limit_name}). {advice}, or "
                f"raise the limit where the program is started: --limits local, or --{limit_name.replace('_', '-')} "
                "N (a shared server keeps its operator's limits).", param=limit_name)

    @property
    def max_reference_frames(self) -> int:
        """Codec frames of the longest reference (a saved voice may hold no more)."""
        return int(self.max_reference_seconds * FRAME_RATE)


LIMIT_PRESETS = {"public": Limits, "local": Limits.local}


def add_limit_arguments(parser: argparse.ArgumentParser, default: str = "public") -> None:
    """``--limits public|local`` and one ``--max-...`` flag per ``Limits`` field (overriding the preset)."""
    group = parser.add_argument_group("limits of one request (public: safe for a shared server; "
                                      "local: for your own machine)")
    group.add_argument("--limits", choices=sorted(LIMIT_PRESETS), default=default,
                       help=f"preset of the limits (default {default})")
    for field in dataclasses.fields(Limits):
        kind = int if field.type in ("int", int) else float
        group.add_argument("--" + field.name.replace("_", "-"), dest="limit_" + field.name, default=None,
                           type=_cli_positive(field.name, kind), metavar="N",
                           help=f"override {field.name} (public {_show(getattr(Limits(), field.name))}, "
                                f"local {_show(getattr(Limits.local(), field.name))})")


def limits_from_arguments(args: argparse.Namespace) -> Limits:
    limits = LIMIT_PRESETS[getattr(args, "limits", None) or "public"]()
    overrides = {f.name: getattr(args, "limit_" + f.name) for f in dataclasses.fields(Limits)
                 if getattr(args, "limit_" + f.name, None) is not None}
    return dataclasses.replace(limits, **overrides) if overrides else limits


def _cli_positive(name: str, kind: type):
    number = _cli_number(name, kind)

    def parse(text: str):
        value = number(text)
        if not (value > 0 and math.isfinite(value)):
            raise argparse.ArgumentTypeError(f"{name} must be a positive number, got {excerpt(text)}")
        return value
    parse.__name__ = kind.__name__
    return parse
