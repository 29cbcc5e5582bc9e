"""The Clone tab and /clone: a reference clip and its transcript (with consent) + text -> speech in that voice;
the voice can be saved for the Speak tab.  The transcript is recognised as soon as a clip arrives (and at
cloning time when it is still empty), and stays editable.  A clip over 20 s is cut as the reference cuts it, only
when its transcript is not typed; a clip over 10 s is offered "Keep the best 10 s"."""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import html
import inspect
import pathlib
from typing import Iterator, Optional

import gradio as gr
import numpy as np

from ..gradio_api import api_errors, describe, generation_concurrency, result_outputs, run_job
from ...audio import processing as audio_ops
from ...audio.best_part import BEST_PART_SECONDS, best_part
from ...settings.generation import GenerationConfig
from ...constants import HOP_LENGTH, NUM_CODEBOOKS, SAMPLE_RATE
from ...errors import InvalidInput, OmniVoiceError, one_line
from ...text.prompt import add_punctuation
from ...storage.voice_file import Voice
from ..controls import api_function, api_setting_inputs, generation_controls
from ..error_mapping import ui_errors, user_message
from ..generation import run_generation
from ..owners import owner_of
from ..sentences import wire_sentences
from ..generation_panel import (ENGINE_GROUP, GenerationPanel, SessionHistory, go_stop_buttons, output_panel,
                                text_block, wire_generation)
from ...studio import Studio, session_of
from ...studio.sharing import unique_name
from ...studio.voices import clean_name
from .speak import voice_names
from .saved_voices import (ask_to_delete, kept_on_error, manage_voice, saved_voices_panel, store_update,
                           voice_list_update)
from .styles import styles_section

#: the reference's own cut (``preprocess_prompt``): a clip longer than this, cloned with a transcript that is not
#: typed (recognised), is cut at a pause before REFERENCE_TRIM_TO seconds
REFERENCE_TRIM_ABOVE = 20.0
REFERENCE_TRIM_TO = 15.0
# a clip longer than BEST_PART_SECONDS (audio.best_part) is offered "Keep the best 10 s"
#: references shorter than this get a warning (the reference works best with 3-10 s)
SHORT_REFERENCE_SECONDS = 3.0
RECOGNISING = "recognising..."
TRANSCRIPT_PLACEHOLDER = "Exactly what is said in the clip (filled in by the speech recogniser; edit it if needed)"
PREPROCESS_DEFAULT = GenerationConfig.default("preprocess_prompt")


def read_reference(studio: Studio, path: Optional[str]) -> tuple[np.ndarray, int, str]:
    """(audio [C, N], sample rate, note) of an uploaded or recorded reference, whole (the engine cuts a long clip
    as the reference does: only when its transcript is not typed)."""
    if not path:
        raise InvalidInput("Record or upload a reference clip first (3-10 s of one speaker, with its transcript).")
    path = str(path)
    studio.check_upload(path, "reference file")
    # checked from the file's header (rate, length, channels) and read only up to the limit
    wav, sr = audio_ops.load_audio_file(path, max_seconds=studio.limits.max_reference_seconds,
                                        max_bytes=studio.max_upload_bytes, what="reference audio")
    channels = "mono" if wav.shape[0] == 1 else f"{wav.shape[0]} channels (mixed to mono)"
    return wav, sr, f"Reference: {wav.shape[-1] / sr:.1f} s, {sr} Hz, {channels}."


def long_clip_note(seconds: float) -> str:
    """What a long clip means: the reference's cut (recognised transcript only) and the offer to keep 10 s."""
    note = ""
    if seconds > REFERENCE_TRIM_ABOVE:
        note += (f" Over {REFERENCE_TRIM_ABOVE:.0f} s: with the recognised transcript only its first part is used "
                 f"(cut at a pause before {REFERENCE_TRIM_TO:.0f} s, as the reference does; the recogniser hears just "
                 "that part). A transcript you type or edit keeps the whole clip, so it must say all of it.")
    if seconds > BEST_PART_SECONDS:
        note += (f" 3-10 s clone best and cost less time: **Keep the best {BEST_PART_SECONDS:.0f} s** cuts it at "
                 "pauses and recognises the kept part again.")
    return note


#: what cloning adds to the note when it cut the clip
CUT_NOTE = "Only its first part is used, cut at a pause as the reference cuts a clip with a recognised transcript"

_HEARD: dict = {}  # (studio id, path) -> the recogniser's Transcript of that clip, to tell it from a typed one


def heard_in(studio: Studio, path: Optional[str], transcript: str):
    """The recogniser's ``Transcript`` of the clip when ``transcript`` is what it heard there, else None (typed)."""
    heard = _HEARD.get((id(studio), str(path)))
    return heard if heard is not None and heard.text == (transcript or "").strip() else None


def cut_by_reference(wav: np.ndarray, sr: int, typed: bool, preprocess: bool) -> bool:
    """Whether cloning cuts this clip (``prepare_reference``): longer than 20 s, preprocessed, transcript not typed."""
    return not typed and bool(preprocess) and wav.shape[-1] / sr > REFERENCE_TRIM_ABOVE


def reference_for_estimate(studio: Studio, path: Optional[str], transcript: str, preprocess: bool) -> Optional[Voice]:
    """The reference's transcript and length, for the length and time estimate before cloning.

    The reference's duration estimator sets the speaking rate from the reference (its transcript over its
    frames), so the estimate needs both; the codes are not computed here (the placeholder codes are never
    generated from: only ``frames`` and ``transcript`` are read).  None without a usable clip or transcript."""
    if not path or not (transcript or "").strip():
        return None
    try:
        frames, rms = _reference_length(studio, str(path), bool(preprocess), heard_in(studio, path, transcript) is None)
    except InvalidInput:
        return None
    return Voice(codes=np.zeros((NUM_CODEBOOKS, frames), dtype=np.int64), transcript=add_punctuation(transcript),
                 rms=rms)


_LENGTHS: dict = {}  # (studio id, path, preprocess, typed) -> (frames, rms): the info line is redrawn on every key


def _reference_length(studio: Studio, path: str, preprocess: bool, typed: bool) -> tuple[int, float]:
    key = (id(studio), path, preprocess, typed)
    if key not in _LENGTHS:
        wav, sr, _ = read_reference(studio, path)
        prepared, rms = audio_ops.prepare_reference(wav, sr, transcript_given=typed, preprocess=preprocess)
        _remember(_LENGTHS, key, (max(1, prepared.shape[-1] // HOP_LENGTH), rms))
    return _LENGTHS[key]


def _remember(cache: dict, key, value) -> None:
    """``cache[key] = value`` in a cache of at most 16 entries (emptied when full)."""
    if len(cache) >= 16:
        cache.clear()
    cache[key] = value


def reference_note(studio: Studio, path: Optional[str]) -> str:
    """Markdown shown when a reference is recorded or uploaded (problems as a note, not an error)."""
    if not path:
        return "Record or upload 3-10 s of one speaker, and type exactly what is said."
    try:
        wav, sr, note = read_reference(studio, path)
        audio_ops.prepare_reference(wav, sr, transcript_given=True, preprocess=False,
                                    max_seconds=studio.limits.max_reference_seconds)
    except InvalidInput as exc:
        return "⚠ " + html.escape(str(exc))
    if wav.shape[-1] / sr < SHORT_REFERENCE_SECONDS:
        note += (f" ⚠ Under {SHORT_REFERENCE_SECONDS:.0f} s: the clone will sound less like the speaker; "
                 "3-10 s of speech works best.")
    return note + long_clip_note(wav.shape[-1] / sr)


def recognise_reference(studio: Studio, path: Optional[str], preprocess: bool = PREPROCESS_DEFAULT):
    """What the speech recogniser hears in the reference (a ``Transcript``), prepared as cloning prepares
    it (cut at a pause when long, silences shortened), and remembered: cloning with that transcript is cloning
    without a typed one.  Uses the recogniser only, never the engine's lock."""
    wav, sr, _ = read_reference(studio, path)
    prepared, _ = audio_ops.prepare_reference(wav, sr, transcript_given=False, preprocess=bool(preprocess))
    heard = studio.models.get().engine.recognizer.transcribe(prepared[0], SAMPLE_RATE)
    _remember(_HEARD, (id(studio), str(path)), heard)
    return heard


def transcript_updates(studio: Studio, path: Optional[str], preprocess: bool = PREPROCESS_DEFAULT) -> Iterator[tuple]:
    """(note, transcript box) as a clip arrives: the note, "recognising..." in the box, then the text."""
    note = reference_note(studio, path)
    if not path or note.startswith("⚠"):
        yield note, gr.update(placeholder=TRANSCRIPT_PLACEHOLDER, interactive=True)
        return
    yield note, gr.update(value="", placeholder=RECOGNISING, interactive=False)
    try:
        text = recognise_reference(studio, path, preprocess).text
    except OmniVoiceError as exc:
        yield (note + " ⚠ The transcript could not be recognised, so type it. " + html.escape(one_line(exc)),
               gr.update(placeholder=TRANSCRIPT_PLACEHOLDER, interactive=True))
        return
    yield note, gr.update(value=text, placeholder=TRANSCRIPT_PLACEHOLDER, interactive=True)


def trim_offer(studio: Studio, path: Optional[str]):
    """The "Keep the best 10 s" button: shown for a readable clip over 10 s."""
    try:
        wav, sr, _ = read_reference(studio, path)
    except InvalidInput:
        return gr.update(visible=False)
    return gr.update(visible=wav.shape[-1] / sr > BEST_PART_SECONDS)


def keep_best_part(studio: Studio, path: Optional[str]) -> tuple[str, str]:
    """(path of a new clip with the reference's best part, message): at most 10 s with the most speech, cut at
    pauses (``audio.best_part``), mono, beside the clip.  The tab puts it in place of the clip, which has it
    checked and recognised again like any new clip, so clip and transcript still match."""
    wav, sr, _ = read_reference(studio, path)
    seconds = wav.shape[-1] / sr
    if seconds <= BEST_PART_SECONDS:
        raise InvalidInput(f"The clip is {seconds:.1f} s long: already {BEST_PART_SECONDS:g} s or shorter, so there "
                           "is nothing to cut.")
    part = best_part(wav, sr, BEST_PART_SECONDS)
    source = pathlib.Path(path)
    kept = source.with_name(f"{source.stem}-best-{part.start}-{part.end}.wav")
    audio_ops.save_audio(kept, audio_ops.to_mono(wav)[0, part.start:part.end], sr)
    where = "cut at pauses" if part.at_pauses else "no pause to cut at, so its first part"
    return str(kept), (f"Kept {(part.end - part.start) / sr:.1f} s of the {seconds:.1f} s clip "
                       f"({part.start / sr:.1f}-{part.end / sr:.1f} s, {where}); the transcript is recognised again.")


@ui_errors
def trim_clip(studio: Studio, path: Optional[str]) -> str:
    """The Keep button: the kept clip in place of the clip (whose change redraws the note and the transcript)."""
    kept, message = keep_best_part(studio, path)
    gr.Info(user_message(message))
    return kept


def clone_voice(studio: Studio, path: Optional[str], transcript: str, consent: bool,
                preprocess: bool = PREPROCESS_DEFAULT, name: str = "") -> tuple[Voice, str]:
    """The voice of a reference clip (cached by file content, transcript and the model's content).  Checked in the order
    the user fills the form: clip, transcript (recognised when empty), consent.

    As in the reference, a clip over 20 s is cut (at a pause before 15 s) only when its transcript is not typed:
    empty, or what the recogniser heard in it; the engine then recognises the cut clip itself, as the
    reference does.  A typed transcript keeps the whole clip."""
    wav, sr, note = read_reference(studio, path)
    transcript = (transcript or "").strip()
    if transcript == RECOGNISING:
        raise InvalidInput("The transcript is still being recognised; wait a moment, then try again.")
    heard = heard_in(studio, path, transcript)
    if not transcript:
        heard = recognise_reference(studio, path, preprocess)
        transcript = heard.text
        if not transcript:
            raise InvalidInput("No words were recognised in the reference: type what is said in the clip.")
    if not consent:
        raise InvalidInput("Tick “I have the right to use this voice” first: clone only your own voice or one "
                           "you have permission to use.")
    loaded = studio.models.get()
    digest = hashlib.sha1(np.ascontiguousarray(wav).tobytes()).hexdigest()
    cut = cut_by_reference(wav, sr, heard is None, preprocess)
    # the model by its content (the codec that makes the codes), not its label: a folder replaced under the same
    # name makes the voice again
    key = (loaded.engine.model_content, digest, sr, transcript, bool(preprocess), cut)

    def make() -> Voice:
        with loaded.lock:
            return loaded.engine.clone_voice(wav, sr, None if cut else transcript, preprocess=bool(preprocess),
                                             name=name)

    voice = studio.voice_cache.get_or_make(key, make)
    if heard is not None:
        voice = dataclasses.replace(voice, transcript_source="recognised", language=heard.language)
    if cut:
        note += f" {CUT_NOTE} ({voice.seconds:.1f} s kept)."
    return dataclasses.replace(voice, name=name or voice.name), note


@ui_errors
def clone(studio: Studio, reference: Optional[str], transcript: str, consent: bool, text: str, values: dict,
          preprocess: bool = PREPROCESS_DEFAULT, history: Optional[list] = None,
          owner: Optional[str] = None, lexicon=None) -> Iterator[dict]:
    """Reference + transcript + consent + text -> speech in that voice (the files are ``owner``'s), with the
    owner's pronunciations as in Speak (``lexicon``: their stored lexicon, shared mode: their browser's)."""
    voice, note = clone_voice(studio, reference, transcript, consent, preprocess)
    if CUT_NOTE in note:
        gr.Warning(user_message(note))
    values = dict(values, voice=None, pronunciations=studio.lexicons.for_generation(lexicon))
    yield from run_generation(studio, text, values, voice, history, "Clone", owner)


@ui_errors
def save_voice(studio: Studio, reference: Optional[str], transcript: str, consent: bool, name: str,
               preprocess: bool = PREPROCESS_DEFAULT, session: Optional[str] = None, browser=None) -> dict:
    """Save the reference's voice under ``name`` (offered in Speak): in the visitor's browser in shared mode
    (``"store"`` is the browser's new value), else in the user data folder.  A name in use is kept and the
    new voice gets a numbered name ("Anna 2")."""
    asked = clean_name(name)
    voice, _ = clone_voice(studio, reference, transcript, consent, preprocess, name=asked)
    store = None
    if studio.shared:
        store, name = studio.browser_voices.save(browser, voice, asked)
        where, names = "in this browser (it stays after a reload; other visitors cannot see it)", \
            studio.browser_voices.names(store)
    else:
        name = unique_name(asked, studio.voices.names(session))
        studio.voices.save(voice, name, session)
        where, names = f"in {studio.voices.where(session)}", studio.voices.names(session)
    kept = (f" A voice named **{html.escape(asked)}** exists already, so this one is **{html.escape(name)}**."
            if name != asked else "")
    return {"message": f"Saved the voice **{html.escape(name)}** ({voice.seconds:.1f} s of reference) {where}."
                       f"{kept} Pick it in the Speak tab's voice list.",
            "voices": names, "selected": name, "store": store}


def build(studio: Studio, history: SessionHistory, speak_voice: gr.Dropdown,
          browser_voices: Optional[gr.BrowserState] = None, lexicon=None) -> GenerationPanel:
    """The tab's widgets and events; a saved voice is offered in ``speak_voice`` (the Speak tab's list) and,
    in shared mode, kept in ``browser_voices`` (the visitor's browser); ``lexicon``: the Speak tab's lexicon
    editor, whose pronunciations Clone speaks with too."""
    with gr.Tab("Clone", id="clone"):
        with gr.Row():
            with gr.Column(scale=3):
                ref = gr.Audio(sources=["upload", "microphone"], type="filepath", elem_id="clone-ref",
                               label="Reference voice (3-10 s of one speaker; wav, flac, mp3, ogg)")
                note = gr.Markdown(reference_note(studio, None), elem_id="clone-note")
                trim = gr.Button(f"Keep the best {BEST_PART_SECONDS:.0f} s", visible=False, size="sm",
                                 elem_id="clone-trim")
                transcript = gr.Textbox(label="Transcript of the reference", lines=2, elem_id="clone-transcript",
                                        placeholder=TRANSCRIPT_PLACEHOLDER)
                with gr.Row():
                    consent = gr.Checkbox(False, label="I have the right to use this voice", elem_id="clone-consent")
                    pre = gr.Checkbox(PREPROCESS_DEFAULT, label="Clean the reference (shorten silences)",
                                      info=GenerationConfig.setting("preprocess_prompt").help, elem_id="clone-pre")
                with gr.Row(equal_height=True):
                    name = gr.Textbox(label="Voice name", placeholder="e.g. my voice", scale=3, elem_id="clone-name")
                    save = gr.Button("Save voice", scale=1, elem_id="clone-save")
                saved = gr.Markdown("", elem_id="clone-saved")
                voices_panel = saved_voices_panel()  # inside the tab: a component made in gr.Tabs becomes a tab
                styles_section(studio, browser_voices,
                               lambda session, browser: voice_names(studio, session, browser)[1:],
                               lambda clip, text, given, tag: clone_voice(studio, clip, text, given, name=tag)[0],
                               kept_on_error, store_update)
                text = text_block("clone", "Text to say in this voice")
                go, stop = go_stop_buttons("clone", "Clone and speak")
                outputs = output_panel("clone")
            with gr.Column(scale=2):
                controls = generation_controls("clone", with_voice=False)
    panel = GenerationPanel("clone", text, controls, outputs, go, stop)

    stored_lexicon = lexicon.inputs() if lexicon is not None else []

    def run(text_value, values, history_value, data, session, owner):
        return clone(studio, data[ref], data[transcript], data[consent], text_value, values, data[pre], history_value,
                     owner, lexicon=lexicon.value(data) if lexicon is not None else None)

    wire_generation(studio, panel, history, run, extra_inputs=(ref, transcript, consent, pre, *stored_lexicon),
                    voice_of=lambda values, session, data: reference_for_estimate(studio, data.get(ref),
                                                                                  data.get(transcript), data.get(pre)),
                    info_inputs=(ref, transcript, pre))

    def voice_for(values, data, session):  # a sentence's new take: the clip's voice, as Go clones it now
        voice, _ = clone_voice(studio, data[ref], data[transcript], data[consent], data[pre])
        return voice, dict(values, voice=None)

    wire_sentences(studio, panel, history, voice_for, extra_inputs=(ref, transcript, consent, pre))

    def on_reference(path, preprocess):
        yield from transcript_updates(studio, path, preprocess)

    # its own queue: recognising a clip never waits for, nor holds up, speech generation
    ref.change(on_reference, inputs=[ref, pre], outputs=[note, transcript], api_visibility="private",
               show_progress="hidden", concurrency_id="recogniser", concurrency_limit=1)
    ref.change(lambda path: trim_offer(studio, path), inputs=ref, outputs=trim, api_visibility="private",
               show_progress="hidden", queue=False)
    trim.click(lambda path: trim_clip(studio, path), inputs=ref, outputs=ref, api_visibility="private",
               concurrency_id="recogniser", concurrency_limit=1)

    stored = [browser_voices] if browser_voices is not None else []

    def save_fn(ref_path, transcript_text, consent_given, voice_name, preprocess, browser=None,
                request: gr.Request = None):
        result = kept_on_error(save_voice, studio, ref_path, transcript_text, consent_given, voice_name, preprocess,
                               session_of(request), browser)
        return (result["message"], voice_list_update(result)) + ((store_update(result),) if stored else ())

    save.click(save_fn, inputs=[ref, transcript, consent, name, pre] + stored, outputs=[saved, speak_voice] + stored,
               concurrency_id=ENGINE_GROUP, concurrency_limit=1, api_visibility="private")
    manage, pick, new_name, buttons, upload, exported, status = voices_panel
    managed = [status, pick, speak_voice, exported] + stored

    def act(action):
        def handler(chosen, new, path, browser=None, request: gr.Request = None):
            result = kept_on_error(manage_voice, studio, action, chosen, new, path, session_of(request), browser,
                                   owner_of(request))
            return (result["message"], gr.update(choices=result["voices"], value=result["selected"])
                    if "voices" in result else gr.update(), voice_list_update(result),
                    result.get("files", gr.update())) + ((store_update(result),) if stored else ())
        return handler

    confirm = buttons["confirm"]
    for action, button in buttons.items():
        if action == "confirm":
            continue
        if action == "delete":  # asks first: "Yes, delete it" deletes, then hides again
            button.click(ask_to_delete, inputs=pick, outputs=[status, confirm], api_visibility="private", queue=False)
            button = confirm
        event = button.click(act(action), inputs=[pick, new_name, upload] + stored, outputs=managed,
                             api_visibility="private", queue=False)
        if action == "delete":
            event.then(lambda: gr.update(visible=False), outputs=confirm, api_visibility="private", queue=False)
    pick.change(lambda: gr.update(visible=False), outputs=confirm, api_visibility="private", queue=False)
    upload.upload(act("import"), inputs=[pick, new_name, upload] + stored, outputs=managed,
                  api_visibility="private", queue=False)

    def listing(browser=None, request: gr.Request = None):
        names = voice_names(studio, session_of(request), browser)[1:]
        return gr.update(choices=names, value=names[0] if names else None)

    manage.expand(listing, inputs=stored, outputs=pick, api_visibility="private", queue=False)
    return panel


def build_api(studio: Studio) -> None:
    """/clone (inside the app's hidden column): async through the studio's service, like /speak."""
    @api_errors
    async def handle(values: dict, session: Optional[str], owner: Optional[str]):
        leading = [values.pop(n) for n in ("reference", "transcript", "text", "consent", "preprocess")]
        reference, transcript, text, consent, preprocess = leading
        if not (text or "").strip():
            raise InvalidInput("text is required: the text to speak in the cloned voice.", param="text")
        voice, _ = await asyncio.to_thread(clone_voice, studio, reference, transcript, consent, preprocess)
        return await run_job(studio, text, dict(values, voice=None), voice, "clone", owner)

    endpoint = api_function(
        "clone", "A reference clip, its transcript and consent=true (you have the right to use this voice) + text -> "
        "speech in that voice, the seed used and the details.",
        [("reference", inspect.Parameter.empty), ("transcript", ""), ("text", ""), ("consent", False),
         ("preprocess", PREPROCESS_DEFAULT)], handle)
    inputs = describe([gr.Audio(type="filepath", label="reference"), gr.Textbox(value="", label="transcript"),
                       gr.Textbox(value="", label="text"), gr.Checkbox(value=False, label="consent"),
                       gr.Checkbox(value=PREPROCESS_DEFAULT, label="preprocess")] + api_setting_inputs())
    gr.Button(visible=False).click(endpoint, inputs=inputs, outputs=result_outputs(), api_name="clone",
                                   **generation_concurrency(studio))
