"""The app's speed controls as plain functions: presets, estimates per preset, time left, streaming default.

No Gradio here: the tab modules build the widgets and call these.
"""

from __future__ import annotations

from typing import Optional

from ..settings.generation import NORMALIZE_AUTO, GenerationConfig
from ..settings.presets import DEFAULT_PRESET, DESCRIPTIONS, PRESETS, matching_preset
from ..text.sentences import sentence_texts

CUSTOM = "custom"

#: the app's starting values where they differ from GenerationConfig's (the engine, CLI and API keep the
#: reference's): streaming is on, and only splits texts of more than one sentence; numbers are read as words
#: where the text's language (chosen, or else detected) is English or Chinese (text/normalize_choice.py)
APP_DEFAULTS = {"sentence_streaming": True, "normalize_text": NORMALIZE_AUTO}

#: Ctrl+Enter (Cmd+Enter) in a tab's text box presses its Go button (``<prefix>-text`` -> ``<prefix>-go``)
SHORTCUT_JS = """
if (!window.__ovKeys) {
  window.__ovKeys = true;
  document.addEventListener("keydown", (event) => {
    if (event.key !== "Enter" || !(event.ctrlKey || event.metaKey)) return;
    const box = event.target.closest && event.target.closest("[id$='-text']");
    if (!box) return;
    const go = document.getElementById(box.id.replace(/-text$/, "-go"));
    if (go) { event.preventDefault(); go.click(); }
  });
}
"""

#: Stop: silence the chunk player and drop its queue (the chunk player keeps them on window.__ovChunks)
STOP_PLAYBACK_JS = """() => {
  const ov = window.__ovChunks;
  if (ov) { ov.queue = []; if (ov.playing) { ov.playing.audio.pause(); ov.playing = null; } }
  document.querySelectorAll("audio").forEach((a) => a.pause());
}"""


def preset_choices() -> list[tuple[str, str]]:
    """(label, value) pairs for the preset selector (the last: the advanced controls' own values)."""
    return [(DESCRIPTIONS[name].split(":")[0], name) for name in PRESETS] + [("Custom", CUSTOM)]


def preset_controls(name: str) -> dict:
    """The advanced controls' values for preset ``name`` (the selector sets them; they can then be changed)."""
    if name not in PRESETS:
        return {}
    return dict(PRESETS[name])


def preset_of(values: dict) -> str:
    """The preset the advanced controls match, or ``custom`` when they were changed."""
    config = GenerationConfig().replace(**{name: int(values.get(name) or GenerationConfig.default(name))
                                           for name in preset_controls(DEFAULT_PRESET)})
    return matching_preset(config) or CUSTOM


def more_than_one_sentence(text: str) -> bool:
    """Whether sentence streaming helps: the text has more than one sentence (``text.sentences``)."""
    return len(sentence_texts(text or "")) > 1


def fmt_seconds(seconds: Optional[float]) -> str:
    if seconds is None:
        return "?"
    if seconds < 60:
        return f"{seconds:.0f} s" if seconds >= 10 else f"{seconds:.1f} s"
    return f"{int(seconds // 60)} min {int(seconds % 60):02d} s"


def preset_estimates(engine, text: str, voice=None, **arguments) -> str:
    """One line: each preset's estimated time for ``text`` on this machine (the other settings as given),
    and with sentence streaming, when the first audio comes with the current settings."""
    if not (text or "").strip():
        return ""
    try:
        plans = {name: engine.prepare(text, voice=voice, **arguments, **PRESETS[name]) for name in PRESETS}
        current = engine.prepare(text, voice=voice, **arguments)
    except ValueError:
        return ""
    parts = [f"{DESCRIPTIONS[name].split(':')[0]} ≈ {fmt_seconds(engine.estimate_seconds(plan))}"
             for name, plan in plans.items()]
    first = ""
    estimate = engine.estimate(current)
    if estimate is not None and len(current.chunks) > 1:
        first = f" · first audio after ≈ {fmt_seconds(estimate.marks[(0, current.num_steps + 1)])}"
    return "Estimated on this machine: " + " · ".join(parts) + first


def time_left(estimate, chunk: int, steps_done: int, elapsed: float) -> str:
    """'about N s left' during a run (the estimate scaled by the run's pace so far)."""
    if estimate is None:
        return ""
    return f"about {fmt_seconds(estimate.seconds_left(chunk, steps_done, elapsed))} left"


__all__ = ["APP_DEFAULTS", "CUSTOM", "DEFAULT_PRESET", "SHORTCUT_JS", "STOP_PLAYBACK_JS", "fmt_seconds", "more_than_one_sentence", "preset_choices",
           "preset_controls", "preset_estimates", "preset_of", "time_left"]
