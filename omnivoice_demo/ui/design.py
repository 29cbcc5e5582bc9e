"""Voice design in the app: the category dropdowns and the free-text instruct, joined and checked as you type."""

from __future__ import annotations

import html
from typing import Optional

import gradio as gr

from ..engine.voice_design import has_chinese, instruct_categories, resolve_instruct

AUTO = "Auto"
DESIGN_CATEGORIES = ("gender", "age", "pitch", "style", "accent", "dialect")
_LABELS = {"accent": "English accent", "dialect": "Chinese dialect"}


def compose_instruct(values: dict) -> Optional[str]:
    """The dropdown choices and the free-text box joined into one instruct string (None when empty)."""
    items = [str(values.get(c) or "").strip() for c in DESIGN_CATEGORIES]
    items = [i for i in items if i and i != AUTO]
    free = str(values.get("instruct") or "").strip()
    if free:
        items.append(free)
    if not items:
        return None
    joiner = "，" if any(has_chinese(i) for i in items) else ", "
    return joiner.join(items)


def check_instruct(values: dict, text: str = "") -> str:
    """Markdown: what the model will be told, or why the instruct is not accepted (with suggestions)."""
    instruct = compose_instruct(values)
    if instruct is None:
        return "Voice design: *none* (the model picks a voice)."
    try:
        resolved = resolve_instruct(instruct, use_zh=has_chinese(text))
    except ValueError as exc:
        first = str(exc).split("\n\n")[0]
        return "⚠ " + html.escape(first).replace("\n", "<br>")
    return f"Voice design: `{resolved}`"


def design_choices() -> dict[str, list[str]]:
    return {name: [AUTO] + items for name, items in instruct_categories().items()}


def design_widgets(prefix: str, open_: bool) -> dict:
    """The "Voice design" accordion: a dropdown per category, the free text, the live check (name -> component)."""
    widgets: dict = {}
    choices = design_choices()
    with gr.Accordion("Voice design", open=open_, elem_id=f"{prefix}-design"):
        for row in (DESIGN_CATEGORIES[:3], DESIGN_CATEGORIES[3:]):
            with gr.Row():
                for name in row:
                    widgets[name] = gr.Dropdown(choices[name], value=AUTO, min_width=120,
                                                label=_LABELS.get(name, name.capitalize()),
                                                elem_id=f"{prefix}-{name}")
        widgets["instruct"] = gr.Textbox(label="Instruct (free text)", elem_id=f"{prefix}-instruct",
                                         placeholder="e.g. female, low pitch, british accent",
                                         info="Comma-separated items; checked as you type.")
        widgets["instruct_check"] = gr.Markdown("Voice design: *none* (the model picks a voice).",
                                                elem_id=f"{prefix}-instruct-check")
    return widgets
