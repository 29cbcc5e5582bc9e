"""The parts Speak and Clone share on the page: the text box with its tag buttons, the output panel, and the
events of one generation (live text info, instruct check, Go, Stop)."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Callable, Iterable, Iterator, Optional

import gradio as gr

from .gradio_api import generation_concurrency
from ..errors import InvalidInput
from ..text.prompt import NONVERBAL_TAGS
from ..storage.voice_file import Voice
from .assets import chunk_player_js, read_along_js
from .controls import value_inputs, values_of
from .design import DESIGN_CATEGORIES, check_instruct
from .display import CHECK_HEADERS, HISTORY_HEADERS, failed_progress, idle_progress, stopped_progress
from .generation import text_info
from .owners import owner_of
from .sentences import sentences_component, with_sentences
from .speed_controls import SHORTCUT_JS, STOP_PLAYBACK_JS
from ..studio import Studio, session_of

if TYPE_CHECKING:
    from .lexicon_editor import LexiconEditor
    from .script_mode import ScriptMode

#: generations share one concurrency group: a CPU model is not sped up by running two at once
ENGINE_GROUP = "engine"


def _insert_tag_js(elem_id: str, tag: str) -> str:
    """JS that inserts ``[tag]`` at the text box's caret (a textarea keeps it after losing focus), or at the
    end when the caret was never placed, with a space on each side where a word touches it."""
    return f"""(value) => {{
        const box = document.querySelector('#{elem_id} textarea');
        const text = value || '';
        const tag = '[{tag}]';
        const at = box ? box.selectionStart : null;
        const cut = (at === null || at === undefined || at === 0 || at > text.length) ? text.length : at;
        const before = text.slice(0, cut), after = text.slice(cut);
        // a tag is a word of its own: "funny [laughter]", not "funny[laughter]"
        return before + (before && !/\s$/.test(before) ? ' ' : '') + tag +
               (after && !/^\s/.test(after) ? ' ' : '') + after;
    }}"""


def text_block(prefix: str, label: str, placeholder: str = "Type what to say…") -> dict:
    """The text box, its info line and a button per non-verbal tag."""
    first = ["ov-first"]   # on a phone, the text comes first (studio.css)
    parts = {"text": gr.Textbox(label=label, lines=4, max_lines=12, placeholder=placeholder, elem_id=f"{prefix}-text",
                                elem_classes=first),
             "text_info": gr.Markdown("0 characters", elem_id=f"{prefix}-text-info", elem_classes=first),
             "shortcuts": gr.HTML("", js_on_load=SHORTCUT_JS, elem_id=f"{prefix}-shortcuts",  # Ctrl+Enter = Go
                                  elem_classes=first)}
    with gr.Row(elem_classes=["ov-tags", "ov-first"]):
        for tag in NONVERBAL_TAGS:
            button = gr.Button(f"[{tag}]", size="sm", variant="secondary", min_width=0)
            button.click(None, inputs=parts["text"], outputs=parts["text"],
                         js=_insert_tag_js(f"{prefix}-text", tag), api_visibility="private")
    return parts


def go_stop_buttons(prefix: str, label: str) -> tuple[gr.Button, gr.Button]:
    with gr.Row():
        go = gr.Button(label, variant="primary", elem_id=f"{prefix}-go", scale=3)
        stop = gr.Button("Stop", variant="stop", elem_id=f"{prefix}-stop", scale=1)
    return go, stop


def output_panel(prefix: str) -> dict:
    """Progress, the live code grid, the chunk player, the audio, its words (read-along), the downloads, the info
    line."""
    return {
        "progress": gr.HTML(idle_progress(), elem_id=f"{prefix}-progress"),
        "grid": gr.Image(label="Code grid (8 codebooks × frames): dark = undecided, white = decided this step",
                         type="pil", format="png", interactive=False, elem_id=f"{prefix}-grid", height=150,
                         buttons=["download"]),
        "chunks": gr.HTML("", elem_id=f"{prefix}-chunks", js_on_load=chunk_player_js()),
        "audio": gr.Audio(label="Result", type="filepath", interactive=False, elem_id=f"{prefix}-audio",
                          buttons=["download"]),
        # with "Word timings" (Advanced): the text's words under the player, the one being heard highlighted
        "words": gr.HTML("", elem_id=f"{prefix}-words", js_on_load=read_along_js()),
        # with "Check each sentence": each chunk's CER, its takes and the kept one
        "checks": gr.Dataframe(headers=CHECK_HEADERS, interactive=False, visible=False, label="Sentence check",
                               elem_id=f"{prefix}-checks"),
        # each sentence with its player, Again and Restore (sentences.py); the session's result behind them
        "sentences": sentences_component(prefix),
        "takes": gr.State(None),
        "files": gr.File(label="Downloads: WAV, FLAC, codes (.npz); with Word timings, word subtitles (.words.srt, "
                               "karaoke .words.vtt)", file_count="multiple", interactive=False,
                         elem_id=f"{prefix}-files"),
        "info": gr.Markdown("", elem_id=f"{prefix}-info"),
    }


class SessionHistory:
    """The session's finished generations (a State) and the table that lists them.

    Made before the tabs (their events write to it), placed on the page after them (``render``)."""

    def __init__(self):
        self.state = gr.State([])
        self.table = gr.Dataframe(headers=HISTORY_HEADERS, interactive=False, elem_id="history", render=False)
        self.player = gr.Audio(type="filepath", label="Play from the history (click a row)", interactive=False,
                               render=False)

    def render(self) -> None:
        with gr.Accordion("History of this session", open=False):
            self.table.render()
            self.player.render()

        def play(history, evt: gr.SelectData):
            rows = list(reversed(history or []))
            index = evt.index[0] if isinstance(evt.index, (list, tuple)) else evt.index
            return rows[index]["wav"] if 0 <= index < len(rows) else None

        self.table.select(play, inputs=self.state, outputs=self.player, api_visibility="private")


def failed_outputs() -> dict:
    """What the output panel shows after a failed run: no progress, audio, files or info of an earlier run."""
    return {"progress": failed_progress(), "grid": None, "chunks": "", "audio": None, "files": None, "info": "",
            "words": "", "checks": gr.update(value=[], visible=False), "sentences": "", "takes": None}


@dataclasses.dataclass
class GenerationPanel:
    """One tab's generation widgets: ``text`` (text_block), ``controls``, ``outputs`` (output_panel), Go and Stop."""

    prefix: str
    text: dict
    controls: dict
    outputs: dict
    go: gr.Button
    stop: gr.Button
    lexicon: Optional[LexiconEditor] = None   # Speak's pronunciation editor, set after the layout
    script: Optional[ScriptMode] = None       # Speak's dialogue-script mode


#: Go: the toasts of an earlier run (an error such as "consent is needed") are closed, so they do not stand over
#: this one; on a narrow screen (studio.css's one column) the panel's progress is scrolled to the top of the screen,
#: and kept in sight while the page above it still changes (the text's live info, answered after the tap by a busy
#: server, grows above the progress and pushes it and the result off the screen; Safari, the iPhone's browser, has
#: no CSS scroll anchoring to hold them), until the visitor scrolls, taps or types, or for a minute
ON_GO_JS = """() => {
  document.querySelectorAll('[data-testid="toast-close"]').forEach((button) => button.click());
  const progress = document.getElementById("%s-progress");
  if (!progress || window.innerWidth > 640) return;
  progress.scrollIntoView({block: "start"});
  const keep = () => {
    const r = progress.getBoundingClientRect();
    if (r.top < -1 || r.bottom > window.innerHeight + 1) progress.scrollIntoView({block: "start"});
  };
  const resized = new ResizeObserver(keep);
  resized.observe(document.querySelector(".gradio-container") || document.body);  // the page's height (not body's)
  const stop = () => {
    resized.disconnect();
    ["wheel", "touchstart", "pointerdown", "keydown"].forEach((kind) => window.removeEventListener(kind, stop));
  };
  ["wheel", "touchstart", "pointerdown", "keydown"].forEach((kind) => window.addEventListener(kind, stop, {passive: true}));
  setTimeout(stop, 60000);
}"""

#: run(text, values, history, data, session, owner) -> the handler's updates (output name -> value); ``owner``: the
#: visitor the output files are for (``owners.owner_of``)
Run = Callable[[str, dict, list, dict, Optional[str], Optional[str]], Iterator[dict]]


def wire_generation(studio: Studio, panel: GenerationPanel, history: SessionHistory, run: Run,
                    extra_inputs: Iterable = (),
                    voice_of: Optional[Callable[[dict, Optional[str], dict], Optional[Voice]]] = None,
                    info_inputs: Iterable = (), ssml_of: Optional[Callable[[dict], bool]] = None,
                    pronunciations_of: Optional[Callable[[dict], object]] = None):
    """Live text info and instruct check, Go (``run``) and Stop (cancels Go's event) of one panel.

    ``voice_of(values, session, data)`` is the voice the text info estimates with; ``info_inputs`` are the
    further components it reads (``data``) and that redraw the info when they change; ``ssml_of(data)``: whether
    the text is SSML (then the info is its length only); ``pronunciations_of(data)``: the lexicon Go speaks with,
    which the info's "What will be read" shows applied."""
    text_box, controls = panel.text["text"], panel.controls
    names = dict(panel.outputs, seed=controls["seed"], history=history.state, history_table=history.table)
    info_extra = list(info_inputs)
    info_inputs = value_inputs(controls) | {text_box} | set(info_extra)

    def voice_now(values: dict, data, request) -> Optional[Voice]:
        try:
            return voice_of(values, session_of(request), data) if voice_of is not None else None
        except InvalidInput:
            return None

    def info(data, request: gr.Request):
        values = values_of(controls, data)
        if pronunciations_of is not None:
            values = dict(values, pronunciations=pronunciations_of(data))
        return text_info(studio, data[text_box], values, voice_now(values, data, request),
                         ssml=bool(ssml_of and ssml_of(data)))

    watched = [text_box, controls["language"], controls["speed"], controls["duration"], controls["num_step"],
               controls["guidance_every"], controls["prompt_refresh"], controls["sentence_streaming"],
               controls["normalize_text"]]
    for comp in watched + ([controls["voice"]] if "voice" in controls else []) + info_extra:
        comp.change(info, inputs=info_inputs, outputs=panel.text["text_info"], queue=False, show_progress="hidden",
                    api_visibility="private")
    def design_note(data, request: gr.Request):
        values = values_of(controls, data)   # with the saved voice: a word that is one of its style tags
        return check_instruct(values, data[text_box], voice_now(values, data, request))

    design = [controls[n] for n in DESIGN_CATEGORIES + ("instruct",)]
    for comp in design + ([controls["voice"]] if "voice" in controls else []):
        comp.change(design_note, inputs=info_inputs, outputs=controls["instruct_check"], queue=False,
                    show_progress="hidden", api_visibility="private")

    def generate(data, request: gr.Request):
        values = values_of(controls, data)
        try:
            for update in run(data[text_box], values, data[history.state], data, session_of(request),
                              owner_of(request)):
                update = with_sentences(update)
                if "autoplay" in update and "audio" in update:  # the result player starts by itself, or not
                    update = dict(update, audio=gr.update(value=update["audio"], autoplay=update["autoplay"]))
                yield {names[name]: value for name, value in update.items() if name in names}
        except gr.Error:
            # a failed run does not leave the previous run's "Done" and audio on screen
            yield {names[name]: value for name, value in failed_outputs().items() if name in names}
            raise

    event = panel.go.click(generate, inputs=info_inputs | set(extra_inputs) | {history.state},
                           outputs=list(names.values()), **generation_concurrency(studio),
                           show_progress="minimal", show_progress_on=[panel.outputs["info"]], api_visibility="private")
    event.then(info, inputs=info_inputs, outputs=panel.text["text_info"], show_progress="hidden",
               api_visibility="private", queue=False)
    # the last run's toasts closed; on a phone, the progress brought into sight
    panel.go.click(None, js=ON_GO_JS % panel.prefix, api_visibility="private", queue=False)
    # cancel first (Gradio closes the handler's generator, which closes the engine's within a step), then say so
    # once the cancelled run can send nothing more
    panel.stop.click(None, js=STOP_PLAYBACK_JS, cancels=[event], api_visibility="private", queue=False).then(
        stopped_progress, inputs=panel.outputs["progress"], outputs=panel.outputs["progress"],
        api_visibility="private", queue=False,
        show_progress="hidden")
