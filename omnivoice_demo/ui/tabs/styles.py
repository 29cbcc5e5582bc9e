"""The Clone tab's "Styles of a saved voice" section: add a clip of the speaker in a style (recorded or uploaded,
tagged with a word), play it, delete it.  The rules are the studio core's (``studio.variants``); the voice is
changed where it is kept (the visitor's browser in shared mode, else the voice folder).  In the Speak tab, a
word of the description that is one of the voice's tags speaks with that clip."""

from __future__ import annotations

import html
import secrets
from typing import Callable, Optional

import gradio as gr

from ...audio.processing import save_audio
from ...constants import SAMPLE_RATE
from ...errors import InvalidInput
from ...studio import Studio, session_of
from ...studio.variants import EXAMPLES, add_variant, check_room, remove_variant, variant_of
from ...text.voice_names import clean_name
from ..generation_panel import ENGINE_GROUP
from ..owners import owner_of


def _store(studio: Studio):
    return studio.browser_voices if studio.shared else studio.voices


def _load(studio: Studio, name: Optional[str], session: Optional[str], browser):
    if not name:
        raise InvalidInput("Pick a saved voice first (save one above, then open this section again).")
    if studio.shared:
        return studio.browser_voices.load(browser, name)
    return studio.voices.load(name, session, max_frames=studio.limits.max_reference_frames)


def _change(studio: Studio, name: str, update, session: Optional[str], browser):
    """(the browser's new value or None, the changed voice)."""
    if studio.shared:
        return studio.browser_voices.change(browser, name, update)
    return None, studio.voices.change(name, update, session)


def add_style(studio: Studio, clip_of: Callable, name: Optional[str], tag: str, clip: Optional[str],
              transcript: str, consent: bool, session: Optional[str] = None, browser=None) -> dict:
    """Add the clip as the voice's style ``tag``: the tag and the room for it are checked before the clip is
    encoded by ``clip_of(clip, transcript, consent, tag)`` (the Clone tab's: the clip, its transcript, consent)."""
    most = _store(studio).max_variants
    tag = check_room(_load(studio, name, session, browser), tag, most)
    variant = clip_of(clip, transcript, consent, tag)
    store, voice = _change(studio, name, lambda saved: add_variant(saved, tag, variant, most), session, browser)
    return {"message": f"Added the style **{html.escape(tag)}** ({variant.seconds:.1f} s) to **{html.escape(name)}**. "
                       f"In the Speak tab, pick {html.escape(name)} and write *{html.escape(tag)}* in the voice "
                       "description to speak with it.",
            "styles": list(voice.variants), "selected": tag, "store": store}


def delete_style(studio: Studio, name: Optional[str], tag: Optional[str], session: Optional[str] = None,
                 browser=None) -> dict:
    if not tag:
        raise InvalidInput("Pick a style first.")
    _load(studio, name, session, browser)
    store, voice = _change(studio, name, lambda saved: remove_variant(saved, tag), session, browser)
    return {"message": f"Deleted the style **{html.escape(tag)}** of **{html.escape(name)}**.",
            "styles": list(voice.variants), "selected": None, "store": store}


def play_style(studio: Studio, name: Optional[str], tag: Optional[str], session: Optional[str] = None, browser=None,
               owner: Optional[str] = None) -> str:
    """The style's clip, decoded from its codes, as a WAV file of the output folder (``owner``'s)."""
    if not tag:
        raise InvalidInput("Pick a style first.")
    clip = variant_of(_load(studio, name, session, browser), tag)
    loaded = studio.models.get()
    with loaded.lock:
        audio = loaded.engine.decode(clip.codes)
    stem = f"omnivoice-style-{clean_name(clip.name).replace(' ', '_')}-{secrets.token_hex(4)}"
    return str(save_audio(studio.output_path(stem, ".wav", owner), audio, SAMPLE_RATE))


def styles_section(studio: Studio, browser_voices: Optional[gr.BrowserState], voice_names: Callable,
                   clip_of: Callable, kept_on_error: Callable, store_update: Callable) -> None:
    """The accordion and its events, with the Clone tab's helpers: ``voice_names(session, browser)`` (the saved
    voices to pick from), ``clip_of`` (``add_style``), ``kept_on_error`` and ``store_update`` (a mistake is a
    message; the browser's new value)."""
    with gr.Accordion("Styles of a saved voice: cheerful, sad, whisper, ...", open=False,
                      elem_id="styles-panel") as section:
        gr.Markdown(f"Add a clip of the same speaker in a style, tagged with one word ({EXAMPLES} or your own). "
                    "A description word that is a tag speaks with that clip.")
        with gr.Row():
            voice = gr.Dropdown([], label="Saved voice", scale=2, elem_id="styles-voice")
            tag = gr.Textbox(label="Style tag (one word)", placeholder="e.g. cheerful", scale=2, elem_id="styles-tag")
        clip = gr.Audio(sources=["upload", "microphone"], type="filepath", elem_id="styles-clip",
                        label="A clip of the speaker in that style (3-10 s)")
        transcript = gr.Textbox(label="Transcript of the clip (empty: recognised)", lines=1,
                                elem_id="styles-transcript")
        with gr.Row(equal_height=True):
            consent = gr.Checkbox(False, label="I have the right to use this voice", elem_id="styles-consent")
            add = gr.Button("Add style", size="sm", elem_id="styles-add")
        with gr.Row():
            pick = gr.Dropdown([], label="Style", scale=2, elem_id="styles-pick")
            play = gr.Button("Play", size="sm", elem_id="styles-play")
            delete = gr.Button("Delete style", size="sm", variant="stop", elem_id="styles-delete")
        player = gr.Audio(label="The style's clip", type="filepath", interactive=False, elem_id="styles-player")
        status = gr.Markdown("", elem_id="styles-status")
    stored = [browser_voices] if browser_voices is not None else []

    def answer(result: dict) -> tuple:
        styles = gr.update(choices=result["styles"], value=result["selected"]) if "styles" in result else gr.update()
        return (result["message"], styles) + ((store_update(result),) if stored else ())

    def on_add(name, tag_value, path, text, given, browser=None, request: gr.Request = None):
        return answer(kept_on_error(add_style, studio, clip_of, name, tag_value, path, text, given,
                                    session_of(request), browser))

    def on_delete(name, chosen, browser=None, request: gr.Request = None):
        return answer(kept_on_error(delete_style, studio, name, chosen, session_of(request), browser))

    def on_voice(name, browser=None, request: gr.Request = None):
        try:
            styles = list(_load(studio, name, session_of(request), browser).variants) if name else []
        except InvalidInput:
            styles = []
        return gr.update(choices=styles, value=styles[0] if styles else None)

    def on_play(name, chosen, browser=None, request: gr.Request = None):
        result = kept_on_error(lambda: {"message": "", "file": play_style(studio, name, chosen, session_of(request),
                                                                          browser, owner_of(request))})
        return result.get("file"), result["message"]

    def listing(browser=None, request: gr.Request = None):
        names = voice_names(session_of(request), browser)
        return gr.update(choices=names, value=names[0] if names else None)

    section.expand(listing, inputs=stored, outputs=voice, api_visibility="private", queue=False)
    voice.change(on_voice, inputs=[voice] + stored, outputs=pick, api_visibility="private", queue=False)
    add.click(on_add, inputs=[voice, tag, clip, transcript, consent] + stored, outputs=[status, pick] + stored,
              api_visibility="private", concurrency_id=ENGINE_GROUP, concurrency_limit=1)
    delete.click(on_delete, inputs=[voice, pick] + stored, outputs=[status, pick] + stored,
                 api_visibility="private", queue=False)
    play.click(on_play, inputs=[voice, pick] + stored, outputs=[player, status], api_visibility="private",
               concurrency_id=ENGINE_GROUP, concurrency_limit=1)
