"""The Benchmark tab and /benchmark: every stage of a generation timed for the loaded models, side by side."""

from __future__ import annotations

import time
from typing import Iterator, Optional

import gradio as gr

from ..control_specs import control
from ..gradio_api import api_errors, describe
from ...settings.generation import GenerationConfig
from ...constants import STAGES
from ...errors import InvalidInput, excerpt
from ...storage.atomic import write_atomically
from ...eval.quick_bench import TEXTS, BenchmarkProgress, benchmark_events, machine_info, rows_to_csv
from .. import pictures
from ..error_mapping import ui_errors
from ..generation_panel import ENGINE_GROUP, go_stop_buttons
from ..owners import owner_of
from ...studio import Studio

BENCH_COLUMNS = (["model", "profile", "num_step", "frames", "audio_s"] + [f"{stage}_s" for stage in STAGES]
                 + ["total_s", "per_step_ms", "rtf", "peak_rss_mb"])
MAX_REPEATS = 10
STEPS_CONTROL = control("num_step")   # the Steps slider of Speak and Clone


def _whole(value, default: int, name: str) -> int:
    if value is None or (isinstance(value, str) and not value.strip()):
        return default
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise InvalidInput(f"{name} must be a number, got {excerpt(value)}.", param=name) from None
    if not number.is_integer():
        raise InvalidInput(f"{name} must be a whole number, got {excerpt(value)}.", param=name)
    return int(number)


@ui_errors
def benchmark(studio: Studio, labels: Optional[list[str]], length: str = "short", num_step: int = 32,
              repeats: int = 1, progress=None, owner: Optional[str] = None) -> dict:
    """Time the chosen loaded models on the same text: table, chart, machine, CSV (``owner``'s file)."""
    return _to_the_end(benchmark_updates(studio, labels, length, num_step, repeats, owner), BenchmarkProgress,
                       progress)


def _to_the_end(updates: Iterator, progress_type: type[BenchmarkProgress], progress=None):
    """The last update of ``updates`` (the result); each ``progress_type`` one before it goes to ``progress``."""
    result = None
    for update in updates:
        if isinstance(update, progress_type):
            if progress:
                progress(update.fraction, desc=update.message)
        else:
            result = update
    return result


def benchmark_updates(studio: Studio, labels: Optional[list[str]], length: str = "short", num_step: int = 32,
                      repeats: int = 1, owner: Optional[str] = None) -> Iterator:
    """``benchmark`` as it runs: ``BenchmarkProgress`` while waiting in the service's queue and at every
    step, then the result ``dict`` (its CSV is ``owner``'s file).  The runs go through the one queue
    (``studio.service``) like every generation; closing this generator (a cancelled event, a client gone)
    cancels them after the step in flight and frees the model."""
    if length not in TEXTS:
        raise InvalidInput(f"Text length must be one of {', '.join(TEXTS)}, got {excerpt(length)}.", param="length")
    num_step = _whole(num_step, GenerationConfig.default("num_step"), "num_step")
    low, high = int(STEPS_CONTROL.low or 1), int(STEPS_CONTROL.high or 64)
    if not low <= num_step <= high:
        raise InvalidInput(f"Steps must be between {low} and {high} in the benchmark, got {num_step}.",
                           param="num_step")
    repeats = _whole(repeats, 1, "repeats")
    if not 1 <= repeats <= MAX_REPEATS:
        raise InvalidInput(f"Repetitions must be between 1 and {MAX_REPEATS}, got {repeats}.", param="repeats")
    labels = [label for label in (labels or []) if label]
    if not labels:
        labels = [studio.models.get().label]
    chosen = [studio.models.get(label) for label in labels]
    job = studio.service.submit(lambda: benchmark_events({m.label: m.engine for m in chosen}, TEXTS[length],
                                                         num_step=num_step, repeats=repeats,
                                                         locks={m.label: m.lock for m in chosen}),
                                label="benchmark")
    rows, stage = None, BenchmarkProgress("Starting", 0.0)
    for event in job.events():
        if event.kind == "queue":
            yield BenchmarkProgress(f"Waiting: {event.position} in the queue", 0.0)
        elif isinstance(event, BenchmarkProgress):
            stage, rows = event, event.rows or rows
            yield event
            if event.rows and not event.final:   # the models finished so far: shown, and kept if it is stopped
                yield _result(studio, chosen, event.rows, length, num_step, repeats, owner, finished=False)
        elif event.kind == "step":   # the fraction moves with the steps, not only at each run's start
            within = (event.chunk + event.step / event.num_steps) / max(event.num_chunks, 1)
            yield BenchmarkProgress(f"{stage.message}: step {event.step} of {event.num_steps}"
                                    + (f" (chunk {event.chunk + 1} of {event.num_chunks})" if event.num_chunks > 1
                                       else ""), stage.fraction + stage.span * within)
    if rows is None:
        raise InvalidInput("The benchmark was cancelled before it finished.")
    yield _result(studio, chosen, rows, length, num_step, repeats, owner)


#: what the machine line says while a benchmark of several models runs (its finished rows are in the table)
PARTIAL_NOTE = "Running: the table and the CSV hold the models finished so far."
#: what Stop adds to it
STOPPED_NOTE = "**Stopped**: the table and the CSV hold the models that finished before Stop"


def stopped_note(machine: str) -> str:
    """The machine line after Stop: the run marked stopped, saying what the table holds."""
    text = (machine or "").strip()
    if not text:
        return "**Stopped** before any model finished: no rows."
    if PARTIAL_NOTE not in text:   # a finished run (or a stopped one already said so): as it is
        return machine
    return f"{STOPPED_NOTE}. {text.replace(PARTIAL_NOTE, '').strip()}"


def _result(studio: Studio, chosen, rows: list, length: str, num_step: int, repeats: int, owner,
            finished: bool = True) -> dict:
    """The table, chart, machine line and CSV of ``rows`` (``finished`` False: the models done so far)."""
    machine = machine_info(chosen[0].engine)
    chart = pictures.bar_chart(list(STAGES) + ["total"],
                               {r["model"]: [r[f"{s}_s"] for s in STAGES] + [r["total_s"]] for r in rows},
                               title=f"Seconds per stage · {length} text · {num_step} steps · mean of {repeats}")
    csv_path = studio.output_path(f"benchmark-{time.strftime('%Y%m%d-%H%M%S')}", ".csv", owner)
    write_atomically(csv_path, rows_to_csv(rows).encode("utf-8"), "benchmark table")
    machine_md = (f"**Machine:** {machine['cpu']} · {machine['usable_cores']} of {machine['cores']} cores usable · "
                  f"{machine['os']} · Python {machine['python']} · onnxruntime {machine['onnxruntime']} · "
                  f"provider {machine['provider']} · threads {machine['threads']}")
    if not finished:
        machine_md = f"{PARTIAL_NOTE} {machine_md}"
    return {"table": {"headers": BENCH_COLUMNS, "data": [[r.get(c) for c in BENCH_COLUMNS] for r in rows]},
           "chart": chart, "machine": machine_md, "csv": str(csv_path), "rows": rows}


@ui_errors
def quality(studio: Studio, labels: Optional[list[str]], candidates: Optional[list[str]], sentences=2,
            intelligibility: bool = False, progress=None, owner: Optional[str] = None) -> dict:
    """The active model (Reference) against the chosen candidates on a few built-in sentences (``omnivoice_demo.eval``)."""
    from ...eval.quick import QualityProgress

    return _to_the_end(quality_updates(studio, labels, candidates, sentences, intelligibility, owner),
                       QualityProgress, progress)


def quality_updates(studio: Studio, labels: Optional[list[str]], candidates: Optional[list[str]], sentences=2,
                    intelligibility: bool = False, owner: Optional[str] = None) -> Iterator:
    """``quality`` as it runs: ``QualityProgress`` while waiting in the service's queue, at each generation
    and scoring and at every step, then the result ``dict`` (its report is ``owner``'s file).  The run is one job of the one queue
    (``eval.quick.queued_quality``); closing this generator cancels it after the step in flight."""
    from ...eval.quick import QualityProgress, queued_quality

    sentences = _whole(sentences, 2, "sentences")
    active = studio.models.get()
    others = [label for label in (labels or []) if label and label != active.label]
    chosen = [active] + [studio.models.get(label) for label in others]
    for update in queued_quality(studio.service, chosen, candidates or [], sentences, intelligibility):
        if isinstance(update, QualityProgress):
            yield update
            continue
        path = studio.output_path(f"quality-{time.strftime('%Y%m%d-%H%M%S')}", ".md", owner)
        write_atomically(path, update.markdown.encode("utf-8"), "quality report")
        headers, rows = update.table()
        yield {"table": {"headers": headers, "data": rows}, "notes": update.notes_markdown(), "report": str(path)}


def build_quality(studio: Studio, models: gr.CheckboxGroup) -> None:
    """"Quality against the exact model": the same table as ``omnivoice eval``, for a few sentences."""
    from ...eval.quick import CANDIDATE_CHOICES, MAX_SENTENCES, QualityProgress

    gr.Markdown("### Quality against the exact model\nThe active model (Reference preset) against each candidate "
                "at the same seeds: codes agreement, log-mel distance, duration ratio, and with the recogniser "
                "WER/CER. Random-weight test models say nothing about quality; on the real weights this is the "
                "number to look at (`omnivoice eval` runs the full set).")
    with gr.Row():
        candidates = gr.CheckboxGroup(list(CANDIDATE_CHOICES), value=["balanced", "fast"], label="Candidates",
                                      scale=3, elem_id="quality-candidates")
        sentences = gr.Slider(1, MAX_SENTENCES, value=2, step=1, label="Sentences", elem_id="quality-sentences")
        intelligibility = gr.Checkbox(False, label="WER/CER (loads the speech recogniser)",
                                      elem_id="quality-asr")
    go, stop = go_stop_buttons("quality", "Measure quality")
    table = gr.Dataframe(headers=quality_headers(), interactive=False, elem_id="quality-table",
                         label="Each cell: mean (worst item); the other loaded models ticked above are candidates too")
    notes = gr.Markdown("", elem_id="quality-notes")
    report = gr.File(label="report.md", interactive=False, elem_id="quality-report")

    @ui_errors
    def run(labels, chosen, count, asr, request: gr.Request, progress=gr.Progress()):
        # a generator: Gradio closes it when the event is cancelled, which cancels the queued job
        for update in quality_updates(studio, labels, chosen, count, asr, owner_of(request)):
            if isinstance(update, QualityProgress):
                progress(update.fraction, desc=update.message)
                yield gr.skip(), gr.skip(), gr.skip()
            else:
                yield update["table"], update["notes"], update["report"]

    event = go.click(run, inputs=[models, candidates, sentences, intelligibility], outputs=[table, notes, report],
                     concurrency_id=ENGINE_GROUP, concurrency_limit=1, api_visibility="private")
    stop_cancels(stop, event)


def quality_headers() -> list[str]:
    """The quality table's columns (its headers while it is empty, instead of Gradio's 1 2 3)."""
    from ...eval.report import COLUMNS

    return ["configuration", "settings"] + [header for _, header in COLUMNS]


def stop_cancels(stop: gr.Button, event) -> None:
    """Stop cancels ``event``: Gradio closes its generator, which cancels the queued job after the step in flight
    (``studio.service``), and the model's lock is free again."""
    stop.click(None, cancels=[event], api_visibility="private", queue=False)


def ticked(studio: Studio) -> list[str]:
    """The models the benchmark's list starts with ticked: the active one (what an empty choice runs)."""
    return [studio.models.active] if studio.models.active else []


def build(studio: Studio) -> gr.CheckboxGroup:
    """The tab; returns its model list (the Model tab keeps it up to date)."""
    with gr.Tab("Benchmark", id="benchmark"):
        gr.Markdown("Times every stage of a generation on this machine for the loaded models (load more "
                    "precisions in the Model tab to compare them side by side).")
        with gr.Row():
            # what is ticked is what runs: the active model to begin with (issue 19: it started unticked)
            models = gr.CheckboxGroup(studio.models.labels(), value=ticked(studio), label="Models", scale=3,
                                      elem_id="bench-models")
            length = gr.Radio(list(TEXTS), value="short", label="Text length", elem_id="bench-length")
            steps = gr.Slider(STEPS_CONTROL.low, STEPS_CONTROL.high, value=16, step=1, label="Steps",
                              elem_id="bench-steps")
            repeats = gr.Slider(1, MAX_REPEATS, value=1, step=1, label="Repetitions", elem_id="bench-repeats")
        go, stop = go_stop_buttons("bench", "Run benchmark")
        machine = gr.Markdown("", elem_id="bench-machine")
        table = gr.Dataframe(headers=BENCH_COLUMNS, interactive=False, elem_id="bench-table",
                             label="Results (seconds; per step in ms; RTF < 1 is faster than real time)")
        chart = gr.Image(label="Seconds per stage", type="pil", format="png", interactive=False, elem_id="bench-chart")
        csv = gr.File(label="CSV", interactive=False, elem_id="bench-csv")
        build_quality(studio, models)

    @ui_errors
    def run(labels, length_value, steps_value, repeats_value, request: gr.Request, progress=gr.Progress()):
        # a generator: Gradio closes it when the event is cancelled, which cancels the queued job
        for update in benchmark_updates(studio, labels, length_value, steps_value, repeats_value,
                                        owner_of(request)):
            if isinstance(update, BenchmarkProgress):
                progress(update.fraction, desc=update.message)
                yield gr.skip(), gr.skip(), gr.skip(), gr.skip()
            else:
                yield update["table"], update["chart"], update["machine"], update["csv"]

    event = go.click(run, inputs=[models, length, steps, repeats], outputs=[table, chart, machine, csv],
                     concurrency_id=ENGINE_GROUP, concurrency_limit=1, api_visibility="private")
    stop_cancels(stop, event)
    # once the cancelled run can send nothing more: the run marked stopped, its finished rows kept
    stop.click(None, api_visibility="private", queue=False).then(stopped_note, inputs=machine, outputs=machine,
                                                                 api_visibility="private", queue=False)
    return models


def build_api(studio: Studio) -> None:
    """/benchmark (inside the app's hidden column)."""
    def benchmark_endpoint(models="", length="short", num_step=8, repeats=1, request: gr.Request = None):
        """Time the loaded models (comma-separated labels; empty: the active one): rows and CSV."""
        labels = [m.strip() for m in (models or "").split(",") if m.strip()]
        for update in benchmark_updates(studio, labels, length, num_step, repeats,
                                        owner_of(request)):  # closed: cancelled
            yield (gr.skip(), gr.skip()) if isinstance(update, BenchmarkProgress) else (update["rows"], update["csv"])

    inputs = describe([gr.Textbox(value="", label="models"), gr.Textbox(value="short", label="length"),
                       gr.Number(value=8, label="num_step", precision=0),
                       gr.Number(value=1, label="repeats", precision=0)])
    gr.Button(visible=False).click(api_errors(benchmark_endpoint), inputs=inputs, outputs=[gr.JSON(label="rows"),
                                                                              gr.File(label="csv")],
                                   api_name="benchmark", concurrency_id=ENGINE_GROUP, concurrency_limit=1)
