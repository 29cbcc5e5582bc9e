"""The Gradio Blocks of the app: tabs Speak, Clone, Codec, Benchmark, Model, and the API endpoints.

The layout only wires components to ``handlers``; every handler is a plain
function of a ``Studio``.  Generations share one concurrency group ("engine",
one at a time: a CPU model is not sped up by running two), the queue is
bounded, and every API endpoint (/speak, /clone, /codec, /decode, /benchmark)
has every parameter but its main input defaulted.
"""

from __future__ import annotations

import json
import pathlib
from typing import Optional

import gradio as gr
import numpy as np

from ..hub import DEFAULT_REPO, PRECISIONS
from ..languages import language_choices
from ..text import NONVERBAL_TAGS
from . import handlers as h
from .models import available_providers

ASSETS = pathlib.Path(__file__).resolve().parents[2] / "assets"
ENGINE_GROUP = "engine"
TITLE = "OmniVoice ONNX Studio"
INTRO = ("Zero-shot text-to-speech in 600+ languages with [OmniVoice](https://github.com/k2-fsa/OmniVoice), "
         "run on ONNX Runtime. Watch the 8 × T code grid fill in step by step while it speaks.")


def _asset(name: str, default: str = "") -> str:
    path = ASSETS / name
    return path.read_text(encoding="utf-8") if path.is_file() else default


def css() -> str:
    return _asset("studio.css")


def _examples() -> list[list[str]]:
    try:
        return json.loads(_asset("examples.json", "{}")).get("speak", [])
    except json.JSONDecodeError:
        return []


def _session(request: Optional[gr.Request]) -> Optional[str]:
    return getattr(request, "session_hash", None) if request is not None else None


def _insert_tag_js(elem_id: str, tag: str) -> str:
    """JS that inserts ``[tag]`` at the text box's caret (a textarea keeps it after losing focus), or at the
    end when the caret was never placed."""
    return f"""(value) => {{
        const box = document.querySelector('#{elem_id} textarea');
        const text = value || '';
        const tag = '[{tag}]';
        const at = box ? box.selectionStart : null;
        if (at === null || at === undefined || at === 0 || at > text.length) {{
            return text + (text && !text.endsWith(' ') ? ' ' : '') + tag;
        }}
        return text.slice(0, at) + tag + text.slice(at);
    }}"""


# --- shared pieces -------------------------------------------------------------------------

def _text_block(prefix: str, label: str, placeholder: str) -> dict:
    parts = {}
    parts["text"] = gr.Textbox(label=label, lines=4, max_lines=12, placeholder=placeholder,
                               elem_id=f"{prefix}-text")
    parts["text_info"] = gr.Markdown("0 characters", elem_id=f"{prefix}-text-info")
    with gr.Row(elem_classes="ov-tags"):
        for tag in NONVERBAL_TAGS:
            button = gr.Button(f"[{tag}]", size="sm", variant="secondary", min_width=0)
            button.click(None, inputs=parts["text"], outputs=parts["text"],
                         js=_insert_tag_js(f"{prefix}-text", tag), api_visibility="private")
    return parts


def _controls(prefix: str, with_voice: bool) -> dict:
    """Language, voice design, saved voice, speed, duration, Advanced, seed: name -> component."""
    c: dict = {}
    d = h.CONTROL_DEFAULTS
    c["language"] = gr.Dropdown([("Auto", h.AUTO)] + language_choices(), value=h.AUTO, label="Language",
                                filterable=True, info="Type to filter; Auto lets the model decide.",
                                elem_id=f"{prefix}-language")
    if with_voice:
        with gr.Row():
            c["voice"] = gr.Dropdown([h.NO_VOICE], value=h.NO_VOICE, label="Saved voice", scale=4,
                                     info="Voices saved in the Clone tab.", elem_id=f"{prefix}-voice")
            c["voice_refresh"] = gr.Button("↻", size="sm", scale=0, min_width=40)
    with gr.Accordion("Voice design", open=with_voice, elem_id=f"{prefix}-design"):
        choices = h.design_choices()
        with gr.Row():
            for name in ("gender", "age", "pitch"):
                c[name] = gr.Dropdown(choices[name], value=h.AUTO, label=name.capitalize(), min_width=120)
        with gr.Row():
            c["style"] = gr.Dropdown(choices["style"], value=h.AUTO, label="Style", min_width=120)
            c["accent"] = gr.Dropdown(choices["accent"], value=h.AUTO, label="English accent", min_width=120)
            c["dialect"] = gr.Dropdown(choices["dialect"], value=h.AUTO, label="Chinese dialect", min_width=120)
        c["instruct"] = gr.Textbox(label="Instruct (free text)", placeholder="e.g. female, low pitch, british accent",
                                   info="Comma-separated items; checked as you type.")
        c["instruct_check"] = gr.Markdown("Voice design: *none* (the model picks a voice).")
    with gr.Row():
        c["speed"] = gr.Slider(0.5, 2.0, value=d["speed"], step=0.05, label="Speed")
        c["duration"] = gr.Number(value=d["duration"], label="Duration (s, 0 = automatic)", minimum=0, maximum=600)
    with gr.Accordion("Advanced", open=False, elem_id=f"{prefix}-advanced"):
        with gr.Row():
            c["num_step"] = gr.Slider(1, 64, value=d["num_step"], step=1, label="Steps")
            c["guidance_scale"] = gr.Slider(0.0, 5.0, value=d["guidance_scale"], step=0.1, label="Guidance scale")
            c["t_shift"] = gr.Slider(0.01, 1.0, value=d["t_shift"], step=0.01, label="t_shift")
        with gr.Row():
            c["position_temperature"] = gr.Slider(0.0, 20.0, value=d["position_temperature"], step=0.5,
                                                  label="Position temperature")
            c["class_temperature"] = gr.Slider(0.0, 2.0, value=d["class_temperature"], step=0.05,
                                               label="Class temperature")
            c["layer_penalty_factor"] = gr.Slider(0.0, 20.0, value=d["layer_penalty_factor"], step=0.5,
                                                  label="Layer penalty")
        with gr.Row():
            c["denoise"] = gr.Checkbox(value=d["denoise"], label="Denoise")
            c["postprocess"] = gr.Checkbox(value=d["postprocess"], label="Post-process (trim silence, loudness)")
    with gr.Row(equal_height=True):
        c["seed"] = gr.Number(value=d["seed"], label="Seed", precision=0, minimum=0, elem_id=f"{prefix}-seed")
        c["randomize"] = gr.Checkbox(value=True, label="Random seed each run (the seed used is written back)")
        c["dice"] = gr.Button("New seed", size="sm", elem_id=f"{prefix}-dice")
    c["dice"].click(lambda: (int(np.random.default_rng().integers(0, 2**31)), False),
                    outputs=[c["seed"], c["randomize"]], api_visibility="private", queue=False)
    for name, comp in c.items():  # ids for styling and the browser test
        if getattr(comp, "elem_id", None) is None:
            comp.elem_id = f"{prefix}-{name.replace('_', '-')}"
    return c


def _output_panel(prefix: str) -> dict:
    o = {}
    o["progress"] = gr.HTML(h.idle_progress(), elem_id=f"{prefix}-progress")
    o["grid"] = gr.Image(label="Code grid (8 codebooks × frames): dark = undecided, white = decided this step",
                         type="pil", format="png", interactive=False, elem_id=f"{prefix}-grid", height=150,
                         buttons=["download"])
    o["chunks"] = gr.HTML("", elem_id=f"{prefix}-chunks", js_on_load=_asset("chunk_player.js"))
    o["audio"] = gr.Audio(label="Result", type="filepath", interactive=False, elem_id=f"{prefix}-audio",
                          buttons=["download"])
    o["files"] = gr.File(label="Downloads: WAV, FLAC, codes (.npz)", file_count="multiple", interactive=False,
                         elem_id=f"{prefix}-files")
    o["info"] = gr.Markdown("", elem_id=f"{prefix}-info")
    return o


VALUE_NAMES = [n for n in h.CONTROL_DEFAULTS]


def _values(controls: dict, data: dict) -> dict:
    return {name: data[controls[name]] for name in VALUE_NAMES if name in controls and controls[name] in data}


def _inputs(controls: dict) -> set:
    return {controls[name] for name in VALUE_NAMES if name in controls}


def _emit(mapping: dict, update: dict) -> dict:
    """Handler update (names) -> Gradio update (components)."""
    return {mapping[name]: value for name, value in update.items() if name in mapping}


# --- the app ------------------------------------------------------------------------------

def build_app(studio: h.Studio, model_spec: Optional[str] = None, precision: Optional[str] = None,
              provider: str = "cpu", queue_size: int = 16) -> gr.Blocks:
    """The Blocks (queue configured).  Launch with ``launch(css=layout.css(), max_file_size=...)``."""
    with gr.Blocks(title=TITLE, analytics_enabled=False, delete_cache=(3600, 6 * 3600)) as demo:
        history = gr.State([])
        gr.Markdown(f"# {TITLE}\n{INTRO}")
        bar = gr.HTML(h.model_bar(studio), elem_id="model-bar")
        timer = gr.Timer(1.0, active=False)

        with gr.Tabs():
            # ---------------------------------------------------------------- Speak
            with gr.Tab("Speak", id="speak"):
                with gr.Row():
                    with gr.Column(scale=3):
                        speak_text = _text_block("speak", "Text", "Type what to say…")
                        with gr.Row():
                            speak_go = gr.Button("Speak", variant="primary", elem_id="speak-go", scale=3)
                            speak_stop = gr.Button("Stop", variant="stop", elem_id="speak-stop", scale=1)
                        speak_o = _output_panel("speak")
                    with gr.Column(scale=2):
                        speak_c = _controls("speak", with_voice=True)
                examples = _examples()
                if examples:
                    gr.Examples(examples, inputs=[speak_text["text"], speak_c["language"]], label="Examples")

            # ---------------------------------------------------------------- Clone
            with gr.Tab("Clone", id="clone"):
                with gr.Row():
                    with gr.Column(scale=3):
                        clone_ref = gr.Audio(sources=["upload", "microphone"], type="filepath",
                                             label="Reference voice (3-10 s of one speaker; wav, flac, mp3, ogg)",
                                             elem_id="clone-ref")
                        clone_note = gr.Markdown(h.reference_note(studio, None), elem_id="clone-note")
                        clone_transcript = gr.Textbox(label="Transcript of the reference", lines=2,
                                                      placeholder="Exactly what is said in the clip",
                                                      elem_id="clone-transcript")
                        with gr.Row():
                            clone_consent = gr.Checkbox(False, label="I have the right to use this voice",
                                                        elem_id="clone-consent")
                            clone_pre = gr.Checkbox(True, label="Clean the reference (shorten silences)")
                        with gr.Row(equal_height=True):
                            clone_name = gr.Textbox(label="Voice name", placeholder="e.g. my voice", scale=3,
                                                    elem_id="clone-name")
                            clone_save = gr.Button("Save voice", scale=1, elem_id="clone-save")
                        clone_saved = gr.Markdown("", elem_id="clone-saved")
                        clone_text = _text_block("clone", "Text to say in this voice", "Type what to say…")
                        with gr.Row():
                            clone_go = gr.Button("Clone and speak", variant="primary", elem_id="clone-go", scale=3)
                            clone_stop = gr.Button("Stop", variant="stop", elem_id="clone-stop", scale=1)
                        clone_o = _output_panel("clone")
                    with gr.Column(scale=2):
                        clone_c = _controls("clone", with_voice=False)

            # ---------------------------------------------------------------- Codec
            with gr.Tab("Codec", id="codec"):
                gr.Markdown("Audio → 8 × T codes (25 frames per second, 1024 values each) → audio, with the "
                            "Higgs audio codec the model speaks in.")
                with gr.Row():
                    codec_in = gr.Audio(sources=["upload", "microphone"], type="filepath", label="Input audio",
                                        elem_id="codec-in")
                    codec_out = gr.Audio(type="filepath", label="Decoded from the codes", interactive=False,
                                         elem_id="codec-out", buttons=["download"])
                codec_go = gr.Button("Encode → decode", variant="primary", elem_id="codec-go")
                codec_grid = gr.Image(label="Codes (8 × T)", type="pil", format="png", interactive=False,
                                      elem_id="codec-grid", height=150)
                codec_stats = gr.Markdown("", elem_id="codec-stats")
                with gr.Row():
                    codec_codes = gr.File(label="Codes (.npz) to download", interactive=False,
                                          elem_id="codec-codes")
                    with gr.Column():
                        codec_upload = gr.File(label="Upload codes (.npz) to decode", file_types=[".npz"],
                                               elem_id="codec-upload")
                        codec_decode_btn = gr.Button("Decode uploaded codes")

            # ---------------------------------------------------------------- Benchmark
            with gr.Tab("Benchmark", id="benchmark"):
                gr.Markdown("Times every stage of a generation on this machine for the loaded models (load more "
                            "precisions in the Model tab to compare them side by side).")
                with gr.Row():
                    bench_models = gr.CheckboxGroup(studio.models.labels(), label="Models", scale=3)
                    bench_length = gr.Radio(["short", "medium", "long"], value="short", label="Text length")
                    bench_steps = gr.Slider(1, 64, value=16, step=1, label="Steps")
                    bench_repeats = gr.Slider(1, 10, value=1, step=1, label="Repetitions")
                bench_go = gr.Button("Run benchmark", variant="primary", elem_id="bench-go")
                bench_machine = gr.Markdown("")
                bench_table = gr.Dataframe(headers=h.BENCH_COLUMNS, interactive=False, label="Results (seconds; "
                                           "per step in ms; RTF < 1 is faster than real time)", elem_id="bench-table")
                bench_chart = gr.Image(label="Seconds per stage", type="pil", format="png", interactive=False,
                                       elem_id="bench-chart")
                bench_csv = gr.File(label="CSV", interactive=False, elem_id="bench-csv")

            # ---------------------------------------------------------------- Model
            with gr.Tab("Model", id="model"):
                gr.Markdown("Choose the ONNX model: a local folder, or a Hub repo (`owner/name[@revision]`; "
                            f"default `{DEFAULT_REPO}`). Loading downloads it when needed (with resumption), "
                            "repairs the published backbone's causal attention, or builds it from the PyTorch "
                            "checkpoint (needs the convert extras).")
                with gr.Row():
                    model_spec_box = gr.Textbox(value=model_spec or DEFAULT_REPO, label="Model folder or Hub repo",
                                                scale=3, elem_id="model-spec")
                    model_precision = gr.Radio(["auto"] + list(PRECISIONS), value=precision or "auto",
                                               label="Precision",
                                               info="auto: a model folder's own, else int4 from the Hub")
                    model_provider = gr.Radio(["cpu", "cuda"], value=provider, label="Provider",
                                              info=f"available here: {', '.join(available_providers())}")
                with gr.Row():
                    model_offline = gr.Checkbox(False, label="Offline (use the cache only)")
                    model_build = gr.Checkbox(False, label="Build from the PyTorch checkpoint")
                    model_load = gr.Button("Load", variant="primary", elem_id="model-load")
                with gr.Row():
                    model_active = gr.Dropdown(studio.models.labels(), value=studio.models.active,
                                               label="Active model (Speak, Clone, Codec)", scale=3)
                    model_unload = gr.Button("Unload", scale=1)
                model_info = gr.Markdown(h.model_details(studio), elem_id="model-details")

        with gr.Accordion("History of this session", open=False):
            history_table = gr.Dataframe(headers=h.HISTORY_HEADERS, interactive=False, elem_id="history")
            history_audio = gr.Audio(type="filepath", label="Play from the history (click a row)", interactive=False)

        # ------------------------------------------------------------------ events: Speak / Clone
        def wire_generation(prefix, text_parts, controls, outputs, go, stop, fn):
            names = dict(outputs, seed=controls["seed"], history=history, history_table=history_table)
            info_inputs = _inputs(controls) | {text_parts["text"]}

            def info(data, request: gr.Request):
                values = _values(controls, data)
                voice = None
                if "voice" in controls:
                    try:
                        voice = h.saved_voice(studio, values.get("voice"), _session(request))
                    except ValueError:
                        voice = None
                return h.text_info(studio, data[text_parts["text"]], values, voice)

            for comp in [text_parts["text"], controls["language"], controls["speed"], controls["duration"],
                         controls["num_step"]] + ([controls["voice"]] if "voice" in controls else []):
                comp.change(info, inputs=info_inputs, outputs=text_parts["text_info"], queue=False,
                            show_progress="hidden", api_visibility="private")
            design = [controls[n] for n in h.DESIGN_CATEGORIES + ("instruct",)]
            for comp in design:
                comp.change(lambda data: h.check_instruct(_values(controls, data), data[text_parts["text"]]),
                            inputs=set(design) | {text_parts["text"]}, outputs=controls["instruct_check"],
                            queue=False, show_progress="hidden", api_visibility="private")
            event = go.click(fn, inputs=info_inputs | fn.extra_inputs | {history}, outputs=list(names.values()),
                             concurrency_id=ENGINE_GROUP, concurrency_limit=1, show_progress="minimal",
                             show_progress_on=[outputs["info"]], api_visibility="private")
            event.then(info, inputs=info_inputs, outputs=text_parts["text_info"], show_progress="hidden",
                       api_visibility="private", queue=False)
            # cancel first (Gradio closes the handler's generator, which closes the engine's within a
            # step), then say so once the cancelled run can send nothing more
            stop.click(None, cancels=[event], api_visibility="private", queue=False).then(
                lambda: h.progress_html(0.0, "Stopped.", "The generation was cancelled.", state="idle"),
                outputs=outputs["progress"], api_visibility="private", queue=False, show_progress="hidden")
            fn.names = names

        speak_names = {}

        def speak_fn(data, request: gr.Request):
            values = _values(speak_c, data)
            for update in h.speak(studio, data[speak_text["text"]], values, data[history], _session(request)):
                yield _emit(speak_names, update)

        speak_fn.extra_inputs = set()
        wire_generation("speak", speak_text, speak_c, speak_o, speak_go, speak_stop, speak_fn)
        speak_names.update(speak_fn.names)

        clone_names = {}

        def clone_fn(data):
            values = _values(clone_c, data)
            for update in h.clone(studio, data[clone_ref], data[clone_transcript], data[clone_consent],
                                  data[clone_text["text"]], values, data[clone_pre], data[history]):
                yield _emit(clone_names, update)

        clone_fn.extra_inputs = {clone_ref, clone_transcript, clone_consent, clone_pre}
        wire_generation("clone", clone_text, clone_c, clone_o, clone_go, clone_stop, clone_fn)
        clone_names.update(clone_fn.names)

        def refresh_voices(current, request: gr.Request):
            names = h.voice_names(studio, _session(request))
            return gr.update(choices=names, value=current if current in names else h.NO_VOICE)

        speak_c["voice_refresh"].click(refresh_voices, inputs=speak_c["voice"], outputs=speak_c["voice"],
                                       queue=False, api_visibility="private")
        clone_ref.change(lambda path: h.reference_note(studio, path), inputs=clone_ref, outputs=clone_note,
                         api_visibility="private", show_progress="hidden")

        def save_fn(ref, transcript, consent, name, pre, request: gr.Request):
            result = h.save_voice(studio, ref, transcript, consent, name, pre, _session(request))
            return result["message"], gr.update(choices=[h.NO_VOICE] + result["voices"], value=result["selected"])

        clone_save.click(save_fn, inputs=[clone_ref, clone_transcript, clone_consent, clone_name, clone_pre],
                         outputs=[clone_saved, speak_c["voice"]], concurrency_id=ENGINE_GROUP, concurrency_limit=1,
                         api_visibility="private")

        def play_history(hist, evt: gr.SelectData):
            rows = list(reversed(hist or []))
            index = evt.index[0] if isinstance(evt.index, (list, tuple)) else evt.index
            return rows[index]["wav"] if 0 <= index < len(rows) else None

        history_table.select(play_history, inputs=history, outputs=history_audio, api_visibility="private")

        # ------------------------------------------------------------------ events: Codec
        codec_outputs = {"output": codec_out, "grid": codec_grid, "stats": codec_stats, "codes_file": codec_codes}
        codec_go.click(lambda path: _emit(codec_outputs, h.codec_roundtrip(studio, path)), inputs=codec_in,
                       outputs=list(codec_outputs.values()), concurrency_id=ENGINE_GROUP, concurrency_limit=1,
                       api_visibility="private")
        codec_decode_btn.click(lambda path: _emit(codec_outputs, h.codec_decode(studio, path)), inputs=codec_upload,
                               outputs=list(codec_outputs.values()), concurrency_id=ENGINE_GROUP,
                               concurrency_limit=1, api_visibility="private")

        # ------------------------------------------------------------------ events: Benchmark
        def bench_fn(labels, length, steps, repeats, progress=gr.Progress()):
            result = h.benchmark(studio, labels, length, steps, repeats, progress=progress)
            return result["table"], result["chart"], result["machine"], result["csv"]

        bench_go.click(bench_fn, inputs=[bench_models, bench_length, bench_steps, bench_repeats],
                       outputs=[bench_table, bench_chart, bench_machine, bench_csv], concurrency_id=ENGINE_GROUP,
                       concurrency_limit=1, api_visibility="private")

        # ------------------------------------------------------------------ events: Model
        def model_view():
            labels = studio.models.labels()
            return (h.model_bar(studio), h.model_details(studio),
                    gr.update(choices=labels, value=studio.models.active),
                    gr.update(choices=labels), gr.Timer(active=studio.models.loading))

        model_outputs = [bar, model_info, model_active, bench_models, timer]

        def load_fn(spec, prec, prov, offline, build):
            if not studio.models.start_load(spec.strip() or None, prec, prov, offline or None, build):
                gr.Warning("A model is loading already; wait for it to finish.")
            return model_view()

        model_load.click(load_fn, inputs=[model_spec_box, model_precision, model_provider, model_offline, model_build],
                         outputs=model_outputs, api_visibility="private", concurrency_id="model-load",
                         concurrency_limit=1)
        timer.tick(model_view, outputs=model_outputs, api_visibility="private", show_progress="hidden", queue=False)

        def set_active(label):
            if label:
                h.user_errors(studio.models.set_active)(label)
            return model_view()

        model_active.input(set_active, inputs=model_active, outputs=model_outputs, api_visibility="private",
                           queue=False)

        def unload(label):
            if label:
                studio.models.unload(label)
            return model_view()

        model_unload.click(unload, inputs=model_active, outputs=model_outputs, api_visibility="private", queue=False)

        def on_page_load(request: gr.Request):
            names = h.voice_names(studio, _session(request))
            return model_view() + (gr.update(choices=names, value=h.NO_VOICE),)

        demo.load(on_page_load, outputs=model_outputs + [speak_c["voice"]], api_visibility="private", queue=False)

        # ------------------------------------------------------------------ the API
        _api_endpoints(studio)

    demo.queue(max_size=queue_size, default_concurrency_limit=1)
    return demo


# --- API endpoints --------------------------------------------------------------------------

def _run_to_end(generator) -> dict:
    final: dict = {}
    for update in generator:
        final.update(update)
    if "audio" not in final:
        raise gr.Error("The generation was stopped before it finished.", print_exception=False)
    return final


def _api_endpoints(studio: h.Studio) -> None:
    """Hidden components and buttons behind /speak, /clone, /codec, /decode and /benchmark."""
    d = h.CONTROL_DEFAULTS
    with gr.Column(visible=False):
        def controls():
            return [gr.Textbox(value=h.AUTO, label="language"), gr.Textbox(value="", label="instruct"),
                    gr.Number(value=d["speed"], label="speed"), gr.Number(value=d["duration"], label="duration"),
                    gr.Number(value=d["num_step"], label="num_step", precision=0),
                    gr.Number(value=d["guidance_scale"], label="guidance_scale"),
                    gr.Number(value=d["t_shift"], label="t_shift"),
                    gr.Number(value=d["position_temperature"], label="position_temperature"),
                    gr.Number(value=d["class_temperature"], label="class_temperature"),
                    gr.Number(value=d["layer_penalty_factor"], label="layer_penalty_factor"),
                    gr.Checkbox(value=d["denoise"], label="denoise"),
                    gr.Checkbox(value=d["postprocess"], label="postprocess"),
                    gr.Number(value=-1, label="seed", precision=0)]

        def values(language, instruct, speed, duration, num_step, guidance_scale, t_shift, position_temperature,
                   class_temperature, layer_penalty_factor, denoise, postprocess, seed):
            return dict(language=language, instruct=instruct, speed=speed, duration=duration, num_step=num_step,
                        guidance_scale=guidance_scale, t_shift=t_shift, position_temperature=position_temperature,
                        class_temperature=class_temperature, layer_penalty_factor=layer_penalty_factor,
                        denoise=denoise, postprocess=postprocess, seed=seed,
                        randomize=seed is None or seed < 0)

        # /speak
        speak_inputs = [gr.Textbox(label="text"), gr.Textbox(value="", label="voice")] + controls()
        speak_audio = gr.Audio(type="filepath", label="audio")

        def speak(text, voice="", language=h.AUTO, instruct="", speed=1.0, duration=0.0, num_step=32,
                  guidance_scale=2.0, t_shift=0.1, position_temperature=5.0, class_temperature=0.0,
                  layer_penalty_factor=5.0, denoise=True, postprocess=True, seed=-1, request: gr.Request = None):
            """Text (with an optional saved voice and voice design) -> speech (24 kHz WAV)."""
            v = values(language, instruct, speed, duration, num_step, guidance_scale, t_shift, position_temperature,
                       class_temperature, layer_penalty_factor, denoise, postprocess, seed)
            v["voice"] = voice or h.NO_VOICE
            return _run_to_end(h.speak(studio, text, v, [], _session(request)))["audio"]

        gr.Button(visible=False).click(speak, inputs=speak_inputs, outputs=speak_audio, api_name="speak",
                                       concurrency_id=ENGINE_GROUP, concurrency_limit=1)

        # /clone
        clone_inputs = [gr.Audio(type="filepath", label="reference"), gr.Textbox(value="", label="transcript"),
                        gr.Textbox(value="", label="text"), gr.Checkbox(value=False, label="consent"),
                        gr.Checkbox(value=True, label="preprocess")] + controls()
        clone_audio = gr.Audio(type="filepath", label="audio")

        def clone(reference, transcript="", text="", consent=False, preprocess=True, language=h.AUTO, instruct="",
                  speed=1.0, duration=0.0, num_step=32, guidance_scale=2.0, t_shift=0.1, position_temperature=5.0,
                  class_temperature=0.0, layer_penalty_factor=5.0, denoise=True, postprocess=True, seed=-1):
            """A reference clip and its transcript (consent=True: you have the right to use this voice) + text ->
            speech in that voice."""
            v = values(language, instruct, speed, duration, num_step, guidance_scale, t_shift, position_temperature,
                       class_temperature, layer_penalty_factor, denoise, postprocess, seed)
            return _run_to_end(h.clone(studio, reference, transcript, consent, text, v, preprocess, []))["audio"]

        gr.Button(visible=False).click(clone, inputs=clone_inputs, outputs=clone_audio, api_name="clone",
                                       concurrency_id=ENGINE_GROUP, concurrency_limit=1)

        # /codec and /decode
        codec_audio_in = gr.Audio(type="filepath", label="audio")
        codec_outs = [gr.Audio(type="filepath", label="decoded"), gr.File(label="codes"), gr.JSON(label="metrics")]

        def codec(audio):
            """Audio -> codes -> audio: the decoded audio, the codes (.npz) and the metrics (SNR, log-mel distance,
            frames, bitrate, timings)."""
            result = h.codec_roundtrip(studio, audio)
            return result["output"], result["codes_file"], result["metrics"]

        gr.Button(visible=False).click(codec, inputs=codec_audio_in, outputs=codec_outs, api_name="codec",
                                       concurrency_id=ENGINE_GROUP, concurrency_limit=1)

        decode_in = gr.File(label="codes")
        decode_out = gr.Audio(type="filepath", label="audio")

        def decode(codes):
            """Codes (.npz from /codec or /speak's downloads) -> audio."""
            return h.codec_decode(studio, codes)["output"]

        gr.Button(visible=False).click(decode, inputs=decode_in, outputs=decode_out, api_name="decode",
                                       concurrency_id=ENGINE_GROUP, concurrency_limit=1)

        # /benchmark
        bench_inputs = [gr.Textbox(value="", label="models"), gr.Textbox(value="short", label="length"),
                        gr.Number(value=8, label="num_step", precision=0), gr.Number(value=1, label="repeats",
                                                                                    precision=0)]
        bench_outs = [gr.JSON(label="rows"), gr.File(label="csv")]

        def benchmark(models="", length="short", num_step=8, repeats=1):
            """Time the loaded models (comma-separated labels; empty: the active one): rows and CSV."""
            labels = [m.strip() for m in (models or "").split(",") if m.strip()]
            result = h.benchmark(studio, labels, length, num_step, repeats)
            return result["rows"], result["csv"]

        gr.Button(visible=False).click(benchmark, inputs=bench_inputs, outputs=bench_outs, api_name="benchmark",
                                       concurrency_id=ENGINE_GROUP, concurrency_limit=1)
