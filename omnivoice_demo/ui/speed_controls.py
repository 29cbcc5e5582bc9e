"""The app's speed controls as plain functions: presets, estimates per preset, time left, streaming default.

No Gradio here: the tab modules build the widgets and call these.
"""

from __future__ import annotations

from typing import Optional

from ..config import GenerationConfig
from ..presets import DEFAULT_PRESET, DESCRIPTIONS, PRESETS, matching_preset
from ..streaming import clauses, ends_sentence

CUSTOM = "custom"


def preset_choices() -> list[tuple[str, str]]:
    """(label, value) pairs for the preset selector."""
    return [(DESCRIPTIONS[name].split(":")[0], name) for name in PRESETS]


def preset_controls(name: str) -> dict:
    """The advanced controls' values for preset ``name`` (the selector sets them; they can then be changed)."""
    if name not in PRESETS:
        return {}
    return dict(PRESETS[name])


def preset_of(values: dict) -> str:
    """The preset the advanced controls match, or ``custom`` when they were changed."""
    config = GenerationConfig().replace(num_step=int(values.get("num_step") or 32),
                                        guidance_every=int(values.get("guidance_every") or 1))
    return matching_preset(config) or CUSTOM


def more_than_one_sentence(text: str) -> bool:
    """Whether sentence streaming helps: the text has a sentence end before its last clause."""
    pieces = clauses(text or "")
    return any(ends_sentence(piece) for piece in pieces[:-1])


def fmt_seconds(seconds: Optional[float]) -> str:
    if seconds is None:
        return "?"
    if seconds < 60:
        return f"{seconds:.0f} s" if seconds >= 10 else f"{seconds:.1f} s"
    return f"{int(seconds // 60)} min {int(seconds % 60):02d} s"


def preset_estimates(engine, text: str, voice=None, **kwargs) -> str:
    """One line: each preset's estimated time for ``text`` on this machine (the other settings as given)."""
    if not (text or "").strip():
        return ""
    parts = []
    for name in PRESETS:
        try:
            plan = engine.prepare(text, voice=voice, **{**kwargs, **PRESETS[name]})
        except ValueError:
            return ""
        parts.append(f"{DESCRIPTIONS[name].split(':')[0]} ≈ {fmt_seconds(engine.estimate_seconds(plan))}")
    first = ""
    if kwargs.get("sentence_streaming"):
        plan = engine.prepare(text, voice=voice, **kwargs)
        estimate = engine.estimate(plan)
        if estimate is not None and len(plan.chunks) > 1:
            first = f" · first audio after ≈ {fmt_seconds(estimate.marks[(0, plan.num_steps + 1)])}"
    return "Estimated on this machine: " + " · ".join(parts) + first


def time_left(estimate, chunk: int, steps_done: int, elapsed: float) -> str:
    """'about N s left' during a run (the estimate scaled by the run's pace so far)."""
    if estimate is None:
        return ""
    return f"about {fmt_seconds(estimate.seconds_left(chunk, steps_done, elapsed))} left"


__all__ = ["CUSTOM", "DEFAULT_PRESET", "fmt_seconds", "more_than_one_sentence", "preset_choices",
           "preset_controls", "preset_estimates", "preset_of", "time_left"]
