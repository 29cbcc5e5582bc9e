"""The generation controls of Speak and Clone, and of the /speak and /clone API, built from ``GenerationConfig``.

Every widget's default, valid range and help is the field's (``GenerationConfig``); its label, slider range,
step and place are the app's own description of the control (``control_specs.CONTROLS``): ``speed``,
``duration``, ``normalize_text`` and ``seed`` (``advanced=False``) sit in the main column, every other field is
generated under "Advanced".  A new ``GenerationConfig`` field therefore appears in both tabs and both API
endpoints with no edit here; give it a ``Control`` in ``control_specs.py`` to shape its widget.

The values come back as a ``dict`` (name -> value); ``generation_request`` turns them
into the engine's arguments: ``language``, ``instruct`` and a validated ``GenerationConfig``.
"""

from __future__ import annotations

import dataclasses
import inspect
import secrets
from typing import Any, Callable, Optional, cast

import gradio as gr
import numpy as np

from ..settings.generation import NORMALIZE_AUTO, GenerationConfig
from ..settings.limits import Limits
from ..text.languages import language_choices
from ..text.lexicon import Lexicon, as_lexicon
from ..text.descriptions import Description, read_description
from ..studio.variants import read_voice_description
from ..settings.presets import preset_values
from ..text.normalize import unavailable_note
from ..asr.scoring import jiwer_missing_note
from .control_specs import control, slider_range
from .owners import owner_of
from .design import AUTO, DESIGN_CATEGORIES, compose_instruct, design_widgets
from .speed_controls import APP_DEFAULTS, DEFAULT_PRESET, preset_choices, preset_controls, preset_of

NO_VOICE = "(none)"
#: the settings a reader sets first: on a phone they come right under the text (studio.css, ``ov-quick``)
QUICK = ["ov-quick"]
#: a setting applied when the voice is cloned, not when speaking: the Clone tab's "Clean the reference"
#: checkbox (the API's ``preprocess``) is its widget
CLONE_SETTINGS = ("preprocess_prompt",)
#: the loudness choices of the result and its downloads (LUFS; 0 = as generated, the exact output)
LOUDNESS_CHOICES = [("As generated", 0), ("-16 LUFS (podcasts)", -16), ("-23 LUFS (broadcast)", -23)]
#: /speak's and /clone's settings parameters in the order they had before GenerationConfig (positional callers
#: keep working); the other fields follow in the class's order
_API_FIRST = ("speed", "duration", "num_step", "guidance_scale", "t_shift", "position_temperature",
              "class_temperature", "layer_penalty_factor", "denoise", "postprocess", "seed")
#: the seed the controls show while "Random seed each run" is ticked
SEED_SHOWN = 0


def tab_settings() -> list[str]:
    """The ``GenerationConfig`` fields the tabs and the API expose (all but the clone-time ones)."""
    return [name for name in GenerationConfig.names() if name not in CLONE_SETTINGS]


def advanced_settings() -> list[str]:
    return [name for name in tab_settings() if control(name).advanced]


def api_settings() -> list[str]:
    names = tab_settings()
    return [n for n in _API_FIRST if n in names] + [n for n in names if n not in _API_FIRST]


def _element_id(prefix: str, name: str) -> str:
    return f"{prefix}-{name.replace('_', '-')}"


def setting_widget(name: str, prefix: str):
    """A slider (numbers) or a checkbox (booleans) for one ``GenerationConfig`` field."""
    setting, kind, default = GenerationConfig.setting(name), GenerationConfig.kind(name), GenerationConfig.default(name)
    default = APP_DEFAULTS.get(name, default)
    label, elem_id = control(name).label, _element_id(prefix, name)
    if kind is bool:
        return gr.Checkbox(value=default, label=label, info=setting.help, elem_id=elem_id)
    low, high, step = slider_range(name)
    return gr.Slider(low, high, value=low if default is None else default, step=step, label=label,
                     info=setting.help, elem_id=elem_id)


#: the choices of "Read numbers as words" (normalize_choice.py): by the text's language, always, never
NORMALIZE_CHOICES = [("English and Chinese texts", NORMALIZE_AUTO), ("Always", "on"), ("Never", "off")]


def normalize_widget(prefix: str):
    """"Read numbers as words": by the language (the default), always, never; the missing extra said in its help."""
    note = unavailable_note()
    info = ("English and Chinese texts (the language chosen, or else detected in the text): numbers, dates, money "
            "and units in words; other languages are read as written. Always: other languages' bare integers in "
            "words too (num2words). What was done is under the text box.")
    return gr.Radio(NORMALIZE_CHOICES, value=APP_DEFAULTS["normalize_text"],
                    label=control("normalize_text").label,
                    info=info if note is None else f"{info} {note}", elem_id=_element_id(prefix, "normalize_text"))


def generation_controls(prefix: str, with_voice: bool) -> dict:
    """Language, (saved voice), voice design, speed, duration, Advanced, seed: name -> component."""
    c: dict = {}
    c["language"] = gr.Dropdown([("Auto", AUTO)] + language_choices(), value=AUTO, label="Language",
                                filterable=True, info="Type to filter; Auto lets the model decide.",
                                elem_id=f"{prefix}-language", elem_classes=QUICK)
    if with_voice:
        with gr.Row(elem_classes=QUICK):
            c["voice"] = gr.Dropdown([NO_VOICE], value=NO_VOICE, label="Saved voice", scale=4,
                                     info="Voices saved in the Clone tab.", elem_id=f"{prefix}-voice")
            c["voice_refresh"] = gr.Button("↻", size="sm", scale=0, min_width=40, elem_id=f"{prefix}-voice-refresh")
    c.update(design_widgets(prefix, open_=with_voice))
    with gr.Row(elem_classes=QUICK):
        c["speed"] = setting_widget("speed", prefix)
        duration = GenerationConfig.setting("duration")
        c["duration"] = gr.Number(value=0, label=control("duration").label, minimum=0, maximum=duration.high,
                                  info=duration.help, elem_id=f"{prefix}-duration")
    c["normalize_text"] = normalize_widget(prefix)
    c["preset"] = gr.Radio(preset_choices(), value=DEFAULT_PRESET, label="Speed preset",
                           info="Sets the steps, guidance and prompt refresh under Advanced (change them there to "
                                "override). Balanced and Fast keep a cloned voice's prompt and reference (4 s or "
                                "longer) between refreshes (every 8th step, Fast every 4th): an approximation; a design runs "
                                "whole; Reference is exact. The "
                                "estimated time of each preset for your text is under the text box.",
                           elem_id=f"{prefix}-preset", elem_classes=QUICK)
    with gr.Accordion("Advanced", open=False, elem_id=f"{prefix}-advanced"):
        names = advanced_settings()
        for start in range(0, len(names), 3):
            with gr.Row():
                for name in names[start:start + 3]:
                    c[name] = setting_widget(name, prefix)
    _wire_preset(c)
    with gr.Row(equal_height=True):
        c["seed"] = gr.Number(value=SEED_SHOWN, label=control("seed").label, precision=0, minimum=0,
                              elem_id=f"{prefix}-seed")
        c["randomize"] = gr.Checkbox(value=True, label="Random seed each run (the seed used is written back)",
                                     elem_id=f"{prefix}-randomize")
        c["dice"] = gr.Button("New seed", size="sm", elem_id=f"{prefix}-dice")
    with gr.Row(equal_height=True):
        missing = jiwer_missing_note()   # greyed out up front, with what to install, rather than refused on Speak
        c["guard"] = setting_widget("guard", prefix) if missing is None else gr.Checkbox(
            value=False, interactive=False, label=control("guard").label, info=missing,
            elem_id=_element_id(prefix, "guard"))
        loudness = GenerationConfig.setting("loudness")
        c["loudness"] = gr.Dropdown(LOUDNESS_CHOICES, value=0, label=control("loudness").label, info=loudness.help,
                                    elem_id=f"{prefix}-loudness")
    c["autoplay"] = gr.Checkbox(value=True, label="Autoplay the result (when it was not already played chunk by chunk)",
                                elem_id=f"{prefix}-autoplay")
    c["dice"].click(lambda: (int(np.random.default_rng().integers(0, 2**31)), False),
                    outputs=[c["seed"], c["randomize"]], api_visibility="private", queue=False)
    return c


def _wire_preset(c: dict) -> None:
    """The preset sets the advanced steps, guidance and prompt refresh; changing those by hand shows which preset
    (or Custom)."""
    tuned = [c[name] for name in preset_controls(DEFAULT_PRESET)]

    def apply(name):
        values = preset_controls(name)
        return [gr.update(value=values[n]) if n in values else gr.update() for n in preset_controls(DEFAULT_PRESET)]

    c["preset"].input(apply, inputs=c["preset"], outputs=tuned, queue=False, api_visibility="private")
    for widget in tuned:
        widget.input(lambda *values: preset_of(dict(zip(preset_controls(DEFAULT_PRESET), values))), inputs=tuned,
                     outputs=c["preset"], queue=False, api_visibility="private")


#: control names whose values a handler reads (the rest are buttons and read-outs)
VALUE_NAMES = ("language", "voice", *DESIGN_CATEGORIES, "instruct", "randomize", "autoplay", *tab_settings())


def value_inputs(controls: dict) -> set:
    """The components whose values ``values_of`` reads (a Gradio ``inputs`` set)."""
    return {controls[name] for name in VALUE_NAMES if name in controls}


def values_of(controls: dict, data: dict) -> dict:
    """Gradio's ``{component: value}`` -> ``{name: value}`` for the controls."""
    return {name: data[controls[name]] for name in VALUE_NAMES if name in controls and controls[name] in data}


# --- values -> the engine's arguments ----------------------------------------------------

@dataclasses.dataclass(frozen=True)
class GenerationRequest:
    """What the controls ask for: ``engine.stream(text, language=..., instruct=..., config=...)``."""

    language: Optional[str]
    description: Description      # the voice design, read from the dropdowns and the free text
    config: GenerationConfig
    pronunciations: Optional[Lexicon] = None   # the owner's lexicon (studio.lexicons), or the API's own

    @property
    def instruct(self) -> Optional[str]:
        return self.description.instruct

    def engine_arguments(self) -> dict:
        return dict(language=self.language, instruct=self.instruct, config=self.config,
                    pronunciations=self.pronunciations)


def styled_request(values: dict, limits: Limits, voice) -> tuple[Any, GenerationRequest]:
    """(the voice to speak with, ``generation_request``): a word of the description that is one of a saved
    voice's style tags speaks with that clip (``studio.variants``), and is not read as a design word."""
    request = generation_request(values, limits)
    if voice is None or not voice.variants:
        return voice, request
    voice, description = read_voice_description(voice, request.description.text, limits=limits)
    return voice, dataclasses.replace(request, description=description)


def generation_request(values: dict, limits: Optional[Limits] = None) -> GenerationRequest:
    """Control (or API) values -> a validated request; the seed is drawn here when it is to be random.

    ``duration`` 0 or empty means automatic; ``seed`` empty or negative, or ``randomize``, means a new
    seed.  A bad value is an ``InvalidInput`` naming the setting.  The voice design is read leniently
    (``text.descriptions``), within ``limits``."""
    settings = {name: values[name] for name in tab_settings() if name in values}
    if str(values.get("preset") or "").strip():  # the API's preset: a setting the caller changed still wins
        settings.update({name: value for name, value in preset_values(values["preset"]).items()
                         if settings.get(name, _api_default(name)) == _api_default(name)})
    for automatic in ("duration", "loudness"):  # 0 or empty: automatic length, the loudness as generated
        if settings.get(automatic) in (0, 0.0, "", "0"):
            settings[automatic] = None
    seed = settings.get("seed")
    if values.get("randomize", True) or seed in (None, "") or (isinstance(seed, (int, float)) and seed < 0):
        settings["seed"] = secrets.randbelow(2**31)
    config = GenerationConfig.from_mapping(settings).validate()
    language = str(values.get("language") or "").strip()
    return GenerationRequest(language=None if language.lower() in ("", "auto") else language,
                             description=read_description(compose_instruct(values), limits=limits), config=config,
                             pronunciations=as_lexicon(values.get("pronunciations")) or None)


# --- the API's parameters ------------------------------------------------------------------

def _api_default(name: str) -> Any:
    default = GenerationConfig.default(name)
    if name in ("duration", "loudness"):
        return 0.0 if default is None else default   # 0 = automatic / as generated
    if name == "seed":
        return -1 if default is None else default    # negative = a new seed each call
    return default


def api_setting_inputs() -> list:
    """Hidden components for the API's ``language``, ``instruct`` and settings parameters (with defaults)."""
    inputs = [gr.Textbox(value=AUTO, label="language"), gr.Textbox(value="", label="instruct")]
    for name in api_settings():
        kind = GenerationConfig.kind(name)
        if kind is bool:
            inputs.append(gr.Checkbox(value=_api_default(name), label=name))
        else:
            inputs.append(gr.Number(value=_api_default(name), label=name, precision=0 if kind is int else None))
    return inputs + [gr.Textbox(value="", label="preset")]  # last: positional callers' settings keep their places


def api_function(name: str, doc: str, leading: list[tuple[str, Any]],
                 handler: Callable[[dict, Optional[str], Optional[str]], Any], with_session: bool = False,
                 trailing: list[tuple[str, Any]] = ()) -> Callable:
    """A function for a named endpoint whose parameters are ``leading`` (name, default; ``inspect.Parameter.empty``
    for the required one) then ``language``, ``instruct``, every setting of ``api_settings()``, ``preset`` and
    ``trailing`` (the endpoint's own, after the shared ones so positional callers keep their places).

    ``handler(values, session, owner)`` gets ``{parameter: value}`` (with ``randomize`` set from the seed), the
    session hash (with ``with_session``, else None) and the caller's owner token (``owners.owner_of``: whose the
    output files are); the signature is built here so Gradio names the parameters and a new setting becomes a
    parameter by itself."""
    names = [n for n, _ in leading] + ["language", "instruct"] + api_settings() + ["preset"] + [n for n, _ in trailing]
    defaults = ([d for _, d in leading] + [AUTO, ""] + [_api_default(n) for n in api_settings()] + [""]
                + [d for _, d in trailing])
    parameters = [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=d)
                  for n, d in zip(names, defaults)]
    parameters.append(inspect.Parameter("request", inspect.Parameter.POSITIONAL_OR_KEYWORD, default=None,
                                        annotation=gr.Request))  # Gradio fills it in; no API parameter

    def unpack(args) -> tuple[dict, Optional[str], Optional[str]]:
        values = dict(zip(names, args))
        seed = values.get("seed")
        values["randomize"] = seed is None or seed < 0
        request = args[len(names)] if len(args) > len(names) else None
        return values, getattr(request, "session_hash", None) if with_session else None, owner_of(request)

    if inspect.iscoroutinefunction(handler):  # cancelling the call cancels the awaiting task (and the job)
        async def endpoint(*args):
            return await handler(*unpack(args))
    else:
        def endpoint(*args):
            return handler(*unpack(args))

    endpoint.__name__ = endpoint.__qualname__ = name
    endpoint.__doc__ = doc
    cast(Any, endpoint).__signature__ = inspect.Signature(parameters)  # what Gradio reads for the API's inputs
    endpoint.__annotations__ = {"request": gr.Request}
    return endpoint
