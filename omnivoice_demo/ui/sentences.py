"""The result's sentences under the player (Speak and Clone): each with its player, "Again" and "Restore".

"Again" makes that sentence again with its next seed, with the voice and settings as the tab shows them
now (another saved voice, another preset), through the studio's queue like any generation (Stop cancels
it); "Restore" puts the take before it back.  The player and the downloads then hold the whole result
with that sentence replaced, joined as every generation is (``studio.sentences``).  The result lives in
the session's state (the panel's ``takes``), so a visitor only ever changes their own.
"""

from __future__ import annotations

import base64
import html
import time
from typing import Callable, Iterable, Iterator, Optional

import gradio as gr

from ..audio.processing import audio_bytes
from ..engine.events import ChunkEvent, StepEvent
from ..engine.streaming import playback_piece
from ..storage.outputs import text_stem
from ..storage.voice_file import Voice
from ..errors import InvalidInput, excerpt
from ..studio import Studio, session_of
from ..studio.sentences import SentenceResult
from ..studio.service import QueueEvent
from . import pictures
from .controls import generation_request, value_inputs, values_of
from .display import fmt_seconds, history_rows, progress_html, read_along_html
from .error_mapping import ui_errors
from .generation import _checks_table, _history_entry, _save_outputs, downloads, queue_progress
from .gradio_api import generation_concurrency
from .owners import owner_of
from .speed_controls import time_left

#: Again and Restore: the buttons' clicks become the component's click event, with what was pressed
SENTENCES_JS = """
element.addEventListener("click", (event) => {
  const button = event.target.closest("button[data-ov-action]");
  if (!button || button.disabled || !element.contains(button)) return;
  trigger("click", {action: button.dataset.ovAction, sentence: Number(button.dataset.ovSentence)});
});
"""

#: voice_for(values, data, session) -> (voice, values): the voice and settings a new take uses, read from the
#: tab as its Go reads them
VoiceFor = Callable[[dict, dict, Optional[str]], tuple[Optional[Voice], dict]]


def sentences_component(prefix: str) -> gr.HTML:
    return gr.HTML("", elem_id=f"{prefix}-sentences", js_on_load=SENTENCES_JS)


def sentences_html(result: Optional[SentenceResult]) -> str:
    """The sentences of ``result``: number, text, a player, the take's seed, Again and Restore ("" for none)."""
    if result is None:
        return ""
    rows = []
    for index, (text, take, before) in enumerate(zip(result.sentences, result.current, result.previous)):
        piece = playback_piece(take.audio, 0, 1, result.ref_rms)  # at the output's level, no join fades
        uri = "data:audio/wav;base64," + base64.b64encode(audio_bytes(piece)).decode("ascii")
        drawn = "as first generated" if take.seed is None else f"seed {take.seed}"
        checked = f" · CER {take.check.cer:.3f}" if take.check is not None else ""
        changed = " ov-changed" if index == result.changed else ""
        rows.append(
            f'<div class="ov-sentence{changed}" data-ov-sentence="{index}">'
            f'<span class="ov-sentence-number">{index + 1}</span>'
            f'<span class="ov-sentence-text">{html.escape(text)}</span>'
            f'<audio controls preload="none" src="{uri}"></audio>'
            f'<span class="ov-sentence-take">{drawn}{checked}</span>'
            f'<button type="button" class="ov-again" data-ov-action="again" data-ov-sentence="{index}" '
            f'title="Make this sentence again with the next seed (the voice and settings as set now)">Again</button>'
            f'<button type="button" class="ov-restore" data-ov-action="restore" data-ov-sentence="{index}" '
            f'title="Put the take before this one back"{"" if before is not None else " disabled"}>Restore</button>'
            '</div>')
    return ('<div class="ov-sentences"><div class="ov-sentences-head">Sentences: play one, make it again, or '
            f'restore the take before</div>{"".join(rows)}</div>')


def with_sentences(update: dict) -> dict:
    """A run's update with its sentences drawn, when it carries the session's result (``takes``)."""
    return dict(update, sentences=sentences_html(update["takes"])) if "takes" in update else update


@ui_errors
def sentence_action(studio: Studio, result: Optional[SentenceResult], action: str, index: int, values: dict,
                    voice_for: Callable[[dict], tuple[Optional[Voice], dict]], history: Optional[list], tab: str,
                    owner: Optional[str] = None) -> Iterator[dict]:
    """Again (``action`` "again") or Restore ("restore") of sentence ``index`` of ``result``: yields updates of
    the output panel (progress, grid, audio, files, info, sentences, checks, history), the files ``owner``'s."""
    if result is None:
        raise InvalidInput("There is no result to change yet: generate one first.")
    if action == "restore":
        started = time.perf_counter()
        result.restore(index)
        yield _shown(studio, result, history, tab, owner, f"Sentence {int(index) + 1}: the take before is back",
                     time.perf_counter() - started)
        return
    if action != "again":
        raise InvalidInput(f"Unknown action {excerpt(action)}: Again or Restore.")
    loaded = studio.models.get()
    voice, values = voice_for(values)
    request = generation_request(values, studio.limits)
    plan = result.plan_again(loaded, index, voice, request.language, request.instruct, request.config)
    number, seed = int(index) + 1, plan.config.seed
    timeline = loaded.engine.estimate(plan, int(index))
    estimate = f"estimated {fmt_seconds(timeline.total)}" if timeline is not None else "first run"
    yield {"progress": progress_html(0.0, f"Sentence {number} again…", f"seed {seed} · {estimate}")}
    job = result.submit_again(studio.service, loaded, plan, index, tab)
    stream, kept, last_sent = job.events(), None, 0.0
    try:
        for event in stream:
            if isinstance(event, QueueEvent):
                yield {"progress": queue_progress(event)}
            elif isinstance(event, StepEvent):
                now = time.perf_counter()
                if now - last_sent < studio.min_update_interval and event.step not in (1, event.num_steps):
                    continue
                last_sent = now
                left = time_left(timeline, 0, event.step, event.elapsed) if timeline is not None else ""
                take = f" · take {event.take}" if event.take > 1 else ""
                yield {"progress": progress_html(event.step / event.num_steps, f"Sentence {number} again: step "
                                                 f"{event.step} of {event.num_steps}", f"seed {seed}{take} · {left}"),
                       "grid": pictures.code_grid(event.codes, event.decided)}
            elif isinstance(event, ChunkEvent):
                kept = event
    finally:
        stream.close()  # Stop (a cancelled event) cancels the job within a step
    if kept is None:
        return
    result.keep(plan, kept)
    yield _shown(studio, result, history, tab, owner,
                 f"Sentence {number} made again (seed {result.current[number - 1].seed})", kept.elapsed)


def _shown(studio: Studio, result: SentenceResult, history: Optional[list], tab: str, owner: Optional[str],
           headline: str, seconds: float) -> dict:
    """The panel after a sentence changed: the whole result (joined again), its new files, the sentences."""
    current = result.result({"total": seconds})
    stem = text_stem(result.text, fallback=f"omnivoice-{tab.lower()}")   # the download's name: the text's words
    files = _save_outputs(studio, current, stem, result.text, owner, sentence_seeds=result.seeds())
    history = (list(history or []) + [_history_entry(tab, result.text, current, files["wav"])])[-studio.history_limit:]
    return {"progress": progress_html(1.0, headline, f"{current.duration:.2f} s of audio in {fmt_seconds(seconds)}",
                                      state="done"),
            "grid": pictures.code_grid(current.codes),
            "audio": gr.update(value=str(files["wav"]), autoplay=False),
            "files": downloads(files), "words": read_along_html(current.words, f"{tab.lower()}-audio"),
            "info": (f"**{current.duration:.2f} s** of audio · seed **{result.seed}** · sentence seeds "
                     f"{', '.join('first' if s is None else str(s) for s in result.seeds())} · {result.model[0]}"),
            "sentences": sentences_html(result), "takes": result, "checks": _checks_table(current.checks),
            "history": history, "history_table": history_rows(history)}


def wire_sentences(studio: Studio, panel, history, voice_for: VoiceFor, extra_inputs: Iterable = ()) -> None:
    """Again and Restore of ``panel``'s sentences (a ``GenerationPanel``); Stop cancels a take, and Go a pending
    one (the new result replaces the one it was for)."""
    controls, takes = panel.controls, panel.outputs["takes"]
    names = dict(panel.outputs, history=history.state, history_table=history.table)
    tab = panel.prefix.capitalize()

    def act(data, evt: gr.EventData, request: gr.Request):
        session = session_of(request)
        for update in sentence_action(studio, data[takes], getattr(evt, "action", None), getattr(evt, "sentence", None),
                                      values_of(controls, data), lambda values: voice_for(values, data, session),
                                      data[history.state], tab, owner_of(request)):
            yield {names[name]: value for name, value in update.items() if name in names}

    inputs = value_inputs(controls) | set(extra_inputs) | {takes, history.state}
    event = panel.outputs["sentences"].click(act, inputs=inputs, outputs=list(names.values()),
                                             **generation_concurrency(studio), show_progress="hidden",
                                             api_visibility="private")
    for button in (panel.stop, panel.go):
        button.click(None, cancels=[event], queue=False, api_visibility="private")
