"""The item function: one engine, one item in, its files in the output folder, its record out.

The same ``ItemWorker`` runs in the batch's own process (one worker), in each
worker process (``--workers N``) and in each Ray actor (``--ray``), so every
backend writes the same files by the same atomic rules (``store``).
"""

from __future__ import annotations

import dataclasses
import logging
import os
import socket
import time
from typing import Optional

import numpy as np

from ..settings.limits import Limits
from ..constants import FRAME_RATE
from ..engine.render_key import key_of as render_key_of, with_recognizer
from ..errors import OmniVoiceError, one_line
from ..studio.results import checks_of
from .items import BatchItem
from ..storage.digests import codes_sha256, file_sha256
from .store import FolderNotWritable, OutputFolder
from ..asr.alignment import WordTiming
from .subtitles import cues_for_chunks, render, word_subtitles
from .timeline import chunk_spans

log = logging.getLogger("omnivoice.batch")
SUBTYPE = "PCM_16"
#: takes of an item whose take had no audio (all silence, removed by the post-processing): each with the next seed
NO_AUDIO_TAKES = 3


class NoAudio(OmniVoiceError):
    """Every take of an item came out with no audio."""


@dataclasses.dataclass(frozen=True)
class ModelSpec:
    """How each worker finds the model: ``--model``/``--precision`` resolved on its own machine, into its
    own cache, unless ``folder`` is already a ready folder there (local workers share the parent's)."""

    model: Optional[str] = None
    precision: Optional[str] = None
    cache_dir: Optional[str] = None
    offline: Optional[bool] = None
    provider: str = "cpu"
    folder: Optional[str] = None
    limits: Limits = dataclasses.field(default_factory=Limits.local)   # --limits/--max-... (batch: local)
    backbone: str = "auto"                                             # --backbone
    backbone_weights: Optional[str] = None                             # --backbone-weights
    weights_file: Optional[str] = None  # the original weights the resolver brought (--precision int8)

    @classmethod
    def from_arguments(cls, args) -> "ModelSpec":
        """From the model's flags (``--model``, ``--precision``, ``--model-cache``, ``--offline``, ``--provider``,
        ``--limits``/``--max-...``, ``--backbone``, ``--backbone-weights``)."""
        from ..backbones.choice import backbone_settings
        from ..settings.limits import limits_from_arguments

        return cls(model=args.model, precision=args.precision, cache_dir=args.model_cache, offline=args.offline,
                   provider=args.provider, limits=limits_from_arguments(args), **backbone_settings(args))

    def resolved(self, progress=None) -> "ModelSpec":
        """This spec with ``folder`` set: the model resolved (fetched, checked) on this machine."""
        from ..hub import resolve_model

        if self.folder:
            return self
        ready = resolve_model(self.model, precision=self.precision, cache_dir=self.cache_dir, offline=self.offline,
                              progress=progress or (lambda *_: None))
        weights = ready.backbone_weights
        return dataclasses.replace(self, folder=str(ready.path), weights_file=str(weights.path) if weights else None)

    def open(self, threads: Optional[int]):
        from ..engine.loop import OmniVoiceEngine

        # the resolver has checked every file (sha256): the engine checks sizes only
        return OmniVoiceEngine(self.resolved().folder, provider=self.provider, threads=threads, verify="size",
                               limits=self.limits, backbone=self.backbone,
                               backbone_weights=self.backbone_weights or self.weights_file)


@dataclasses.dataclass(frozen=True)
class Job:
    """What every item of a run shares."""

    output: str
    audio_format: str = "wav"
    subtitles: tuple[str, ...] = ()
    #: seconds of silence kept for an item whose every take had no audio (a book: the run finishes and the report
    #: names it); 0: such an item fails, naming why (a batch).  No file that is not audio is written either way.
    silence_for_no_audio: float = 0.0


class ItemWorker:
    def __init__(self, spec: ModelSpec, threads: Optional[int] = None):
        self.engine = spec.open(threads)
        self.threads = threads

    @classmethod
    def on_engine(cls, engine, threads: Optional[int] = None) -> "ItemWorker":
        """A worker on an engine already open (the app's, for its book jobs)."""
        worker = cls.__new__(cls)
        worker.engine, worker.threads = engine, threads
        return worker

    def check(self, items: list[BatchItem], audio_format: str = "wav") -> tuple[list[tuple[int, str]],
                                                                                dict[str, float], dict[str, dict]]:
        """The engine's own checks of every item (``prepare``; no compute): problems (line, message), planned
        seconds, and each item's render key's parts as ``audio_format`` on this engine (``engine.render_parts``:
        what decides whether its audio made before is reused).  Each item is checked on its own: one that fails
        (even by an error of ours) leaves the others."""
        problems, seconds, parts = [], {}, {}
        for item in items:
            try:
                plan = item.plan(self.engine)
                parts[item.id] = self.render_parts(plan, audio_format)
            except OmniVoiceError as exc:
                problems.append((item.line, one_line(exc)))
                continue
            except Exception as exc:  # noqa: BLE001 - recorded as the item's failure, logged for us
                log.exception("internal error checking item %s", item.id)
                problems.append((item.line, f"internal error ({type(exc).__name__}); please report it"))
                continue
            seconds[item.id] = plan.target_frames / FRAME_RATE
        return problems, seconds, parts

    def render_parts(self, plan, audio_format: str) -> dict:
        """The parts of ``plan``'s render key on this engine, with the recogniser that chooses its takes where its
        sentence check is on (``render_key.with_recognizer``)."""
        return with_recognizer(self.engine.render_parts(plan, audio_format), plan, self.engine.recognizer)

    def run(self, item: BatchItem, job: Job) -> dict:
        """Synthesise one item and write its files; a failure is recorded in its sidecar, not raised."""
        folder = OutputFolder(job.output)
        started = time.perf_counter()
        base = {"id": item.id, "line": item.line, "key": None, "text": item.text, "instruct": item.instruct,
                "instruct_ignored": list(item.ignored), "host": socket.gethostname(), "pid": os.getpid()}
        try:
            record = self._synthesise(item, job, folder, base)
        except FolderNotWritable:   # a full disk: every later item would fail too; the run stops, saying why
            raise
        except Exception as exc:  # noqa: BLE001 - one bad item must not stop the batch; its error is recorded
            if isinstance(exc, OmniVoiceError):
                error = one_line(exc)
            else:
                log.exception("internal error on item %s", item.id)
                error = f"internal error ({type(exc).__name__}: {exc})"
            record = dict(base, status="failed", error=error, wall_seconds=time.perf_counter() - started)
        folder.write_json(folder.sidecar_path(item.id), record)
        return record

    def _synthesise(self, item: BatchItem, job: Job, folder: OutputFolder, base: dict) -> dict:

        started = time.perf_counter()
        plan = item.plan(self.engine)   # the item as asked: its render key decides reuse, whatever the takes
        base["key"] = render_key_of(self.render_parts(plan, job.audio_format))   # a failure is recorded under it
        silent = 0
        for take in range(NO_AUDIO_TAKES):   # a take with no audio is a failed take: the next seed makes another
            chunk_audio, result = self._take(item, take)
            if len(result.audio):
                break
            silent += 1
        # what ran: the compute now (a re-probe may have changed it during the run), the plan as asked
        render = self.render_parts(plan, job.audio_format)
        base.update(key=render_key_of(render), render=render)
        rate = result.sample_rate
        if not len(result.audio):
            if job.silence_for_no_audio <= 0:
                raise NoAudio(f"{NO_AUDIO_TAKES} takes of {item.text[:80]!r} came out with no audio (all silence, "
                              "removed by the post-processing); rewrite the text or try another voice or seed.")
            result = dataclasses.replace(result, audio=np.zeros(int(job.silence_for_no_audio * rate), np.float32))
        if silent == NO_AUDIO_TAKES:   # kept as silence: one span, the item's text
            chunks = [{"text": item.text, "start": 0.0, "end": len(result.audio) / rate}]
        elif result.turns:   # a script: a span per turn, naming its speaker
            chunks = [dict(turn) for turn in result.turns]
        elif result.segments:   # SSML: its spoken segments, where the join put them
            chunks = [{"text": s["text"], "start": s["start"], "end": s["end"]} for s in result.segments]
        else:
            spans = chunk_spans(chunk_audio, len(result.audio), postprocess=result.config.postprocess,
                                pad_duration=result.config.pad_duration, sample_rate=rate)
            chunks = [{"text": text, "start": start / rate, "end": end / rate}
                      for text, (start, end) in zip(result.chunks, spans)]
        audio_path = folder.audio_path(item.id, job.audio_format)
        folder.write_audio(audio_path, result.audio, rate, job.audio_format, SUBTYPE)
        words = [word.to_dict() for word in result.words]
        write_subtitles(folder, item.id, chunks, job.subtitles, words, item.language)
        return dict(base, status="done", audio=audio_path.name, format=job.audio_format, sample_rate=rate,
                    samples=int(len(result.audio)), seconds=len(result.audio) / rate, sha256=file_sha256(audio_path),
                    codes_sha256=codes_sha256(result.codes), seed=int(result.seed), config=result.config.to_dict(),
                    settings=result.settings, chunks=chunks, timings=result.timings,
                    wall_seconds=time.perf_counter() - started, threads=self.threads,
                    **({"checks": checks_of(result)} if result.checks else {}), **({"words": words} if words else {}),
                    **({"no_audio_takes": silent} if silent else {}))

    def _take(self, item: BatchItem, take: int):
        """(the chunks' audio, the result) of one take: the item's seed, then the next ones."""
        if take and item.config.seed is not None:
            item = dataclasses.replace(item, config=item.config.replace(seed=int(item.config.seed) + take))
        chunk_audio, result = [], None
        for event in self.engine.run(item.plan(self.engine)):
            if event.kind == "chunk":
                chunk_audio.append(event.audio)
            elif event.kind == "result":
                result = event
        return chunk_audio, result


def write_subtitles(folder: OutputFolder, item_id: str, chunks: list[dict], kinds, words=None,
                    language: Optional[str] = None) -> None:
    """A cue per sentence in ``<id>.<kind>``; with word times (an item with ``word_timestamps``: its sidecar's
    ``words``) also word-level cues in ``<id>.words.<kind>`` (.srt cues of a few words, .vtt karaoke).  Sentences
    are cut by ``language``'s rules (the item's; None: the text's own)."""
    cues = cues_for_chunks(chunks, language)
    for kind in kinds:
        folder.write_bytes(folder.subtitle_path(item_id, kind), render(cues, kind).encode("utf-8"))
    if words:
        timings = [WordTiming(**word) for word in words]
        for kind in kinds:
            folder.write_bytes(folder.subtitle_path(item_id, f"words.{kind}"),
                               word_subtitles(timings, kind, language).encode("utf-8"))


