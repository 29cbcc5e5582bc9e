"""The Speak tab's Script mode: the text read as a dialogue script, with a name -> voice table.

With the mode on, each ``Name: text`` (or ``[Name] text``) line of the text box is a turn, in the voice
the table gives its name (a saved voice, a design such as ``female, low pitch``, or an OpenAI voice
name such as ``alloy``); a name the table leaves empty is read as a voice itself.  The turns are one
output (``text.script``, ``engine.prepare_turns``), with the progress, player and downloads of any
Speak generation.
"""

from __future__ import annotations

import dataclasses

import gradio as gr

from ..errors import InvalidInput
from ..text.script import MAX_SPEAKERS, script_names
from .error_mapping import ui_errors

HEADERS = ["Name", "Voice"]
EXAMPLE = "Anna: Did you hear the news?\nBen: No, tell me.\nAnna: The bass player left the band."


@dataclasses.dataclass
class ScriptMode:
    on: gr.Checkbox
    table: gr.Dataframe

    def inputs(self) -> list:
        return [self.on, self.table]

    def speakers(self, data: dict) -> dict[str, str]:
        """The table's names with a voice (an empty voice: the name is read as one)."""
        return speakers_of(data[self.table])


def speakers_of(table) -> dict[str, str]:
    values = table.values.tolist() if hasattr(table, "values") else list(table or [])
    found = {}
    for row in values:
        name, voice = (_cell(row[0]), _cell(row[1])) if len(row) >= 2 else ("", "")
        if name and voice:
            found[name] = voice
    if len(found) > MAX_SPEAKERS:
        raise InvalidInput(f"The voice table has {len(found)} names; at most {MAX_SPEAKERS}.", param="speakers")
    return found


def _cell(value) -> str:
    """A table cell as text: an empty one (None, or pandas' NaN) is ""."""
    return "" if value is None or value != value else str(value).strip()


def build(text_box: gr.Textbox) -> ScriptMode:
    """The mode's accordion (inside the Speak tab) for the tab's ``text_box``."""
    with gr.Accordion("Script (several speakers)", open=False, elem_id="speak-script"):
        on = gr.Checkbox(label="Read the text as a script: 'Name: text' lines, each name a voice", value=False,
                         elem_id="speak-script-on")
        gr.Markdown("Give each name a saved voice, a design (`female, low pitch`) or an OpenAI voice name "
                    "(`alloy`); an empty voice reads the name itself as one. Example:\n\n"
                    "```\n" + EXAMPLE + "\n```")
        table = gr.Dataframe(headers=HEADERS, value=[["", ""]], column_count=2, interactive=True,
                             elem_id="speak-script-speakers", label="Voices of the names")
        names = gr.Button("Take the names from the text", size="sm", elem_id="speak-script-names")
    mode = ScriptMode(on, table)

    @ui_errors
    def fill(text, current):
        known = speakers_of(current)
        return [[name, known.get(name, "")] for name in script_names(text or "")]

    names.click(fill, inputs=[text_box, table], outputs=table, queue=False, api_visibility="private")
    return mode
