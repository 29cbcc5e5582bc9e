"""What a batch run hands back (``runner.run_batch``): the ``Summary`` and, per item, an ``ItemResult``.

``BatchResult.items`` holds every item of the plan by id: its audio file, the render key it was made (or
failed) under, and its outcome (made in this run, reused, failed, or not run: the run was stopped before it).
A caller (``omnivoice book``) reads the items' files and records through it (``audio``, ``record``,
``discard``) rather than through the output folder's layout, which is ``store``'s.
"""

from __future__ import annotations

import dataclasses
import pathlib
from typing import Optional

from .store import OutputFolder

MADE, REUSED, FAILED, NOT_RUN = "made", "reused", "failed", "not run"


@dataclasses.dataclass
class Summary:
    total: int = 0
    done: int = 0                 # synthesised in this run
    skipped: int = 0              # done before, reused
    failed: int = 0               # failed in this run, or before and not retried
    audio_seconds: float = 0.0    # made in this run
    startup_seconds: float = 0.0  # starting the workers and loading their engines
    wall_seconds: float = 0.0     # synthesis, after the start-up
    workers: int = 0
    errors: dict[str, str] = dataclasses.field(default_factory=dict)
    #: made again although made before, by why (the parts of the render key that changed): count
    remade: dict[str, int] = dataclasses.field(default_factory=dict)
    book: Optional[str] = None
    checked_chunks: int = 0       # the sentence check (--guard): chunks checked in this run,
    retried_chunks: int = 0       # those generated more than once,
    unpassed_chunks: int = 0      # and those whose best take still failed the threshold

    @property
    def items_per_hour(self) -> float:
        return self.done * 3600 / self.wall_seconds if self.wall_seconds else 0.0

    @property
    def audio_hours_per_hour(self) -> float:
        return self.audio_seconds / self.wall_seconds if self.wall_seconds else 0.0

    @property
    def complete(self) -> bool:
        """Every item made or reused, none failed (nor refused, nor left when the run was stopped)."""
        return self.failed == 0 and self.done + self.skipped == self.total

    def lines(self) -> list[str]:
        lines = [f"{self.total} items: {self.done} done, {self.skipped} skipped (done before), {self.failed} failed"]
        if self.workers:
            lines.append(f"{self.audio_seconds / 3600:.4f} h of audio in {self.wall_seconds:.1f} s "
                         f"(+{self.startup_seconds:.1f} s start-up) with {self.workers} worker(s): "
                         f"{self.items_per_hour:.0f} items/h, {self.audio_hours_per_hour:.3f} h of audio per hour")
        else:
            lines.append("nothing to synthesise (--retry-failed runs the failed items again)"
                         if self.failed else "nothing to synthesise: every item was made before with the same "
                                             "render key")
        lines += [f"made again: {count} item(s) made before, changed: {why}" for why, count in self.remade.items()]
        if self.checked_chunks:
            lines.append(f"sentence check: {self.checked_chunks} chunks checked, {self.retried_chunks} retried, "
                         f"{self.unpassed_chunks} never passed (their best take was kept)")
        lines += [f"failed {item_id}: {error}" for item_id, error in list(self.errors.items())[:20]]
        if self.book:
            lines.append(f"book: {self.book}")
        return lines


@dataclasses.dataclass(frozen=True)
class ItemResult:
    """One item of a run: ``outcome`` (``MADE``, ``REUSED``, ``FAILED`` or ``NOT_RUN``), its audio file (made or
    reused), the render key it was made or failed under, and why it failed."""

    id: str
    outcome: str
    audio: Optional[pathlib.Path] = None
    key: Optional[str] = None
    error: str = ""


@dataclasses.dataclass
class BatchResult:
    summary: Summary
    folder: OutputFolder
    items: dict[str, ItemResult]
    #: the records read so far, by item: a book's end reads each one for its words, its checks and its takes
    _records: dict[str, dict] = dataclasses.field(default_factory=dict, repr=False, compare=False)

    @property
    def complete(self) -> bool:
        return self.summary.complete

    def record(self, item_id: str) -> dict:
        """The item's record (its sidecar: chunk times, ``words``, ``checks``, ``no_audio_takes``, ...); {} when
        it has none.  Read once and kept (the run has ended, so nothing writes it again but ``discard``): the
        same dict each time, which callers read and do not change."""
        if item_id not in self._records:
            self._records[item_id] = self.folder.read_sidecar(item_id) or {}
        return self._records[item_id]

    def discard(self, item_id: str) -> None:
        """Remove the item's audio and record, so the next run makes it again."""
        self._records.pop(item_id, None)
        audio = self.items[item_id].audio
        for path in ((audio,) if audio else ()) + (self.folder.sidecar_path(item_id),):
            path.unlink(missing_ok=True)
