"""The Clone tab and /clone: a reference clip and its transcript (with consent) + text -> speech in that voice;
the voice can be saved for the Speak tab."""

from __future__ import annotations

import dataclasses
import hashlib
import html
import inspect
from typing import Iterator, Optional

import gradio as gr
import numpy as np

from ... import audio as audio_ops
from ...config import GenerationConfig
from ...errors import InvalidInput
from ...voice import Voice
from ..controls import NO_VOICE, api_function, api_setting_inputs, generation_controls, run_to_end
from ..error_mapping import ui_errors, user_message
from ..generation import run_generation
from ..generation_panel import (ENGINE_GROUP, GenerationPanel, SessionHistory, go_stop_buttons, output_panel,
                                text_block, wire_generation)
from ..studio import Studio, session_of
from ..voices import clean_name

#: references longer than this are cut at a pause to about TRIM_TO seconds
TRIM_ABOVE_SECONDS = 20.0
TRIM_TO_SECONDS = 15.0
PREPROCESS_DEFAULT = GenerationConfig.default("preprocess_prompt")


def read_reference(studio: Studio, path: Optional[str]) -> tuple[np.ndarray, int, str]:
    """(audio [C, N], sample rate, note) of an uploaded or recorded reference, cut when it is long."""
    if not path:
        raise InvalidInput("Record or upload a reference clip first (3-10 s of one speaker, with its transcript).")
    path = str(path)
    studio.check_upload(path, "reference file")
    wav, sr = audio_ops.load_audio_file(path)
    seconds = wav.shape[-1] / sr
    channels = "mono" if wav.shape[0] == 1 else f"{wav.shape[0]} channels (mixed to mono)"
    note = f"Reference: {seconds:.1f} s, {sr} Hz, {channels}."
    if seconds > audio_ops.MAX_REFERENCE_SECONDS:
        raise InvalidInput(f"The reference is {seconds:.0f} s long; the limit is "
                           f"{audio_ops.MAX_REFERENCE_SECONDS:.0f} s. Upload 3-10 s of clear speech.")
    if seconds > TRIM_ABOVE_SECONDS:
        mono = audio_ops.to_mono(wav)
        trimmed = audio_ops.trim_long_audio(mono, sr, max_duration=TRIM_TO_SECONDS, trim_threshold=TRIM_ABOVE_SECONDS)
        if trimmed.shape[-1] < mono.shape[-1]:
            wav = trimmed
            note += (f" It is long, so only the first {wav.shape[-1] / sr:.1f} s are used (cut at a pause): "
                     "the transcript must be what is said in that part.")
    return wav, sr, note


def reference_note(studio: Studio, path: Optional[str]) -> str:
    """Markdown shown when a reference is recorded or uploaded (problems as a note, not an error)."""
    if not path:
        return "Record or upload 3-10 s of one speaker, and type exactly what is said."
    try:
        wav, sr, note = read_reference(studio, path)
        audio_ops.prepare_reference(wav, sr, transcript_given=True, preprocess=False)
    except InvalidInput as exc:
        return "⚠ " + html.escape(str(exc))
    return note


def clone_voice(studio: Studio, path: Optional[str], transcript: str, consent: bool,
                preprocess: bool = PREPROCESS_DEFAULT, name: str = "") -> tuple[Voice, str]:
    """The voice of a reference clip (cached by file content, transcript and model)."""
    if not consent:
        raise InvalidInput("Tick “I have the right to use this voice” first: clone only your own voice or one "
                           "you have permission to use.")
    if not transcript or not transcript.strip():
        raise InvalidInput("Type the transcript of the reference: exactly what is said in the clip (the model "
                           "needs it to clone the voice).")
    loaded = studio.models.get()
    wav, sr, note = read_reference(studio, path)
    digest = hashlib.sha1(np.ascontiguousarray(wav).tobytes()).hexdigest()
    key = (loaded.label, digest, sr, transcript.strip(), bool(preprocess))

    def make() -> Voice:
        with loaded.lock:
            return loaded.engine.clone_voice(wav, sr, transcript, preprocess=bool(preprocess), name=name)

    voice = studio.voice_cache.get_or_make(key, make)
    return dataclasses.replace(voice, name=name or voice.name), note


@ui_errors
def clone(studio: Studio, reference: Optional[str], transcript: str, consent: bool, text: str, values: dict,
          preprocess: bool = PREPROCESS_DEFAULT, history: Optional[list] = None) -> Iterator[dict]:
    """Reference + transcript + consent + text -> speech in that voice."""
    voice, note = clone_voice(studio, reference, transcript, consent, preprocess)
    if "only the first" in note:
        gr.Warning(user_message(note))
    yield from run_generation(studio, text, dict(values, voice=None), voice, history, "Clone")


@ui_errors
def save_voice(studio: Studio, reference: Optional[str], transcript: str, consent: bool, name: str,
               preprocess: bool = PREPROCESS_DEFAULT, session: Optional[str] = None) -> dict:
    """Save the reference's voice under ``name`` in the user data folder (offered in Speak)."""
    name = clean_name(name)
    voice, _ = clone_voice(studio, reference, transcript, consent, preprocess, name=name)
    path = studio.voices.save(voice, name, session)
    where = "for this browser session" if studio.voices.private else f"in {path.parent}"
    return {"message": f"Saved the voice **{html.escape(name)}** ({voice.seconds:.1f} s of reference) {where}. "
                       "Pick it in the Speak tab's voice list.",
            "voices": studio.voices.names(session), "selected": name}


def build(studio: Studio, history: SessionHistory, speak_voice: gr.Dropdown) -> GenerationPanel:
    """The tab's widgets and events; a saved voice is offered in ``speak_voice`` (the Speak tab's list)."""
    with gr.Tab("Clone", id="clone"):
        with gr.Row():
            with gr.Column(scale=3):
                ref = gr.Audio(sources=["upload", "microphone"], type="filepath", elem_id="clone-ref",
                               label="Reference voice (3-10 s of one speaker; wav, flac, mp3, ogg)")
                note = gr.Markdown(reference_note(studio, None), elem_id="clone-note")
                transcript = gr.Textbox(label="Transcript of the reference", lines=2, elem_id="clone-transcript",
                                        placeholder="Exactly what is said in the clip")
                with gr.Row():
                    consent = gr.Checkbox(False, label="I have the right to use this voice", elem_id="clone-consent")
                    pre = gr.Checkbox(PREPROCESS_DEFAULT, label="Clean the reference (shorten silences)",
                                      info=GenerationConfig.setting("preprocess_prompt").help, elem_id="clone-pre")
                with gr.Row(equal_height=True):
                    name = gr.Textbox(label="Voice name", placeholder="e.g. my voice", scale=3, elem_id="clone-name")
                    save = gr.Button("Save voice", scale=1, elem_id="clone-save")
                saved = gr.Markdown("", elem_id="clone-saved")
                text = text_block("clone", "Text to say in this voice")
                go, stop = go_stop_buttons("clone", "Clone and speak")
                outputs = output_panel("clone")
            with gr.Column(scale=2):
                controls = generation_controls("clone", with_voice=False)
    panel = GenerationPanel("clone", text, controls, outputs, go, stop)

    def run(text_value, values, history_value, data, session):
        return clone(studio, data[ref], data[transcript], data[consent], text_value, values, data[pre], history_value)

    wire_generation(studio, panel, history, run, extra_inputs=(ref, transcript, consent, pre))
    ref.change(lambda path: reference_note(studio, path), inputs=ref, outputs=note, api_visibility="private",
               show_progress="hidden")

    def save_fn(ref_path, transcript_text, consent_given, voice_name, preprocess, request: gr.Request):
        result = save_voice(studio, ref_path, transcript_text, consent_given, voice_name, preprocess,
                            session_of(request))
        return result["message"], gr.update(choices=[NO_VOICE] + result["voices"], value=result["selected"])

    save.click(save_fn, inputs=[ref, transcript, consent, name, pre], outputs=[saved, speak_voice],
               concurrency_id=ENGINE_GROUP, concurrency_limit=1, api_visibility="private")
    return panel


def build_api(studio: Studio) -> None:
    """/clone (inside the app's hidden column)."""
    def handle(values: dict, session: Optional[str]) -> str:
        leading = [values.pop(n) for n in ("reference", "transcript", "text", "consent", "preprocess")]
        reference, transcript, text, consent, preprocess = leading
        return run_to_end(clone(studio, reference, transcript, consent, text, values, preprocess, []))["audio"]

    endpoint = api_function(
        "clone", "A reference clip and its transcript (consent=True: you have the right to use this voice) + text -> "
        "speech in that voice.",
        [("reference", inspect.Parameter.empty), ("transcript", ""), ("text", ""), ("consent", False),
         ("preprocess", PREPROCESS_DEFAULT)], handle)
    inputs = [gr.Audio(type="filepath", label="reference"), gr.Textbox(value="", label="transcript"),
              gr.Textbox(value="", label="text"), gr.Checkbox(value=False, label="consent"),
              gr.Checkbox(value=PREPROCESS_DEFAULT, label="preprocess")] + api_setting_inputs()
    gr.Button(visible=False).click(endpoint, inputs=inputs, outputs=gr.Audio(type="filepath", label="audio"),
                                   api_name="clone", concurrency_id=ENGINE_GROUP, concurrency_limit=1)
