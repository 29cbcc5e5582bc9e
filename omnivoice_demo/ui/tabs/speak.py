"""The Speak tab and /speak: text (with voice design, or a saved voice) -> speech, with live progress."""

from __future__ import annotations

import asyncio
import inspect
from typing import Iterator, Optional

import gradio as gr

from ..gradio_api import api_errors, describe, generation_concurrency, result_outputs, run_job
from ...storage.voice_file import Voice
from ..assets import examples
from ..controls import NO_VOICE, api_function, api_setting_inputs, generation_controls
from ..error_mapping import ui_errors
from ..generation import run_generation
from ..generation_panel import (GenerationPanel, SessionHistory, go_stop_buttons, output_panel, text_block,
                                wire_generation)
from ...studio import Studio, session_of
from ...studio.vocabulary import resolve_voice
from ..design import compose_instruct
from .. import lexicon_editor, script_mode
from ..sentences import wire_sentences
from ..ssml_switch import ssml_switch
from ...text.lexicon import Lexicon, from_mapping
from ...errors import InvalidInput
from ...text.script import check_speakers, plan_script
from ...text.descriptions import read_description


def saved_voice(studio: Studio, name: Optional[str], session: Optional[str], browser=None) -> Optional[Voice]:
    """The voice ``name`` means (``chosen_voice``) when it is a saved one, else None."""
    return chosen_voice(studio, name, session, browser)[0]


def chosen_voice(studio: Studio, name: Optional[str], session: Optional[str],
                 browser=None) -> tuple[Optional[Voice], Optional[str]]:
    """(voice, design) of ``name`` as every front end reads it (``studio.vocabulary``): a saved voice (from the
    visitor's browser, ``browser``, in shared mode, else the server's voice folder), then a named design."""
    if not name or name == NO_VOICE:
        return None, None
    if studio.shared:
        return resolve_voice(name, studio.browser_voices.names(browser),
                             lambda saved: studio.browser_voices.load(browser, saved), listed_by="/voices")
    return resolve_voice(name, lambda asked: studio.voices.find(asked, session), listed_by="/voices",
                         load_saved=lambda saved: studio.voices.load(saved, session,
                                                                     max_frames=studio.limits.max_reference_frames))


def with_design(values: dict, design: Optional[str]) -> dict:
    """``values`` with a named voice's design before the free text, unless the request designs a voice itself
    (the dropdowns and free text give an item): words that give no item leave the voice as it is."""
    if not design or read_description(compose_instruct(values)).items:
        return values
    return dict(values, instruct=", ".join(filter(None, [design, str(values.get("instruct") or "").strip()])))


def voice_names(studio: Studio, session: Optional[str] = None, browser=None) -> list[str]:
    names = studio.browser_voices.names(browser) if studio.shared else studio.voices.names(session)
    return [NO_VOICE] + names


@ui_errors
def speak(studio: Studio, text: str, values: dict, history: Optional[list] = None,
          session: Optional[str] = None, browser=None, owner: Optional[str] = None,
          ssml: bool = False, lexicon=None, speakers: Optional[dict] = None) -> Iterator[dict]:
    """Text (and voice design, or a saved voice) -> speech, with live progress (the files are ``owner``'s).

    ``ssml``: the text is SSML, its ``<voice name>``s read as the voice menu's names; ``lexicon``: the owner's
    stored lexicon (shared mode: their browser's); ``speakers`` (not None: Script mode): the text is a
    dialogue script, its names' voices given by this table or read as voices themselves."""
    values = dict(values, pronunciations=studio.lexicons.for_generation(lexicon))
    if speakers is not None:
        def prepare(engine, arguments):
            return plan_script(engine, text, lambda name: chosen_voice(studio, name, session, browser), speakers,
                               language=arguments["language"], config=arguments["config"],
                               pronunciations=arguments["pronunciations"])

        yield from run_generation(studio, text, values, None, history, "Speak", owner, prepare=prepare)
        return
    voice, design = chosen_voice(studio, values.get("voice"), session, browser)
    yield from run_generation(studio, text, with_design(values, design), voice, history, "Speak", owner, ssml=ssml,
                              voices=lambda name: chosen_voice(studio, name, session, browser))


def build(studio: Studio, history: SessionHistory, browser_voices: Optional[gr.BrowserState] = None,
          browser_lexicon: Optional[gr.BrowserState] = None) -> GenerationPanel:
    """The tab's widgets and events; the panel's ``controls["voice"]`` is refreshed by the app on load.

    ``browser_voices`` and ``browser_lexicon`` (shared mode): the visitor's voices and pronunciations, kept in
    their browser."""
    with gr.Tab("Speak", id="speak"):
        with gr.Row(elem_classes="ov-panel"):  # on a phone: text, language, voice, speed, Speak, result, the rest (studio.css)
            with gr.Column(scale=3, elem_classes="ov-main"):
                text = text_block("speak", "Text")
                mode = ssml_switch("speak", text["text"], studio.limits)
                script = script_mode.build(text["text"])
                lexicon = lexicon_editor.build(studio, browser_lexicon)
                go, stop = go_stop_buttons("speak", "Speak")
                with gr.Column(elem_classes="ov-outputs"):
                    outputs = output_panel("speak")
            with gr.Column(scale=2, elem_classes="ov-controls"):
                controls = generation_controls("speak", with_voice=True)
        rows = examples("speak")
        if rows:
            gr.Examples(rows, inputs=[text["text"], controls["language"]], label="Examples")
    panel = GenerationPanel("speak", text, controls, outputs, go, stop)
    panel.lexicon, panel.script = lexicon, script

    stored = [browser_voices] if browser_voices is not None else []

    def run(text_value, values, history_value, data, session, owner):
        browser = data[browser_voices] if browser_voices is not None else None
        speakers = script.speakers(data) if data[script.on] else None
        return speak(studio, text_value, values, history_value, session, browser, owner,
                     ssml=data[mode] == "SSML", lexicon=lexicon.value(data), speakers=speakers)

    wire_generation(studio, panel, history, run, extra_inputs=stored + lexicon.inputs() + script.inputs(),
                    info_inputs=[mode, lexicon.table] + lexicon.inputs(),   # an entry added redraws the preview
                    voice_of=lambda values, session, data: saved_voice(studio, values.get("voice"), session),
                    ssml_of=lambda data: data[mode] == "SSML",
                    pronunciations_of=lambda data: studio.lexicons.for_generation(lexicon.value(data)))

    def voice_for(values, data, session):  # a sentence's new take: the voice and pronunciations as Go reads them now
        voice, design = chosen_voice(studio, values.get("voice"), session,
                                     data[browser_voices] if browser_voices is not None else None)
        values = dict(values, pronunciations=studio.lexicons.for_generation(lexicon.value(data)))
        return voice, with_design(values, design)

    wire_sentences(studio, panel, history, voice_for, extra_inputs=stored + lexicon.inputs())

    def refresh_voices(current, browser=None, request: gr.Request = None):
        names = voice_names(studio, session_of(request), browser)
        return gr.update(choices=names, value=current if current in names else NO_VOICE)

    controls["voice_refresh"].click(refresh_voices, inputs=[controls["voice"]] + stored, outputs=controls["voice"],
                                    queue=False, api_visibility="private")
    return panel


def build_api(studio: Studio) -> None:
    """/speak (inside the app's hidden column): async through the studio's service, so a cancel stops the engine."""
    @api_errors
    async def handle(values: dict, session: Optional[str], owner: Optional[str]):
        # the store off the event loop (a built-in voice or design does not ask it at all)
        voice, design = await asyncio.to_thread(chosen_voice, studio, values.pop("voice", "") or NO_VOICE, session)
        own = pronunciations_field(values.pop("pronunciations", ""))   # over the server's and the studio's
        values["pronunciations"] = studio.lexicons.for_generation().merged(own)
        text, speakers = values.pop("text"), speakers_field(values.pop("script", False), values.pop("speakers", ""))
        if speakers is not None:   # script mode, as the tab's: each name a voice, or given one by speakers
            def prepare(engine, arguments):
                return plan_script(engine, text, lambda name: chosen_voice(studio, name, session), speakers,
                                   language=arguments["language"], config=arguments["config"],
                                   pronunciations=arguments["pronunciations"])

            return await run_job(studio, text, values, None, "speak", owner, prepare=prepare)
        return await run_job(studio, text, with_design(values, design), voice, "speak", owner,
                             voices=lambda name: chosen_voice(studio, name, session))

    endpoint = api_function("speak", "Text (with an optional saved voice and voice design) -> speech (24 kHz WAV), "
                            "the seed used and the generation's details (settings, timings, codes digest).",
                            [("text", inspect.Parameter.empty), ("voice", "")], handle, with_session=True,
                            trailing=[("pronunciations", ""), ("script", False), ("speakers", "")])
    inputs = describe([gr.Textbox(label="text"), gr.Textbox(value="", label="voice")] + api_setting_inputs()
                      + [gr.Textbox(value="", label="pronunciations"), gr.Checkbox(value=False, label="script"),
                         gr.Textbox(value="", label="speakers")])
    gr.Button(visible=False).click(endpoint, inputs=inputs, outputs=result_outputs(), api_name="speak",
                                   **generation_concurrency(studio))


def speakers_field(script, text) -> Optional[dict]:
    """/speak's ``script`` (true: the text is a dialogue script, as the tab's Script mode) and ``speakers`` (JSON,
    ``{"Anna": "alloy"}``: each name's voice; a name left out must be a voice itself): the speakers, or None when
    the text is no script."""
    import json

    if not isinstance(script, bool):
        raise InvalidInput(f"script must be true or false, got {script!r}.", param="script")
    given = str(text or "").strip()
    if not script:
        if given:
            raise InvalidInput("speakers maps the names of a script to voices: send script=true with it.",
                               param="speakers")
        return None
    try:
        value = json.loads(given) if given else {}
    except (ValueError, RecursionError):
        raise InvalidInput("speakers must be JSON: {\"Anna\": \"alloy\", \"Ben\": \"male, low pitch\"}.",
                           param="speakers") from None
    return check_speakers(value) or {}


def pronunciations_field(text) -> Lexicon:
    """/speak's ``pronunciations``: a lexicon's JSON as text (``{"bass": "[B EY1 S]"}``); empty: none."""
    import json

    if not str(text or "").strip():
        return Lexicon()
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        raise InvalidInput("pronunciations must be JSON: {\"word\": \"[B EY1 S]\"} or a list of {\"word\", "
                           "\"say\", \"match_case\"}.", param="pronunciations") from None
    return from_mapping(value)
