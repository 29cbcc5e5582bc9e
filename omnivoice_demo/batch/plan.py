"""A batch run's plan: everything a run needs, built once by its caller, handed to ``runner.run_batch`` whole.

``BatchPlan`` holds the items (each with everything that decides its audio), where and in which form their
files go (``worker.Job``), how each worker finds the model (``worker.ModelSpec``) and where the items run
(``Workers``: this process, N worker processes or Ray actors), whether failed items run again, and the input's
rows that could not be read.  ``omnivoice batch`` builds it from its flags and input file, ``omnivoice book``
from its settings and the book's sentences; the runner reads everything from it and hands back a
``results.BatchResult``.
"""

from __future__ import annotations

import dataclasses
from typing import Optional

from ..errors import InvalidInput
from .items import BatchItem
from .store import OutputFolder
from .worker import Job, ModelSpec


@dataclasses.dataclass(frozen=True)
class Workers:
    """Where the items run: on Ray actors of ``actor_cpus`` CPUs (their engines' threads) and ``actor_gpus`` GPUs
    when ``ray`` names a cluster (``auto``: the running one, ``local``: start one here, ``ray://HOST:PORT``); else
    ``count`` local processes (1: this process), each with ``threads`` threads (None: its share of the cores)."""

    count: int = 1
    threads: Optional[int] = None
    ray: Optional[str] = None
    actor_cpus: int = 1
    actor_gpus: float = 0

    def __post_init__(self):
        if self.count < 1:
            raise InvalidInput("--workers must be at least 1.", param="workers")

    @classmethod
    def from_arguments(cls, args) -> "Workers":
        """From ``--workers``, ``--threads``, ``--ray``, ``--actor-cpus``, ``--actor-gpus``
        (``cli.add_backend_arguments``)."""
        return cls(count=args.workers, threads=args.threads, ray=args.ray, actor_cpus=args.actor_cpus,
                   actor_gpus=args.actor_gpus)

    def open(self, model: ModelSpec):
        """The backend (``runner.Backend``) these workers are, each opening ``model``."""
        if self.ray:
            from .ray_backend import RayBackend

            return RayBackend(model, address=self.ray, cpus_per_actor=self.actor_cpus,
                              gpus_per_actor=self.actor_gpus)
        from ..hub import console_progress

        model = model.resolved(progress=console_progress())  # once here; the workers open the same folder
        if self.count == 1:
            from .local import InlineBackend

            return InlineBackend(model, self.threads)
        from .local import ProcessBackend

        return ProcessBackend(model, self.count, self.threads)


@dataclasses.dataclass(frozen=True)
class BatchPlan:
    """A run, whole: ``items`` (ids unique) made as ``job`` says, by engines opened from ``model`` on ``workers``
    (``model`` None: the caller hands ``run_batch`` a backend on an engine already open, as the app's book jobs
    do); ``retry_failed``: items that failed before under the same render key run again; ``book``: also write
    ``book.<format>`` and its subtitles (``batch.book``); ``rejected``: ``(line, message)`` of the input's rows
    that could not be read (counted as failed)."""

    items: tuple[BatchItem, ...]
    job: Job
    model: Optional[ModelSpec] = None
    workers: Workers = Workers()
    retry_failed: bool = False
    book: bool = False
    rejected: tuple[tuple[int, str], ...] = ()

    def open_backend(self):
        if self.model is None:
            raise ValueError("this batch plan names no model: hand run_batch the backend it runs on")
        return self.workers.open(self.model)

    def written(self) -> set[str]:
        """The ids of the items whose audio and record are in the output folder now (while a run goes on, those it
        has written so far; whether one is reused is its render key's to say)."""
        folder = OutputFolder(self.job.output)
        return {item.id for item in self.items if folder.sidecar_path(item.id).is_file()
                and folder.audio_path(item.id, self.job.audio_format).is_file()}
