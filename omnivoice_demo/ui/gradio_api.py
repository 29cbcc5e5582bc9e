"""The Gradio API's side of the engine queue: /speak and /clone through the service, /voices, /models.

/speak and /clone are ``async``: when a client cancels (``job.cancel()``) or goes
away, Gradio cancels the awaiting task, which cancels the engine job, which
stops after the step in flight.  (A plain function ran to the end in its thread
while Gradio freed its concurrency slot: four submit-and-cancel cycles ran four
generations at once.)  They return the audio, the seed used and the details
(settings, timings, codes digest), and their errors reach API clients as plain
text (``api_errors``), not the HTML the page shows.  Every parameter carries a
description (``describe``) that ``view_api()`` and the API page show.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Optional

import gradio as gr

from ..audio.processing import save_audio
from ..settings.generation import GenerationConfig
from ..studio.messages import error_text, errors_as
from ..studio.results import details
from ..studio.state import session_of
from ..studio.variants import listed_variants
from ..studio.vocabulary import voice_list

log = logging.getLogger(__name__)

#: Speak and Clone (UI and API): they wait in the studio's EngineService, which shows the queue position
GENERATION_GROUP = "generation"

#: the API's own parameters; the generation settings are described by their ``Setting``
DESCRIPTIONS = {
    "text": "Required. The text to speak; SSML when it starts with <speak (pauses, pace, voices by name: "
            "docs/ssml.md).",
    "voice": "A saved voice's name, or a named design such as 'alloy' (see /voices); empty: none (the model picks "
             "a voice, or follows instruct).",
    "language": "Language name or code, e.g. 'English' or 'en'; 'Auto' lets the model decide.",
    "instruct": "Voice design in your own words or as items, e.g. 'a deep, calm British man' or 'female, low "
                "pitch'; words not understood are ignored and listed in details.ignored; empty: none.",
    "preset": "A speed preset: reference, balanced or fast (quality and hd mean reference); it sets num_step and "
              "guidance_every unless those are given. Empty: none.",
    "reference": "Required. The reference clip to clone: 3-10 s of one speaker.",
    "transcript": "Required (this server has no speech recogniser): exactly what is said in the reference clip.",
    "consent": "Required: true confirms you have the right to use this voice (your own, or one you have "
               "permission to use); false is refused.",
    "preprocess": "Trim silence and normalise the reference clip (true as the reference).",
    "models": "Comma-separated labels of loaded models (see /models); empty: the active one.",
    "length": "Text length of the benchmark: short, medium or long.",
    "repeats": "Runs per model, 1-10 (the mean is reported).",
    "audio": "Required. Audio to send through the codec.",
    "codes": "Required. A codes file (.npz) saved by /codec or the Speak tab.",
    "pronunciations": "A lexicon as JSON text: {\"bass\": \"[B EY1 S]\"} or a list of {\"word\", \"say\", "
                      "\"match_case\"}; say is a CMU override, pinyin with tones or a respelling. Over the "
                      "server's lexicon, word by word. Empty: none.",
    "script": "True: the text is a dialogue script ('Name: text' lines), as the Speak tab's Script mode; each name "
              "is a voice, or is given one by speakers. The details list the turns.",
    "speakers": "With script: each name's voice as JSON text, {\"Anna\": \"alloy\", \"Ben\": \"male, low "
                "pitch\"}; a name left out must be a voice itself. Empty: none.",
}
_API_DEFAULT_NOTES = {"duration": " (0 = estimated from the text)", "seed": " (-1 = a new seed, returned)",
                      "loudness": " (0 = as generated)"}


def description(name: str) -> Optional[str]:
    if name in DESCRIPTIONS:
        return DESCRIPTIONS[name]
    if name in GenerationConfig.names():
        setting = GenerationConfig.setting(name)
        bounds = "" if setting.low is None else f"; {setting.low:g} to {setting.high:g}"
        default = GenerationConfig.default(name)
        shown = "" if default is None else f", default {default}"
        return f"{setting.help[0].upper()}{setting.help[1:]}{bounds}{shown}{_API_DEFAULT_NOTES.get(name, '')}."
    return None


def describe(inputs: list, names: Optional[list[str]] = None) -> list:
    """Give each input component the description of its parameter (its label unless ``names`` says)."""
    for component, name in zip(inputs, names or [c.label for c in inputs]):
        text = description(name)
        if text is None:
            continue
        for method in ("api_info", "api_info_as_input"):
            if hasattr(component, method):
                info = dict(getattr(component, method)(), additional_description=text)
                setattr(component, method, lambda info=info: info)
    return inputs


def plain_error(exc: BaseException) -> gr.Error:
    """An error for API clients: our message as plain text; anything else logged and shown as internal."""
    if isinstance(exc, gr.Error):
        return exc
    return gr.Error(error_text(exc, "a Gradio API endpoint"), print_exception=False)


def api_errors(fn):
    """Raise every exception of ``fn`` (plain or async) as ``plain_error``; reaches past ``ui_errors``'s HTML."""
    return errors_as(plain_error)(getattr(fn, "__wrapped__", fn))


def generation_concurrency(studio) -> dict:
    """Gradio lets as many generation events through as the service takes; the service queues them."""
    return dict(concurrency_id=GENERATION_GROUP,
                concurrency_limit=studio.service.max_running + studio.service.max_waiting)


def result_outputs() -> list:
    return [gr.Audio(type="filepath", label="audio"), gr.Number(label="seed", precision=0), gr.JSON(label="details")]


async def run_job(studio, text: str, values: dict, voice, tab: str,
                  owner: Optional[str] = None, voices=None, prepare=None) -> tuple[str, int, dict]:
    """Plan, queue and run one generation through the studio's service: (wav path, seed, details); the file is
    ``owner``'s (``Studio.output_path``).  A text that starts with ``<speak`` is SSML, its voice names resolved by
    ``voices`` (``studio.vocabulary``); ``prepare(engine, arguments)``: another plan (a dialogue script's)."""
    from .controls import styled_request

    loaded = studio.models.get()
    voice, request = styled_request(values, studio.limits, voice)
    arguments = request.engine_arguments()
    if prepare is not None:
        plan = await asyncio.to_thread(prepare, loaded.engine, arguments)
    else:
        plan = await asyncio.to_thread(loaded.engine.prepare, text, voice=voice, ssml=None, voices=voices,
                                       **arguments)
    job = studio.service.submit(lambda: loaded.engine.run(plan), estimate=loaded.engine.estimate_seconds(plan),
                                lock=loaded.lock, label=f"gradio {tab}")
    result = None
    async for event in job.aevents():  # a cancelled task closes this, which cancels the job
        if event.kind == "result":
            result = event
    if result is None:
        raise gr.Error("The generation was stopped before it finished.", print_exception=False)
    path = studio.output_path(f"omnivoice-{time.strftime('%Y%m%d-%H%M%S')}-{tab}-{result.seed}-job{job.id}", ".wav",
                              owner)
    await asyncio.to_thread(save_audio, path, result.audio, result.sample_rate)
    # the voice design given, the words of the description left out and the style clip, as the HTTP API's headers
    info = dict(details(result, loaded.label), instruct=plan.instruct, ignored=list(request.description.ignored),
                style=request.description.style)
    if result.words:   # word_timestamps: each word's start and end in the audio, as /dev/captioned_speech gives them
        info["words"] = [word.to_dict() for word in result.words]
    return str(path), int(result.seed), info


def add_listing_endpoints(studio) -> None:
    """/voices and /models (call inside the app's hidden column)."""
    def voices(request: gr.Request = None):
        """The saved voices (for /speak's voice) and the named voice designs (their instruct text)."""
        session = session_of(request)
        entries = {entry.name: entry for entry in studio.voices.listing(session, limit=10_000)[0]}   # one query
        return voice_list(list(entries), lambda name: entries[name].created_at,
                          lambda name: listed_variants(name, entries[name].tags))

    gr.Button(visible=False).click(voices, inputs=[], outputs=gr.JSON(label="voices"), api_name="voices",
                                   queue=False)

    def models():
        """The loaded models (labels for /benchmark's models), the active one and the loader's state."""
        manager = studio.models
        return {"active": manager.active, "loaded": manager.labels(), "state": manager.status.state,
                "message": manager.status.message}

    gr.Button(visible=False).click(models, inputs=[], outputs=gr.JSON(label="models"), api_name="models",
                                   queue=False)
