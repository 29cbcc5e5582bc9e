"""Generation settings: every setting of one generation, in one typed place.

``GenerationConfig`` holds every setting of the reference's ``generate``
(``OmniVoiceGenerationConfig`` and its keyword arguments), with the
reference's defaults.  A plain options dataclass: each field's
default, and in its metadata a ``Setting``: the range ``validate()`` enforces
and the help text.  The engine, the CLI (a flag per field, generated here), the
app and the APIs all read this one class; how the app shows a field (its label,
slider range and step, whether it sits under "Advanced") is the app's own
description, ``omnivoice_demo/ui/control_specs.py``.

What one request may cost is ``settings.limits.Limits``.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
from typing import Any, Mapping, Optional, Union

from ..errors import InvalidInput, excerpt

MAX_SEED = 2**63 - 1
#: ``normalize_text``'s third value: on where the text's language is one the normaliser serves
#: (``normalize_choice.py``; the default of the front ends where people type)
NORMALIZE_AUTO = "auto"


@dataclasses.dataclass(frozen=True)
class Setting:
    """How one ``GenerationConfig`` field is checked and described (its widget: ``ui/control_specs.py``)."""

    help: str
    low: Optional[float] = None          # valid range (inclusive), None for booleans
    high: Optional[float] = None
    reference_name: str = ""             # the reference's name where it differs
    flags: tuple[str, ...] = ()          # extra CLI spellings (kept for compatibility)


def _field(default, **setting):
    return dataclasses.field(default=default, metadata={"setting": Setting(**setting)})


@dataclasses.dataclass(frozen=True)
class GenerationConfig:
    """Every setting of one generation; defaults are the reference's (omnivoice 0.2.1).

    The reference's ``OmniVoiceGenerationConfig`` fields plus ``generate``'s
    ``duration``, ``speed``, ``normalize_text`` and the seed.  ``normalize_text``
    needs the ``normalize`` extra (WeTextProcessing, num2words: text/normalize.py).
    """

    num_step: int = _field(32, low=1, high=256,
                           help="unmasking steps (32 in the reference; fewer is faster and approximate)",
                           flags=("--steps",))
    guidance_scale: float = _field(2.0, low=0.0, high=20.0,
                                   help="classifier-free guidance weight (0 runs the conditional row alone)")
    t_shift: float = _field(0.1, low=1e-3, high=10.0,
                            help="time-step shift of the unmasking schedule (small = back-loaded)")
    layer_penalty_factor: float = _field(5.0, low=0.0, high=100.0,
                                         help="confidence penalty per codebook index (decides low codebooks first)")
    position_temperature: float = _field(5.0, low=0.0, high=100.0,
                                         help="Gumbel temperature of the choice of positions (0 = greedy)")
    class_temperature: float = _field(0.0, low=0.0, high=100.0,
                                      help="sampling temperature of the tokens (0 = argmax)")
    denoise: bool = _field(True, help="add the <|denoise|> token when cloning")
    preprocess_prompt: bool = _field(True,
                                     help="trim silence and normalise the reference clip when cloning")
    postprocess: bool = _field(True, reference_name="postprocess_output",
                               help="remove long silences, set loudness, fade and pad the output")
    pad_duration: float = _field(0.1, low=0.0, high=2.0,
                                 help="seconds of silence added on each side of the output")
    fade_duration: float = _field(0.1, low=0.0, high=2.0,
                                  help="seconds of fade-in and fade-out of the output")
    speed: float = _field(1.0, low=0.5, high=2.0,
                          help="speaking rate (1 = the estimated natural length)")
    duration: Optional[float] = _field(None, low=0.1, high=600.0,
                                       help="seconds of speech (default: estimated from the text)")
    chunk_duration: float = _field(15.0, low=1.0, high=120.0,
                                   reference_name="audio_chunk_duration",
                                   help="seconds of speech per chunk when a long text is split")
    chunk_threshold: float = _field(30.0, low=1.0, high=600.0,
                                    reference_name="audio_chunk_threshold",
                                    help="texts estimated longer than this are split into chunks")
    normalize_text: Union[bool, str] = _field(
        False,
        help="numbers in words before speaking (the reference's normalize_text; needs the normalize extra): "
             "true reads numbers, dates, money and units in English and Chinese and bare integers in other "
             "languages (num2words), in the language given or else detected in the text; 'auto' does so only "
             "for English and Chinese (text/normalize_choice.py)")
    seed: Optional[int] = _field(None, low=0, high=MAX_SEED,
                                 help="random seed (default: a new one each run, reported with the result)")
    # --- this program's speed options (off / 1 = the reference's behaviour) -------------------
    guidance_every: int = _field(1, low=1, high=16,
                                 help="run the unconditional (guidance) forward on every k-th step only and "
                                      "reuse its last logits in between (1 = every step, the reference)")
    sentence_streaming: bool = _field(False,
                                      help="generate the first sentence on its own (a long one cut at a clause) "
                                           "so its audio comes first, then the rest in chunks of chunk_duration")
    prompt_refresh: int = _field(1, low=1, high=256,
                                 help="run the conditional row whole on every k-th step only and keep its "
                                      "prompt's keys and values (instruct, text, reference) for the steps between, "
                                      "which run the target frames alone; at most num_step (1 = every step, the "
                                      "reference)")
    # --- the sentence check (off = the reference's output; engine/guard.py) ------------------
    guard: bool = _field(False,
                         help="transcribe each chunk (sentence) after it is made, score it against its text, and "
                              "generate it again with the next seed when it fails (needs the speech recogniser)")
    guard_cer: float = _field(0.2, low=0.0, high=1.0,
                              help="a chunk whose character error rate (plus 1 for short speech, a long silence "
                                   "or clipping) is over this is generated again")
    guard_tries: int = _field(3, low=1, high=8,
                              help="most takes of one chunk; the best is kept")
    # --- word times (off = nothing aligned; engine/word_times.py) -------------------------------
    word_timestamps: bool = _field(False,
                                   help="align each chunk with its text (the speech recogniser's cross-attention) "
                                        "and report every word's start and end in the result and the stream; the "
                                        "app shows the words under the player, the one heard highlighted, and "
                                        "offers word subtitles (needs the speech recogniser)")
    # --- delivery (off = the exact output; audio/loudness.py) ----------------------------------
    loudness: Optional[float] = _field(None, low=-40.0, high=-5.0,
                                       help="normalise the final audio to this integrated loudness (EBU R128; "
                                            "-16 for podcasts, -23 for broadcast) with its true peak at most "
                                            "-1 dBTP (needs the loudness extra: pyloudnorm)")
    # --- first audio (0 = the first sentence; engine/streaming.py) --- last, so /speak's positions stay -------
    quick_start: float = _field(0.0, low=0.0, high=10.0,
                                help="with sentence streaming, a first chunk of about this many seconds of speech "
                                     "(a clause or a few words) so the first audio comes sooner, as a voice "
                                     "assistant wants; the rest by sentence as without it (0 = the first "
                                     "sentence, at least 2 s; changes the audio at the first cut)")

    # --- describing -------------------------------------------------------------------

    @classmethod
    def names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in dataclasses.fields(cls))

    @classmethod
    def setting(cls, name: str) -> Setting:
        return _FIELDS[name].metadata["setting"]

    @classmethod
    def default(cls, name: str):
        return _FIELDS[name].default

    @classmethod
    def kind(cls, name: str) -> type:
        """``bool``, ``int`` or ``float`` (Optional[...] unwrapped)."""
        return _KINDS[name]

    @classmethod
    def preset(cls, name: str) -> "GenerationConfig":
        """The settings of a speed preset (``presets.PRESETS``: reference, balanced, fast)."""
        from .presets import preset_values

        return cls().replace(**preset_values(name))

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    # --- building ---------------------------------------------------------------------

    def replace(self, **overrides) -> "GenerationConfig":
        """A copy with some settings changed; an unknown name is an ``InvalidInput`` listing the known ones."""
        unknown = sorted(set(overrides) - set(_FIELDS))
        if unknown:
            raise InvalidInput(f"Unknown generation setting {excerpt(unknown[0])}; the settings are: "
                               f"{', '.join(self.names())}.", param=unknown[0])
        return dataclasses.replace(self, **overrides) if overrides else self

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any], base: Optional["GenerationConfig"] = None) -> "GenerationConfig":
        """Settings from plain values (JSON, form fields): numbers given as text are read, ``None`` keeps the base."""
        base = base or cls()
        coerced = {}
        for name, value in values.items():
            if value is None:
                continue
            if name in _FIELDS:
                value = _coerce(name, value)
            coerced[name] = value
        return base.replace(**coerced)

    # --- checking ---------------------------------------------------------------------

    def validate(self) -> "GenerationConfig":
        """Check every setting's type and range; an ``InvalidInput`` names the first one at fault."""
        for name in self.names():
            value = getattr(self, name)
            if value is None and _FIELDS[name].default is None:
                continue
            _check(name, value)
        if self.prompt_refresh > self.num_step:
            raise InvalidInput(f"prompt_refresh must be at most num_step ({self.num_step}), got {self.prompt_refresh}.",
                               param="prompt_refresh")
        return self


_FIELDS = {f.name: f for f in dataclasses.fields(GenerationConfig)}
_KINDS = {"num_step": int, "seed": int, "denoise": bool, "preprocess_prompt": bool, "postprocess": bool,
          "guidance_every": int, "sentence_streaming": bool, "normalize_text": bool, "prompt_refresh": int,
          "guard": bool, "guard_tries": int, "word_timestamps": bool}
_KINDS = {name: _KINDS.get(name, float) for name in _FIELDS}


def _check(name: str, value) -> None:
    kind = _KINDS[name]
    setting = GenerationConfig.setting(name)
    if kind is bool:
        if name == "normalize_text" and value == NORMALIZE_AUTO:
            return
        if not isinstance(value, bool):
            choices = "true, false or 'auto'" if name == "normalize_text" else "true or false"
            raise InvalidInput(f"{name} must be {choices}, got {excerpt(value)}.", param=name)
        return
    if isinstance(value, bool) or not _is_number(value):
        raise InvalidInput(f"{name} must be a number, got {excerpt(value)}.", param=name)
    if kind is int:
        if not _is_whole(value):
            raise InvalidInput(f"{name} must be a whole number, got {excerpt(value)}.", param=name)
        value = int(value)  # exact for ints of any size: 2**63-1 and 2**53+1 are checked as they are
    elif math.isnan(float(value)):
        raise InvalidInput(f"{name} must be a number, got NaN.", param=name)
    if not (setting.low <= value <= setting.high):
        raise InvalidInput(f"{name} must be between {_show(setting.low)} and {_show(setting.high)}, got {excerpt(value)}.",
                           param=name)


def _show(number: float) -> str:
    """A bound as a person reads it: whole numbers in full (2**63-1 too), others short."""
    return str(int(number)) if float(number).is_integer() else f"{number:g}"


def _is_number(value) -> bool:
    import numbers

    return isinstance(value, numbers.Real)


def _is_whole(value) -> bool:
    import numbers

    if isinstance(value, numbers.Integral):
        return True
    return math.isfinite(float(value)) and float(value) == int(value)


def _coerce(name: str, value):
    """Plain (JSON/form) value -> the field's type; anything unreadable is left for ``validate`` to name."""
    kind = _KINDS[name]
    if kind is bool:
        if name == "normalize_text" and isinstance(value, str) and value.strip().lower() == NORMALIZE_AUTO:
            return NORMALIZE_AUTO
        if isinstance(value, str) and value.strip().lower() in ("true", "1", "yes", "on", "false", "0", "no", "off"):
            return value.strip().lower() in ("true", "1", "yes", "on")
        return value
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return None if _FIELDS[name].default is None else _FIELDS[name].default
        try:
            number = int(text) if kind is int and text.lstrip("+-").isdigit() else float(text)
        except ValueError:
            raise InvalidInput(f"{name} must be a number, got {excerpt(value)}.", param=name) from None
        return number
    if kind is int and isinstance(value, float) and value.is_integer():
        return int(value)
    return value


# --- command line ---------------------------------------------------------------------------

def add_config_arguments(parser: argparse.ArgumentParser) -> None:
    """One flag per ``GenerationConfig`` field (``--num-step``, ``--no-denoise``, ...), defaults from the class."""
    from .presets import ALIASES, PRESETS

    group = parser.add_argument_group("generation settings (defaults are the reference's)")
    group.add_argument("--preset", choices=[*PRESETS, *ALIASES], default=None, type=str.lower,
                       help="a speed preset (default reference: 32 steps, exact; quality and hd are aliases of "
                            "reference; " + "; ".join(f"{name}: {values['num_step']} steps, prompt_refresh="
                                                       f"{values['prompt_refresh']}" for name, values in PRESETS.items()
                                                       if values["prompt_refresh"] > 1)
                            + "); the flags below override its values")
    for name in GenerationConfig.names():
        setting, kind = GenerationConfig.setting(name), GenerationConfig.kind(name)
        flags = ["--" + name.replace("_", "-"), *setting.flags]
        default = GenerationConfig.default(name)
        if kind is bool:
            group.add_argument(*flags, dest=name, action=_GivenBoolean, default=default, help=setting.help)
        else:
            shown = "" if default is None else f" (default {_show(default)})"
            range_text = f"; {_show(setting.low)}..{_show(setting.high)}"
            group.add_argument(*flags, dest=name, action=_GivenValue, type=_cli_number(name, kind), default=default,
                               help=setting.help + shown + range_text)


def config_from_arguments(args: argparse.Namespace) -> GenerationConfig:
    """The settings of the flags; with ``--preset``, the preset's values under the flags actually given."""
    values = {name: getattr(args, name) for name in GenerationConfig.names()}
    preset = getattr(args, "preset", None)
    if not preset:
        return GenerationConfig(**values).validate()
    from .presets import under_preset

    given = getattr(args, _GIVEN, set())
    return GenerationConfig().replace(**under_preset(preset, {n: v for n, v in values.items() if n in given})).validate()


_GIVEN = "_config_flags_given"


class _GivenValue(argparse.Action):
    """Stores the value and notes that the flag was given (so a preset does not override it)."""

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, values)
        _note_given(namespace, self.dest)


class _GivenBoolean(argparse.BooleanOptionalAction):
    def __call__(self, parser, namespace, values, option_string=None):
        super().__call__(parser, namespace, values, option_string)
        _note_given(namespace, self.dest)


def _note_given(namespace: argparse.Namespace, dest: str) -> None:
    if not hasattr(namespace, _GIVEN):
        setattr(namespace, _GIVEN, set())
    getattr(namespace, _GIVEN).add(dest)


def _cli_number(name: str, kind: type):
    def parse(text: str):
        try:
            return int(text) if kind is int else float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name} must be a{' whole' if kind is int else ''} number, "
                                             f"got {excerpt(text)}") from None
    parse.__name__ = kind.__name__
    return parse
