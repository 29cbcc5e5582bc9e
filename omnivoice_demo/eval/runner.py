"""An evaluation run: every item at every seed through the exact configuration and each candidate.

The output folder (``batch``'s ``OutputFolder``: atomic files, one run per folder
at a time) holds one folder per item and seed, ``<item>-s<seed>/``, with each
configuration's audio side by side (``exact.wav``, ``fast.wav``, ...) and its
sidecar (``exact.json``: the codes, seconds, time, RTF, then the transcript and
speaker similarity once scored), and at the top ``report.md`` and ``report.json``.

Resumable like ``batch``: a sidecar whose key (the item, the seed and everything
that decides the configuration's audio) matches and whose audio's sha256 checks
is reused, and a transcript or similarity already in it for the same recogniser or
speaker model is kept; an interrupted run, run again, redoes nothing finished.

Order: the configurations one after another, those that share an engine (model,
precision, backbone) together, so one engine is in memory at a time and each is
loaded once; then the scoring (one recogniser, one speaker model, each loaded
once for the whole run); then the comparison with the exact run, which reads
only the folder.
"""

from __future__ import annotations

import dataclasses
import io
import sys
from typing import Callable, Optional, Sequence

import numpy as np

from ..batch.store import OutputFolder, file_sha256
from ..errors import InvalidInput
from .candidates import EXACT_NAME, Candidate, EngineSource, checked_name, exact_candidate
from .items import EvalItem
from .report import AUDIO_FORMAT, read_run_audio
from .scores import cosine

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
    speaker: object = None
    notes: list[str] = dataclasses.field(default_factory=list)


def run_eval(items: Sequence[EvalItem], candidates: Sequence[Candidate], output, *,
             exact: Optional[Candidate] = None, engines: Optional[EngineSource] = None,
             scorers: Optional[Scorers] = None, seeds: int = 1, progress: bool = True,
             on_progress: Optional[Progress] = None):
    """Run, score and compare; returns the ``report.EvalReport`` (also written as report.md/.json)."""
    from tqdm import tqdm

    from .candidates import EngineCache
    from .report import build_report

    exact = exact or exact_candidate()
    configurations = _check(items, candidates, exact, seeds)
    engines = engines or EngineCache()
    scorers = scorers or Scorers()
    if scorers.recognizer is not None:
        from .scores import require_jiwer

        require_jiwer()  # before any work: the error rates are counted at the end
    top = OutputFolder(output).create()
    counts = RunCounts()
    runs = [(item, seed) for item in items for seed in item.seeds(seeds)]
    total = len(runs) * len(configurations) * (1 + (scorers.recognizer is not None))
    bar = tqdm(total=total, desc="eval", unit="run", disable=not progress, file=sys.stderr, dynamic_ncols=True)
    done = 0

    def step(what: str) -> None:
        nonlocal done
        done += 1
        bar.update(1)
        bar.set_postfix_str(what[-40:])
        if on_progress is not None:
            on_progress(done, total, what)

    with top.lock(), bar:
        for (item, seed) in runs:
            _folder(top, item, seed).create().remove_stale_parts()
        for configuration in by_engine(configurations):
            _generate_all(configuration, runs, top, engines, counts, step)
        _score_all(configurations, runs, top, scorers, counts, step)
        report = build_report(items, runs, configurations, top, scorers, counts)
        top.write_bytes(top.path / "report.md", report.markdown.encode("utf-8"))
        top.write_json(top.path / "report.json", report.to_dict())
    return report


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
                  step) -> None:
    voices: dict[str, object] = {}
    fingerprints = {item.id: item.fingerprint() for item, _ in runs}
    for item, seed in runs:
        folder = _folder(top, item, seed)
        key = configuration.key(fingerprints[item.id], seed)
        if folder.finished(configuration.name, key, AUDIO_FORMAT) is not None:
            counts.reused += 1
        else:
            engine = engines(configuration)
            voice = None
            if item.cloned:
                if item.id not in voices:
                    voices[item.id] = engine.clone_voice(item.ref_audio, transcript=item.ref_text,
                                                         preprocess=configuration.config.preprocess_prompt)
                voice = voices[item.id]
            result = engine.generate(item.text, language=item.language, instruct=item.instruct, voice=voice,
                                     config=configuration.config.replace(seed=seed))
            _write_run(folder, configuration, key, item, seed, result)
            counts.generated += 1
        step(f"{configuration.name} {item.id}")


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


def _score_all(configurations, runs, top: OutputFolder, scorers: Scorers, counts: RunCounts, step) -> None:
    from ..audio import load_audio_file
    from ..config import Limits

    references: dict[str, np.ndarray] = {}
    for item, seed in runs:
        folder = _folder(top, item, seed)
        for configuration in by_engine(configurations):
            sidecar = folder.read_sidecar(configuration.name)
            changed = False
            if scorers.recognizer is not None:
                if (sidecar.get("transcript") or {}).get("by") != scorers.recognizer_id:
                    audio, rate = read_run_audio(folder, configuration.name)
                    sidecar["transcript"] = {"by": scorers.recognizer_id,
                                             "text": _transcribe(scorers.recognizer, audio, rate, item.language)}
                    counts.transcribed += 1
                    changed = True
                step(f"asr {configuration.name} {item.id}")
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
                    changed = True
            if changed:
                folder.write_json(folder.sidecar_path(configuration.name), sidecar)


def _transcribe(recognizer, audio: np.ndarray, rate: int, language: Optional[str]) -> str:
    """The recogniser's text, told the item's language when it knows it (else it detects one)."""
    if language:
        try:
            return recognizer.transcribe(audio, rate, language=language).text
        except InvalidInput:  # a language Whisper does not know by that code
            pass
    return recognizer.transcribe(audio, rate).text
