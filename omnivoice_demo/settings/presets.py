"""Speed presets: named sets of ``GenerationConfig`` values.

* ``reference``: the reference's own settings (32 steps, guidance on every step): exact.
* ``balanced``: 16 steps, which the model's README offers "for faster inference", and, for a cloned
  voice whose reference is at least ``MIN_KEPT_REFERENCE_SECONDS``, the conditional row's prompt (the
  instruct, the text and the reference) run whole on every 8th step only (steps 1 and 9), its keys and
  values kept in between (``prompt_refresh=8``); a voice design runs every forward whole.
* ``fast``: 8 steps with the unconditional (guidance) forward on every second
  step only (``guidance_every=2``), as other OmniVoice front ends ship for CPUs, and
  ``prompt_refresh=4`` (the row whole on steps 1 and 5; again only for a clone of such a reference).

The MLX port of OmniVoice refreshes the kept prompt every few steps, with CER, speaker similarity
and UTMOS unchanged on the real weights.  Each preset's ``k`` is the smallest that met its speed target
on the full-size folder (``benchmarks/clone_speed.py``; the figures: BENCHMARKS.md, "Cloning with the
reference kept between steps"); what each k moves on the planted-outlier random weights, per step:
docs/speed.md ("Cloning: the reference kept between steps", ``benchmarks/prompt_refresh_fidelity.py``).
It pays most when cloning (the reference is most of a step's positions), and the Reference preset keeps
the exact loop.

A preset only sets the fields listed here; every other setting keeps its value,
and any field given explicitly (CLI flag, advanced control) overrides the preset.
What is published about their quality is in the preset table of docs/speed.md: nothing
in this repository can judge it, because the tests run random-weight models.
"""

from __future__ import annotations

import contextlib
from types import MappingProxyType
from typing import Any, Mapping

from ..errors import InvalidInput, excerpt

#: preset name -> the GenerationConfig values it sets
PRESETS = MappingProxyType({
    "reference": MappingProxyType({"num_step": 32, "guidance_every": 1, "prompt_refresh": 1}),
    "balanced": MappingProxyType({"num_step": 16, "guidance_every": 1, "prompt_refresh": 8}),
    "fast": MappingProxyType({"num_step": 8, "guidance_every": 2, "prompt_refresh": 4}),
})

#: what a person reads beside each preset
DESCRIPTIONS = MappingProxyType({
    "reference": "Reference: 32 steps, guidance every step (the model's defaults; exact)",
    "balanced": "Balanced: 16 steps (the model's README: 'or 16 for faster inference'); a cloned voice's prompt "
                "and reference (4 s or longer) run whole every 8th step (prompt_refresh=8), a design every step",
    "fast": "Fast: 8 steps, guidance every 2nd step, a cloned voice's prompt and reference (4 s or longer) whole "
            "every 4th step (about 5x faster; quality not published)",
})

DEFAULT_PRESET = "reference"

#: the default of the front end a voice assistant speaks through (Wyoming: Home Assistant sends no preset, so the
#: server's decides): the fastest preset, with Reference one flag away (``--preset reference``).  Random weights
#: cannot judge its quality: ``omnivoice eval`` on the real weights does (docs/quality.md, docs/home-assistant.md)
VOICE_ASSISTANT_PRESET = "fast"

#: ``quick_start`` where the first audio is what a listener waits for (Wyoming, the HTTP API's streams): a first
#: chunk of about this many seconds of speech, a clause or a few words (engine/streaming.py; the figures:
#: BENCHMARKS.md, "First audio for a voice assistant")
QUICK_START_SECONDS = 1.2

#: other names of presets, as other TTS APIs call them (OpenAI's ``tts-1-hd``, "quality"): accepted everywhere
ALIASES = MappingProxyType({"quality": "reference", "hd": "reference"})


def canonical_preset(name: str) -> str:
    """The preset ``name`` means (case-insensitive; an alias gives its preset); an unknown name lists the known."""
    if not isinstance(name, str):
        raise InvalidInput(f"preset must be the name of a preset (text), not a {type(name).__name__}; the presets "
                           f"are: {', '.join(PRESETS)}.", param="preset")
    key = name.strip().lower()
    key = ALIASES.get(key, key)
    if key not in PRESETS:
        aliases = ", ".join(f"{alias} = {target}" for alias, target in ALIASES.items())
        raise InvalidInput(f"Unknown preset {excerpt(name)}; the presets are: {', '.join(PRESETS)} ({aliases}).",
                           param="preset")
    return key


def preset_values(name: str) -> dict:
    """The settings of preset ``name`` (or an alias's)."""
    return dict(PRESETS[canonical_preset(name)])


def under_preset(name: str, given: Mapping[str, Any]) -> dict:
    """Preset ``name``'s settings under the ones ``given``.  The preset's ``prompt_refresh`` is kept within the
    steps given (``--preset fast --num-step 2`` refreshes every 2nd step, not an error); a ``prompt_refresh``
    given with the steps is checked as it is."""
    values = dict(preset_values(name), **given)
    if "num_step" in given and "prompt_refresh" not in given:
        with contextlib.suppress(TypeError, ValueError):  # a num_step that is no number: its own check names it
            values["prompt_refresh"] = max(1, min(int(values["prompt_refresh"]), int(values["num_step"])))
    return values


#: the shortest cloned reference whose keys and values ``prompt_refresh`` keeps between whole forwards: below it
#: (and for every voice design, whose prompt is only the instruct and the text) each forward runs whole, at every
#: preset.  Chosen where a step on the kept prompt costs at most about half a whole one, while a design's kept
#: prompt saves little and moves its tokens further than a long clone's (benchmarks/refresh_threshold.py; the
#: figures: BENCHMARKS.md, "Prompt reuse: where it pays"; what it moves: docs/speed.md)
MIN_KEPT_REFERENCE_SECONDS = 4.0


def prompt_refresh_for(config, reference_frames: int | None) -> int:
    """The ``prompt_refresh`` a generation runs with: the config's for a cloned reference of at least
    ``MIN_KEPT_REFERENCE_SECONDS`` (``reference_frames``: the voice's frames, None for a design), else 1 (every
    forward whole, the reference's loop).  The loop and its time estimate both ask here."""
    from ..constants import FRAME_RATE

    if reference_frames is None or reference_frames < MIN_KEPT_REFERENCE_SECONDS * FRAME_RATE:
        return 1
    return config.prompt_refresh


def matching_preset(config) -> str | None:
    """The name of the preset whose values ``config`` has, or None (the advanced controls changed them)."""
    for name, values in PRESETS.items():
        if all(getattr(config, field) == value for field, value in values.items()):
            return name
    return None
