"""An evaluation run: every item at every seed through the exact configuration and each candidate.

The output folder (``batch``'s ``OutputFolder``: atomic files, one run per folder
at a time) holds one folder per item and seed, ``<item>-s<seed>/``, with each
configuration's audio side by side (``exact.wav``, ``fast.wav``, ...) and its
sidecar (``exact.json``: the codes, seconds, time, RTF, then the transcript and
speaker similarity once scored), and at the top ``report.md`` and ``report.json``.

Resumable like ``batch``: a sidecar whose render key (``engine.render_key`` of the
item's plan at that seed on the configuration's engine: the text as read, the voice's
content, the settings, the model's content, the backbone compute that runs, ...)
matches and whose audio's sha256 checks is reused (the engine is loaded, and a cloned
voice made, to key it), and a transcript or similarity already in it for the same recogniser or
speaker model is kept; an interrupted run, run again, redoes nothing finished.

Order: the configurations one after another, those that share an engine (model,
precision, backbone) together, so one engine is in memory at a time and each is
loaded once; then the scoring (one recogniser, one speaker model, each loaded
once for the whole run); then the comparison with the exact run, which reads
only the folder.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import sys
from typing import TYPE_CHECKING, Callable, Iterator, Optional, Sequence

import numpy as np

from ..batch.store import OutputFolder
from ..storage.digests import file_sha256
from ..errors import InvalidInput
from .candidates import EXACT_NAME, Candidate, EngineSource, checked_name, exact_candidate
from .items import EvalItem
from .report import AUDIO_FORMAT, read_run_audio
from .scores import cosine

if TYPE_CHECKING:
    from .speaker import SpeakerEmbedder

MAX_CANDIDATES = 16
MAX_SEEDS = 10

#: progress(done, total, what): called after every generation and every scoring step
Progress = Callable[[int, int, str], None]


@dataclasses.dataclass
class RunCounts:
    generated: int = 0
    reused: int = 0
    transcribed: int = 0
    embedded: int = 0


@dataclasses.dataclass
class Scorers:
    """What judges the outputs besides the codes: a recogniser and a speaker model (either may be None).

    ``recognizer`` has ``transcribe(audio, rate, language=None) -> Transcript``;
    ``speaker`` has ``embed(audio, rate) -> vector`` and an ``identity``.  ``notes``
    say in one line each why a score was skipped.
    """

    recognizer: object = None
    recognizer_id: str = ""
    speaker: Optional[SpeakerEmbedder] = None
    notes: list[str] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class EvalProgress:
    """An event of ``eval_events``: ``done`` of ``total`` units (a generation or a scoring) finished, ``what``
    starts (``finished`` False) or just finished; the last event carries the ``report``."""

    done: int
    total: int
    what: str
    finished: bool = True
    report: object = None
    kind: str = "eval"

    @property
    def fraction(self) -> float:
        return self.done / self.total if self.total else 1.0


def run_eval(items: Sequence[EvalItem], candidates: Sequence[Candidate], output, *,
             exact: Optional[Candidate] = None, engines: Optional[EngineSource] = None,
             scorers: Optional[Scorers] = None, seeds: int = 1, progress: bool = True,
             on_progress: Optional[Progress] = None):
    """Run, score and compare; returns the ``report.EvalReport`` (also written as report.md/.json)."""
    from tqdm import tqdm

    events = eval_events(items, candidates, output, exact=exact, engines=engines, scorers=scorers, seeds=seeds)
    report = None
    with contextlib.closing(events), tqdm(desc="eval", unit="run", disable=not progress, file=sys.stderr,
                                          dynamic_ncols=True) as bar:
        for event in events:
            if not isinstance(event, EvalProgress) or not event.finished:
                continue
            if event.report is not None:
                report = event.report
                continue
            bar.total = event.total
            bar.update(event.done - bar.n)
            bar.set_postfix_str(event.what[-40:])
            if on_progress is not None:
                on_progress(event.done, event.total, event.what)
    return report


def eval_events(items: Sequence[EvalItem], candidates: Sequence[Candidate], output, *,
                exact: Optional[Candidate] = None, engines: Optional[EngineSource] = None,
                scorers: Optional[Scorers] = None, seeds: int = 1,
                lock_of: Optional[Callable[[Candidate], object]] = None) -> Iterator:
    """``run_eval`` a step at a time, for a queue (``studio.service``): the request is checked now, and the
    returned generator does the work when iterated.  It yields an ``EvalProgress`` as each generation or
    scoring starts and finishes, every engine ``StepEvent`` in between, and a last ``EvalProgress`` with the
    report.  Closing it stops the run after the step in flight (what finished stays in the folder).
    ``lock_of(configuration)``: a lock held around each of its engine's steps (a loaded model's, shared
    with the app's other users), or None."""
    exact = exact or exact_candidate()
    configurations = _check(items, candidates, exact, seeds)
    scorers = scorers or Scorers()
    if scorers.recognizer is not None:
        from .scores import require_jiwer

        require_jiwer()  # before any work: the error rates are counted at the end
    return _events(items, configurations, output, engines, scorers, seeds, lock_of or (lambda _: None))


def _events(items, configurations, output, engines, scorers: Scorers, seeds: int, lock_of) -> Iterator:
    from .candidates import EngineCache
    from .report import build_report

    engines = engines or EngineCache()
    top = OutputFolder(output).create()
    counts = RunCounts()
    runs = [(item, seed) for item in items for seed in item.seeds(seeds)]
    progress = _Progress(len(runs) * len(configurations) * (1 + (scorers.recognizer is not None)))
    with top.lock():
        for (item, seed) in runs:
            _folder(top, item, seed).create().remove_stale_parts()
        for configuration in by_engine(configurations):
            yield from _generate_all(configuration, runs, top, engines, counts, progress, lock_of(configuration))
        yield from _score_all(configurations, runs, top, scorers, counts, progress)
        report = build_report(items, runs, configurations, top, scorers, counts)
        top.write_bytes(top.path / "report.md", report.markdown.encode("utf-8"))
        top.write_json(top.path / "report.json", report.to_dict())
    yield EvalProgress(progress.total, progress.total, "report", report=report)


class _Progress:
    """Counts the finished units of a run and makes its ``EvalProgress`` events."""

    def __init__(self, total: int):
        self.total, self.done = total, 0

    def starts(self, what: str) -> EvalProgress:
        return EvalProgress(self.done, self.total, what, finished=False)

    def finished(self, what: str) -> EvalProgress:
        self.done += 1
        return EvalProgress(self.done, self.total, what)


def _check(items, candidates, exact: Candidate, seeds: int) -> list[Candidate]:
    if not items:
        raise InvalidInput("There are no items to evaluate.", param="items")
    if not 1 <= len(candidates) <= MAX_CANDIDATES:
        raise InvalidInput(f"Give 1 to {MAX_CANDIDATES} candidates to compare with the exact configuration, "
                           f"got {len(candidates)}.", param="candidate")
    if not isinstance(seeds, int) or not 1 <= seeds <= MAX_SEEDS:
        raise InvalidInput(f"seeds must be a whole number from 1 to {MAX_SEEDS}, got {seeds!r}.", param="seeds")
    configurations = [checked_name(exact)] + [checked_name(c).under(exact) for c in candidates]
    names = [c.name for c in configurations]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise InvalidInput(f"Two configurations are named {repeated[0]!r} ({EXACT_NAME!r} is the exact one's); "
                           "give each candidate its own name=.", param="candidate")
    return configurations


def by_engine(configurations: Sequence[Candidate]) -> list[Candidate]:
    """The configurations in the order they run: grouped by engine, each group where its first one stood."""
    first: dict[tuple, int] = {}
    for index, configuration in enumerate(configurations):
        first.setdefault(configuration.engine_key(), index)
    return sorted(configurations, key=lambda c: first[c.engine_key()])  # stable: the given order within a group


def _folder(top: OutputFolder, item: EvalItem, seed: int) -> OutputFolder:
    return OutputFolder(top.path / f"{item.id}-s{seed}")


def _generate_all(configuration: Candidate, runs, top: OutputFolder, engines: EngineSource, counts: RunCounts,
                  progress: _Progress, lock) -> Iterator:
    voices: dict[str, object] = {}
    for item, seed in runs:
        folder = _folder(top, item, seed)
        what = f"{configuration.name} {item.id}"
        engine = engines(configuration)
        voice = None
        with _held(lock):   # the plan (a cloned voice first) and its render key: what decides reuse
            if item.cloned:
                if item.id not in voices:
                    voices[item.id] = engine.clone_voice(item.ref_audio, transcript=item.ref_text,
                                                         preprocess=configuration.config.preprocess_prompt)
                voice = voices[item.id]
            plan = engine.prepare(item.text, language=item.language, instruct=item.instruct, voice=voice,
                                  config=configuration.config.replace(seed=seed))
            key = engine.render_key(plan, f"{AUDIO_FORMAT} float32")   # the run's audio as written
        if folder.finished(configuration.name, key, AUDIO_FORMAT) is not None:
            counts.reused += 1
        else:
            yield progress.starts(what)
            result = yield from _stepped(engine.run(plan), lock)
            _write_run(folder, configuration, key, item, seed, result)
            counts.generated += 1
        yield progress.finished(what)


def _held(lock):
    return lock if lock is not None else contextlib.nullcontext()


def _stepped(stream, lock) -> Iterator:
    """The engine's events, ``lock`` held around each step; returns the ``GenerationResult``.  Closed early,
    it closes the engine's generator (which frees its buffers)."""
    result = None
    try:
        while True:
            with _held(lock):
                event = next(stream, None)
            if event is None:
                return result
            if getattr(event, "kind", None) == "result":
                result = event
            else:
                yield event
    finally:
        stream.close()


def _write_run(folder: OutputFolder, configuration: Candidate, key: str, item: EvalItem, seed: int, result) -> None:
    import soundfile

    audio_path = folder.audio_path(configuration.name, AUDIO_FORMAT)
    buffer = io.BytesIO()
    soundfile.write(buffer, result.audio, result.sample_rate, format="WAV", subtype="FLOAT")
    folder.write_bytes(audio_path, buffer.getvalue())
    codes = np.concatenate([np.asarray(c) for c in result.codes], axis=-1)
    folder.write_json(folder.sidecar_path(configuration.name), {
        "status": "done", "key": key, "item": item.id, "seed": seed, "configuration": configuration.name,
        "describe": configuration.describe(), "audio": audio_path.name, "sha256": file_sha256(audio_path),
        "seconds": result.duration, "time": result.timings["total"], "rtf": result.rtf,
        "chunks": len(result.chunks), "codes": codes.astype(int).tolist()})


def _score_all(configurations, runs, top: OutputFolder, scorers: Scorers, counts: RunCounts,
               progress: _Progress) -> Iterator:
    from ..audio.processing import load_audio_file
    from ..settings.limits import Limits

    references: dict[str, np.ndarray] = {}
    for item, seed in runs:
        folder = _folder(top, item, seed)
        for configuration in configurations:
            sidecar = folder.read_sidecar(configuration.name)
            if scorers.recognizer is not None:
                what = f"asr {configuration.name} {item.id}"
                if (sidecar.get("transcript") or {}).get("by") != scorers.recognizer_id:
                    yield progress.starts(what)
                    audio, rate = read_run_audio(folder, configuration.name)
                    sidecar["transcript"] = {"by": scorers.recognizer_id,
                                             "text": _transcribe(scorers.recognizer, audio, rate, item.language)}
                    counts.transcribed += 1
                    folder.write_json(folder.sidecar_path(configuration.name), sidecar)  # kept if stopped now
                yield progress.finished(what)
            speaker = scorers.speaker
            if speaker is not None and item.cloned:
                if (sidecar.get("similarity") or {}).get("by") != speaker.identity:
                    if item.id not in references:
                        limits = Limits.local()
                        clip, clip_rate = load_audio_file(item.ref_audio, max_seconds=limits.max_reference_seconds,
                                                          max_bytes=limits.max_upload_bytes, what="reference audio")
                        references[item.id] = speaker.embed(clip.mean(axis=0), clip_rate)
                    audio, rate = read_run_audio(folder, configuration.name)
                    sidecar["similarity"] = {"by": speaker.identity,
                                             "value": cosine(speaker.embed(audio, rate), references[item.id])}
                    counts.embedded += 1
                    folder.write_json(folder.sidecar_path(configuration.name), sidecar)


def _transcribe(recognizer, audio: np.ndarray, rate: int, language: Optional[str]) -> str:
    """The recogniser's text, told the item's language when it knows it (else it detects one)."""
    if language:
        try:
            return recognizer.transcribe(audio, rate, language=language).text
        except InvalidInput:  # a language Whisper does not know by that code
            pass
    return recognizer.transcribe(audio, rate).text
