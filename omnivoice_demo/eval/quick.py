"""A quick evaluation over engines already loaded (the app's Benchmark tab): a few built-in sentences.

The exact configuration is ``omnivoice eval``'s: the active model's folder with the fp32 backbone, at the
Reference preset.  When the active model runs another backbone (an int4 folder as built, an 8-bit
rebuild), an fp32-backbone engine of its folder is opened for the run and dropped after it, and the
active model as loaded is a candidate.  The other candidates are presets and sentence streaming on
the exact configuration, and the other loaded models (another precision, another backbone) at the
Reference preset.  The run goes to a temporary folder: the app keeps only the report.

It runs as one job of the server's queue (``studio.service``), like every
generation and the timing benchmark: ``queued_quality`` submits it and reports
its place in the queue, each generation and scoring, and each engine step; a
model's lock is held around each of its steps only, and closing the updates (a
cancelled event, a client gone) stops the run after the step in flight.
"""

from __future__ import annotations

import dataclasses
import pathlib
import re
import tempfile
from typing import TYPE_CHECKING, Iterator, Mapping, Optional, Sequence

from ..errors import InvalidInput
from .candidates import EXACT_BACKBONE, Candidate, exact_candidate, parse_candidate
from .items import read_eval_items
from .runner import EvalProgress, Scorers, eval_events

if TYPE_CHECKING:
    from ..engine.loop import OmniVoiceEngine

#: what the tab offers, as ``--candidate`` specs
CANDIDATE_CHOICES = {"balanced": "name=balanced,preset=balanced", "fast": "name=fast,preset=fast",
                     "streaming": "name=streaming,streaming=on"}
MAX_SENTENCES = 5
JOB_LABEL = "quality"


@dataclasses.dataclass
class QualityProgress:
    """An update of ``queued_quality`` before its report: what happens now and the fraction done."""

    message: str
    fraction: float


def quality_events(engines: Mapping[str, OmniVoiceEngine], exact_label: str, choices: Sequence[str], sentences: int,
                   intelligibility: bool, locks: Optional[Mapping[str, object]] = None) -> Iterator:
    """The run's events (``runner.eval_events``; the last one holds the ``EvalReport``), for the queue.

    ``engines``: loaded model label -> engine (the exact one's label among them); ``locks``: label -> the
    model's lock, held around each of its steps.  The request is checked now; the recogniser is loaded
    (when asked) and the work done when the events are iterated."""
    if not 1 <= sentences <= MAX_SENTENCES:
        raise InvalidInput(f"Sentences must be between 1 and {MAX_SENTENCES}, got {sentences}.", param="sentences")
    unknown = [c for c in choices if c not in CANDIDATE_CHOICES]
    if unknown:
        raise InvalidInput(f"Unknown candidate {unknown[0]!r}; choose from {', '.join(CANDIDATE_CHOICES)}.",
                           param="candidates")

    def backbone(label: str) -> str:
        return str(getattr(engines[label], "backbone_choice", {}).get("mode", "as loaded"))

    active = engines[exact_label]
    exact = dataclasses.replace(exact_candidate(exact_label, backbone=EXACT_BACKBONE),
                                shown_as=f"folder {pathlib.Path(active.folder).name}")
    candidates = [parse_candidate(CANDIDATE_CHOICES[c]) for c in choices]
    candidates += [Candidate(re.sub(r"[^A-Za-z0-9._+-]+", "-", label).strip("-")[:64] or "model", model=label,
                             backbone=backbone(label))
                   for label in engines if label != exact_label or not runs_exact(active)]
    if not candidates:
        raise InvalidInput("Choose a candidate (a preset, streaming, or another loaded model) to compare.",
                           param="candidates")
    if intelligibility:
        from .scores import require_jiwer

        require_jiwer()
    items = read_eval_items("builtin", limit=sentences)
    return _quality(engines, exact, candidates, items, intelligibility, dict(locks or {}))


def runs_exact(engine) -> bool:
    """Whether ``engine`` computes its backbone in fp32 (an fp32 folder, or an int4 one dequantized at load)."""
    info = getattr(engine, "backbone_choice", None) or {}
    return (info.get("source") if info.get("choice") == "as built" else info.get("choice")) == EXACT_BACKBONE


def exact_engine(engine):
    """An engine of ``engine``'s folder with the fp32 backbone: ``engine`` itself when it runs one."""
    if runs_exact(engine):
        return engine
    from ..engine.loop import OmniVoiceEngine

    return OmniVoiceEngine(engine.folder, provider=engine.provider, threads=engine.threads, verify="size",
                           limits=engine.limits, backbone=EXACT_BACKBONE, recognizer=engine.recognizer,
                           calibrate=False)


def _quality(engines, exact: Candidate, candidates, items, intelligibility: bool, locks: dict) -> Iterator:
    scorers = Scorers(notes=[] if intelligibility else ["WER/CER not measured (tick it to load the recogniser)."])
    if intelligibility:
        recognizer = engines[exact.model].recognizer
        if hasattr(recognizer, "get"):
            recognizer.get()  # a recogniser that cannot be had stops the run before any work
        scorers.recognizer, scorers.recognizer_id = recognizer, "app"
    opened = {}  # the exact engine, opened when first asked for and dropped with this generator

    def engine_of(candidate: Candidate):
        if candidate.model == exact.model and candidate.backbone == EXACT_BACKBONE:
            if not opened:
                opened["exact"] = exact_engine(engines[exact.model])
            return opened["exact"]
        return engines[candidate.model]

    def lock_of(candidate: Candidate):  # an engine opened for the run is this job's alone
        engine = engine_of(candidate)
        return locks.get(candidate.model) if engine is engines[candidate.model] else None

    with tempfile.TemporaryDirectory(prefix="omnivoice-quality-") as folder:
        yield from eval_events(items, candidates, folder, exact=exact, scorers=scorers, engines=engine_of,
                               lock_of=lock_of)


def queued_quality(service, models: Sequence, choices: Sequence[str], sentences: int,
                   intelligibility: bool) -> Iterator:
    """The quality run through ``service`` (the server's one queue) as it goes: ``QualityProgress`` while
    waiting ("Waiting: N in the queue"), at each generation and scoring and at every engine step, then
    the ``EvalReport``.  ``models``: the loaded models (``label``, ``engine``, ``lock``), the exact one first.

    Closing this generator cancels the job: dropped from the queue, or stopped after the step in flight
    (the model's lock is free again then).  Raises ``InvalidInput`` when the run ended without a report."""
    start = quality_events({m.label: m.engine for m in models}, models[0].label, choices, sentences,
                           intelligibility, locks={m.label: m.lock for m in models})
    job = service.submit(lambda: start, label=JOB_LABEL)
    stage, report = QualityProgress("Starting", 0.0), None
    for event in job.events():
        if event.kind == "queue":
            yield QualityProgress(f"Waiting: {event.position} in the queue", 0.0)
        elif isinstance(event, EvalProgress):
            if event.report is not None:
                report = event.report
            else:
                stage = QualityProgress(_describe(event), event.fraction)
                yield stage
        elif event.kind == "step":
            yield QualityProgress(f"{stage.message}: step {event.step} of {event.num_steps}", stage.fraction)
    if report is None:
        raise InvalidInput("The quality run was cancelled before it finished.")
    yield report


def _describe(event: EvalProgress) -> str:
    what = event.what[4:] if event.what.startswith("asr ") else event.what
    doing = "Transcribing" if event.what.startswith("asr ") else "Generating"
    return f"{doing} {what}" if not event.finished else f"Done {event.done} of {event.total}"
