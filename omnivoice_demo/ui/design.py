"""Voice design in the app: the category dropdowns and the free-text description, joined and read as you type."""

from __future__ import annotations

import html
from typing import Optional

import gradio as gr

from ..text.voice_design import has_chinese, instruct_categories, resolve_instruct
from ..studio.variants import read_voice_description

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


def check_instruct(values: dict, text: str = "", voice=None) -> str:
    """Markdown: what the model will be told, the saved ``voice``'s style clip a word picks (``studio.variants``),
    and the words of the description it ignores and why (or why the description cannot be read)."""
    try:
        _, description = read_voice_description(voice, compose_instruct(values))
        resolved = resolve_instruct(description.instruct, use_zh=has_chinese(text))
    except ValueError as exc:
        first = str(exc).split("\n\n")[0]
        return "⚠ " + html.escape(first).replace("\n", "<br>")
    if description.text is None:
        return "Voice design: *none* (the model picks a voice)."
    shown = f"Voice design: `{resolved}`" if resolved else "Voice design: *no item understood* (the model picks a voice)."
    style = [f"Style: **{html.escape(description.style)}** (the saved voice's own clip)"] if description.style else []
    return "<br>".join([shown] + style + ["Ignored: " + html.escape(line, quote=False) for line in description.why])


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
        widgets["instruct"] = gr.Textbox(label="Describe the voice", elem_id=f"{prefix}-instruct",
                                         placeholder="e.g. a deep, calm British man · 温柔的年轻女声 · female, low pitch",
                                         info="Your own words or the items above; what cannot be applied is shown "
                                              "below and ignored.")
        widgets["instruct_check"] = gr.Markdown("Voice design: *none* (the model picks a voice).",
                                                elem_id=f"{prefix}-instruct-check")
    return widgets
