"""The Clone tab's "Saved voices" panel: rename, delete (asked first), export and import a saved voice, in the
visitor's browser in shared mode, else the voice folder (``manage_voice``); a mistake is the panel's message and
leaves every list as it was (``kept_on_error``), which the Clone tab's save and the styles section use too."""

from __future__ import annotations

import html
import pathlib
from typing import Optional

import gradio as gr

from ...errors import InvalidInput, OmniVoiceError, excerpt, one_line
from ...storage.voice_file import Voice
from ...studio import Studio
from ...studio.sharing import unique_name
from ...studio.voices import clean_name, export_voice
from ..controls import NO_VOICE
from ..error_mapping import user_message

def saved_voices_panel() -> tuple:
    """The "Saved voices" accordion: (accordion, voice list, new name, {action: button}, import, exported, status)."""
    with gr.Accordion("Saved voices: rename, delete, export, import", open=False, elem_id="voices-panel") as manage:
        with gr.Row():
            pick = gr.Dropdown([], label="Saved voice", scale=2, elem_id="voices-pick")
            new_name = gr.Textbox(label="New name (for Rename)", scale=2, elem_id="voices-new-name")
        with gr.Row():
            buttons = {action: gr.Button(action.capitalize(), size="sm", elem_id=f"voices-{action}",
                                         variant="stop" if action == "delete" else "secondary")
                       for action in ("rename", "delete", "export")}
            # Delete asks first; this button deletes (``confirm_delete``)
            buttons["confirm"] = gr.Button("Yes, delete it", size="sm", variant="stop", visible=False,
                                           elem_id="voices-delete-confirm")
        with gr.Row():
            upload = gr.File(label="Import a voice (.npz)", file_types=[".npz"], type="filepath",
                             elem_id="voices-import")
            exported = gr.File(label="Exported (.npz and .json)", file_count="multiple", interactive=False,
                               elem_id="voices-exported")
        status = gr.Markdown("", elem_id="voices-status")
    return manage, pick, new_name, buttons, upload, exported, status


def ask_to_delete(name: Optional[str]) -> tuple:
    """(the question, the "Yes, delete it" button shown) when Delete is pressed: a voice is not deleted unasked."""
    if not name:
        return "**Not done:** choose a saved voice first.", gr.update(visible=False)
    return (f"Delete the saved voice **{html.escape(name)}**? It cannot be undone: press **Yes, delete it**.",
            gr.update(visible=True))


def kept_on_error(action, *args) -> dict:
    """``action(*args)``; a mistake (``OmniVoiceError``) becomes the answer's message and leaves every list as it
    was (raised, it would mark the Speak tab's voice list as a red "Error")."""
    try:
        return action(*args)
    except OmniVoiceError as exc:
        return {"message": f"**Not done:** {user_message(one_line(exc))}"}
    except gr.Error as exc:  # a handler wrapped in ui_errors: its message is the page's already
        return {"message": f"**Not done:** {exc.message}"}


def voice_list_update(result: dict):
    """The Speak tab's voice list after ``result``: unchanged when nothing was saved or changed."""
    if "voices" not in result:
        return gr.update()
    return gr.update(choices=[NO_VOICE] + result["voices"], value=result.get("speak_selected", result["selected"]))


def store_update(result: dict):
    return result["store"] if result.get("store") is not None else gr.update()


def manage_voice(studio: Studio, action: str, name: Optional[str], new_name: Optional[str] = None,
                 upload: Optional[str] = None, session: Optional[str] = None, browser=None,
                 owner: Optional[str] = None) -> dict:
    """Rename, delete, export or import a saved voice (in the visitor's browser in shared mode, else the voice
    folder): ``{"message", "voices", "selected", "store", "files"}``; an export's files are ``owner``'s."""
    if action != "import" and not name:
        raise InvalidInput("Pick a saved voice first (the list shows the voices saved in the Clone tab).")
    shared, store, files = studio.shared, None, None
    if action == "rename":
        new_name = clean_name(new_name or "")
        if shared:
            store, new_name = studio.browser_voices.rename(browser, name, new_name)
        else:
            new_name = studio.voices.rename(name, new_name, session)
        message, selected = f"Renamed **{html.escape(name)}** to **{html.escape(new_name)}**.", new_name
    elif action == "delete":
        if shared:
            studio.browser_voices.load(browser, name)  # says so when there is none
            store = studio.browser_voices.delete(browser, name)
        else:
            studio.voices.delete(name, session)
        message, selected = f"Deleted the voice **{html.escape(name)}**.", None
    elif action == "export":
        voice = studio.browser_voices.load(browser, name) if shared else studio.voices.load(name, session)
        target = studio.output_path(clean_name(name).replace(' ', '_'), ".npz", owner)
        studio.outputs.written_beside(target, ".json")  # export_voice's .json: the same token and owner
        files = [str(path) for path in export_voice(voice, target)]
        message, selected = f"Exported **{html.escape(name)}**: download the .npz (the voice) and the .json.", name
    elif action == "import":
        if not upload:
            raise InvalidInput("Choose a voice file (.npz) to import.")
        studio.check_upload(upload, "voice file")
        voice = Voice.load(upload, max_frames=studio.limits.max_reference_frames)
        asked = clean_name(new_name or voice.name or pathlib.Path(upload).stem)
        if shared:
            store, selected = studio.browser_voices.save(browser, voice, asked)
        else:
            selected = unique_name(asked, studio.voices.names(session))
            studio.voices.save(voice, selected, session)
        message = f"Imported the voice as **{html.escape(selected)}**; pick it in the Speak tab's voice list."
    else:
        raise InvalidInput(f"Unknown action {excerpt(action)}.")
    names = studio.browser_voices.names(store if store is not None else browser) if shared \
        else studio.voices.names(session)
    return {"message": message, "voices": names, "selected": selected, "store": store, "files": files,
            "speak_selected": selected or NO_VOICE}
