"""The Gradio API's generation endpoints: /speak, /clone, /voices, /models (for ``gradio_client``).

They go through the app's ``EngineService`` like the UI and the HTTP API, and
they are ``async``: when a client cancels (``job.cancel()``) or goes away,
Gradio cancels the awaiting task, which cancels the engine job, which stops
after the step in flight.  (A plain function would run to the end in its
thread while Gradio freed its concurrency slot: four submit-and-cancel cycles
ran four generations at once.)

/speak and /clone return the audio, the seed used and the generation's details
(settings, timings, codes digest); errors reach API clients as plain text.
"""

from __future__ import annotations

import time
from typing import Optional

import gradio as gr

from ..errors import OmniVoiceError
from . import speech
from .voices import voice_list

#: parameter name -> what it means (shown by gradio_client's view_api and the API page)
DESCRIPTIONS = {
    "text": "Required. The text to speak (limits: see the error message when over).",
    "voice": "A saved voice's name (from /voices); empty: none (the model picks a voice or uses instruct).",
    "language": "Language name or code (e.g. 'English', 'en'); 'Auto' lets the model decide.",
    "instruct": "Voice design, comma-separated items, e.g. 'female, low pitch, british accent'; empty: none.",
    "speed": "Speaking rate, 0.5-2.0 (1 = the estimated natural length).",
    "duration": "Seconds of speech; 0 = estimated from the text.",
    "num_step": "Unmasking steps, 1-64 (32 as the reference; fewer is faster and approximate).",
    "guidance_scale": "Classifier-free guidance weight, 0-20 (2 as the reference).",
    "t_shift": "Time-step shift of the unmasking schedule (0.1 as the reference).",
    "position_temperature": "Gumbel temperature of the choice of positions (5 as the reference; 0 = greedy).",
    "class_temperature": "Sampling temperature of the tokens (0 = argmax, as the reference).",
    "layer_penalty_factor": "Confidence penalty per codebook index (5 as the reference).",
    "denoise": "Add the <|denoise|> token when cloning (true as the reference).",
    "postprocess": "Trim long silences, set loudness, fade and pad the output (true as the reference).",
    "seed": "Random seed, 0 or more; -1 = a new one (returned with the result).",
    "reference": "Required. The reference clip to clone (3-10 s of one speaker).",
    "transcript": "Required (until a recogniser is installed): exactly what is said in the reference clip.",
    "consent": "Required: true confirms you have the right to use this voice (your own, or with permission).",
    "preprocess": "Trim silence and normalise the reference clip (true as the reference).",
}
CONTROLS = ("language", "instruct", "speed", "duration", "num_step", "guidance_scale", "t_shift",
            "position_temperature", "class_temperature", "layer_penalty_factor", "denoise", "postprocess", "seed")


def described(component, name: str):
    """Give ``component`` the description of parameter ``name`` in the API's schema."""
    text = DESCRIPTIONS[name]
    for method in ("api_info", "api_info_as_input"):
        if hasattr(component, method):
            info = dict(getattr(component, method)(), additional_description=text)
            setattr(component, method, lambda info=info: info)
    return component


def plain_error(exc: BaseException) -> gr.Error:
    """An error for API clients: the message as plain text (no HTML), internal errors not detailed."""
    import logging

    from ..errors import one_line

    if isinstance(exc, gr.Error):
        return exc
    if isinstance(exc, (OmniVoiceError, ValueError)):
        return gr.Error(str(exc).strip() or one_line(exc), print_exception=False)
    logging.getLogger(__name__).error("internal error in a Gradio API endpoint", exc_info=exc)
    return gr.Error("Internal error; the details are in the server log.", print_exception=False)


def _controls(d: dict) -> list:
    return [described(gr.Textbox(value="Auto", label="language"), "language"),
            described(gr.Textbox(value="", label="instruct"), "instruct"),
            described(gr.Number(value=d["speed"], label="speed"), "speed"),
            described(gr.Number(value=d["duration"], label="duration"), "duration"),
            described(gr.Number(value=d["num_step"], label="num_step", precision=0), "num_step"),
            described(gr.Number(value=d["guidance_scale"], label="guidance_scale"), "guidance_scale"),
            described(gr.Number(value=d["t_shift"], label="t_shift"), "t_shift"),
            described(gr.Number(value=d["position_temperature"], label="position_temperature"),
                      "position_temperature"),
            described(gr.Number(value=d["class_temperature"], label="class_temperature"), "class_temperature"),
            described(gr.Number(value=d["layer_penalty_factor"], label="layer_penalty_factor"),
                      "layer_penalty_factor"),
            described(gr.Checkbox(value=d["denoise"], label="denoise"), "denoise"),
            described(gr.Checkbox(value=d["postprocess"], label="postprocess"), "postprocess"),
            described(gr.Number(value=-1, label="seed", precision=0), "seed")]


def _values(args: tuple) -> dict:
    values = dict(zip(CONTROLS, args))
    seed = values.get("seed")
    values["randomize"] = seed is None or seed < 0
    return values


async def run_job(studio, text: str, values: dict, voice, tab: str) -> tuple[str, int, dict]:
    """Plan, queue and run one generation through the studio's service; (wav path, seed, details)."""
    import asyncio

    import soundfile as sf

    from ..ui import handlers as h

    loaded = studio.models.get()
    kwargs, _ = h.generation_kwargs(values)
    plan = await asyncio.to_thread(loaded.engine.prepare, text, voice=voice, **kwargs)
    job = studio.service.submit(lambda: loaded.engine.run(plan), estimate=loaded.engine.estimate_seconds(plan),
                                lock=loaded.lock, label=f"gradio {tab}")
    result = None
    async for event in job.aevents():  # a cancelled task closes this, which cancels the job
        if event.kind == "result":
            result = event
    if result is None:
        raise gr.Error("The generation was stopped before it finished.", print_exception=False)
    stem = f"omnivoice-{time.strftime('%Y%m%d-%H%M%S')}-{tab}-{result.seed}-job{job.id}"
    path = studio.output_path(stem, ".wav")
    await asyncio.to_thread(sf.write, path, result.audio, result.sample_rate, subtype="PCM_16")
    return str(path), int(result.seed), speech.details(result, loaded.label)


def add_endpoints(studio, concurrency_id: str, concurrency_limit: int, session_of) -> None:
    """Hidden components and buttons behind /speak, /clone, /voices and /models (call inside the Blocks).

    ``session_of(request)`` is the visitor's voice-library key."""
    from ..ui import handlers as h

    d = h.CONTROL_DEFAULTS
    generation = dict(concurrency_id=concurrency_id, concurrency_limit=concurrency_limit)
    with gr.Column(visible=False):
        speak_inputs = [described(gr.Textbox(label="text"), "text"),
                        described(gr.Textbox(value="", label="voice"), "voice")] + _controls(d)
        outputs = [gr.Audio(type="filepath", label="audio"), gr.Number(label="seed", precision=0),
                   gr.JSON(label="details")]

        async def speak(text, voice="", language="Auto", instruct="", speed=1.0, duration=0.0, num_step=32,
                        guidance_scale=2.0, t_shift=0.1, position_temperature=5.0, class_temperature=0.0,
                        layer_penalty_factor=5.0, denoise=True, postprocess=True, seed=-1,
                        request: gr.Request = None):
            """Text (with an optional saved voice and voice design) -> speech (24 kHz WAV), the seed used and the
            generation's details (settings, timings, codes digest)."""
            try:
                values = _values((language, instruct, speed, duration, num_step, guidance_scale, t_shift,
                                  position_temperature, class_temperature, layer_penalty_factor, denoise,
                                  postprocess, seed))
                saved = h.saved_voice(studio, voice or h.NO_VOICE, session_of(request))
                return await run_job(studio, text, values, saved, "speak")
            except Exception as exc:  # noqa: BLE001 - every error is plain text for the client
                raise plain_error(exc) from None

        gr.Button(visible=False).click(speak, inputs=speak_inputs, outputs=outputs, api_name="speak", **generation)

        clone_inputs = [described(gr.Audio(type="filepath", label="reference"), "reference"),
                        described(gr.Textbox(value="", label="transcript"), "transcript"),
                        described(gr.Textbox(value="", label="text"), "text"),
                        described(gr.Checkbox(value=False, label="consent"), "consent"),
                        described(gr.Checkbox(value=True, label="preprocess"), "preprocess")] + _controls(d)
        clone_outputs = [gr.Audio(type="filepath", label="audio"), gr.Number(label="seed", precision=0),
                         gr.JSON(label="details")]

        async def clone(reference, transcript="", text="", consent=False, preprocess=True, language="Auto",
                        instruct="", speed=1.0, duration=0.0, num_step=32, guidance_scale=2.0, t_shift=0.1,
                        position_temperature=5.0, class_temperature=0.0, layer_penalty_factor=5.0, denoise=True,
                        postprocess=True, seed=-1):
            """A reference clip, its transcript and consent=True (you have the right to use this voice) + text ->
            speech in that voice, the seed used and the details."""
            import asyncio

            try:
                if not (text or "").strip():
                    raise ValueError("text is required: the text to speak in the cloned voice.")
                voice, _ = await asyncio.to_thread(h.clone_voice, studio, reference, transcript, consent, preprocess)
                values = _values((language, instruct, speed, duration, num_step, guidance_scale, t_shift,
                                  position_temperature, class_temperature, layer_penalty_factor, denoise,
                                  postprocess, seed))
                return await run_job(studio, text, values, voice, "clone")
            except Exception as exc:  # noqa: BLE001
                raise plain_error(exc) from None

        gr.Button(visible=False).click(clone, inputs=clone_inputs, outputs=clone_outputs, api_name="clone",
                                       **generation)

        voices_out = gr.JSON(label="voices")

        def voices(request: gr.Request = None):
            """The saved voices (for /speak's voice) and the named voice designs (for instruct)."""
            return voice_list(studio.voices.names(session_of(request)))

        gr.Button(visible=False).click(voices, inputs=[], outputs=voices_out, api_name="voices", queue=False)

        models_out = gr.JSON(label="models")

        def models():
            """The loaded models (labels for /benchmark's models), the active one and the loader's state."""
            manager = studio.models
            return {"active": manager.active, "loaded": manager.labels(), "state": manager.status.state,
                    "message": manager.status.message}

        gr.Button(visible=False).click(models, inputs=[], outputs=models_out, api_name="models", queue=False)


def session_key(request: Optional[gr.Request]) -> Optional[str]:
    return getattr(request, "session_hash", None) if request is not None else None
