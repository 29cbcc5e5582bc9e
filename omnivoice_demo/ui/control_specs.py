"""How the app shows each generation setting: its label, its slider's range and step, and where it sits.

``GenerationConfig`` (settings/generation.py) is the engine's plain options dataclass: each field's default, valid
range and help.  What a widget needs beyond that is the app's own description, here: ``CONTROLS`` gives a field
its label, a slider range narrower than the valid one where the useful values are few (``low``/``high``; the
valid range otherwise), its step, and ``advanced=False`` for the settings in the main column (every other field
is under "Advanced").  A field missing here still gets a widget, labelled by its name (``control``).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Optional

from ..settings.generation import GenerationConfig


@dataclasses.dataclass(frozen=True)
class Control:
    """One setting's widget: label, slider range and step (None: from the setting's valid range), placement."""

    label: str
    low: Optional[float] = None
    high: Optional[float] = None
    step: Optional[float] = None
    advanced: bool = True


CONTROLS: dict[str, Control] = {
    "num_step": Control("Steps", low=1, high=64, step=1),
    "guidance_scale": Control("Guidance scale", high=5.0, step=0.1),
    "t_shift": Control("Schedule shift", low=0.01, high=1.0, step=0.01),
    "layer_penalty_factor": Control("Layer penalty", high=20.0, step=0.5),
    "position_temperature": Control("Position temperature", high=20.0, step=0.5),
    "class_temperature": Control("Class temperature", high=2.0, step=0.05),
    "denoise": Control("Denoise"),
    "preprocess_prompt": Control("Preprocess reference"),
    "postprocess": Control("Post-process (trim silence, loudness)"),
    "pad_duration": Control("Padding (s)", step=0.05),
    "fade_duration": Control("Fade (s)", step=0.05),
    "speed": Control("Speed", step=0.05, advanced=False),
    "duration": Control("Duration (s, 0 = automatic)", advanced=False),
    "chunk_duration": Control("Chunk length (s)"),
    "chunk_threshold": Control("Chunking threshold (s)"),
    "normalize_text": Control("Read numbers as words", advanced=False),
    "seed": Control("Seed", advanced=False),
    "guidance_every": Control("Guidance every k steps", high=4, step=1),
    "sentence_streaming": Control("Sentence streaming"),
    "prompt_refresh": Control("Prompt refresh every k steps", high=8, step=1),
    "guard": Control("Check each sentence", advanced=False),
    "guard_cer": Control("Check: error threshold", step=0.05),
    "guard_tries": Control("Check: takes per chunk", step=1),
    "word_timestamps": Control("Word timings (read-along)"),
    "loudness": Control("Loudness of the result and downloads", advanced=False),
    "quick_start": Control("Quick start (s)", high=3.0, step=0.1),
}


def control(name: str) -> Control:
    """The widget of ``GenerationConfig`` field ``name`` (labelled by its name where ``CONTROLS`` has none)."""
    return CONTROLS.get(name, Control(name))


def slider_range(name: str) -> tuple[float, float, float]:
    """(low, high, step) of the field's slider: the control's range within the setting's valid one, and its step
    (else 1 for whole numbers, about a hundredth of the range for others)."""
    setting, shown = GenerationConfig.setting(name), control(name)
    low = shown.low if shown.low is not None else setting.low
    high = shown.high if shown.high is not None else setting.high
    step = shown.step or (1 if GenerationConfig.kind(name) is int else 10.0 ** math.floor(math.log10((high - low) / 100)))
    return low, high, step
