"""The Speak tab's "Text / SSML" switch and the line under it that checks the SSML as it is typed.

Thin over the engine's parser (``text/ssml.py``): the line shows its error (with the line and column) or
what the document holds and its notes; the generation reads the same document.
"""

from __future__ import annotations

import html

import gradio as gr

from ..text.ssml import parse
from ..errors import InvalidInput

MODES = ("Text", "SSML")


def ssml_check(text: str, mode: str, limits) -> str:
    """The line under the text box: empty for plain text; for SSML its error, or its segments, pauses and notes."""
    if mode != "SSML":
        return ""
    if not (text or "").strip():
        return "SSML: write the text inside `<speak>...</speak>`."
    try:
        document = parse(text, limits)
    except InvalidInput as exc:
        return f"⚠ {html.escape(str(exc))}"
    spoken = [s for s in document.segments if s.text]
    pauses = len(document.segments) - len(spoken)
    line = (f"✓ SSML: {len(spoken)} segment{'s' if len(spoken) != 1 else ''}, "
            f"{pauses} pause{'s' if pauses != 1 else ''}")
    return line + "".join(f"  \nNote: {html.escape(note)}" for note in document.notes)


def ssml_switch(prefix: str, text_box: gr.Textbox, limits) -> gr.Radio:
    """The switch (its value ``Text`` or ``SSML``) and the check line, re-drawn as the text or the switch changes."""
    mode = gr.Radio(list(MODES), value="Text", label="Text / SSML", elem_id=f"{prefix}-mode",
                    info="SSML: pauses, pace, voices by name and pronunciations in <speak> markup")
    check = gr.Markdown("", elem_id=f"{prefix}-ssml-check")
    for component in (text_box, mode):
        component.change(lambda text, chosen: ssml_check(text, chosen, limits), inputs=[text_box, mode],
                         outputs=check, queue=False, show_progress="hidden", api_visibility="private")
    return mode
