"""What a resolution returns: the ready folder and where it came from."""

from __future__ import annotations

import dataclasses
import pathlib
from typing import TYPE_CHECKING, Optional

from .progress import Reporter

if TYPE_CHECKING:
    from ..backbones.checkpoint import CheckpointWeights


@dataclasses.dataclass(frozen=True)
class ResolvedModel:
    """A ready model folder and what was done to get it.

    ``path``: the folder to open (``OmniVoiceEngine(resolved.path, verify="size")``: its files
    were just checked as ``verified`` says, so the engine need not hash them again).
    ``source``: what was asked for; ``repo_id``/``revision``/``commit``: the Hub repo, when
    it came from one; ``precision``; ``subfolder``: the folder of the source it was taken
    from ("" for the root); ``repaired``: we made the backbone bidirectional;
    ``notices``: messages for the user; ``verified``: "sha256" (every file hashed during
    this resolution) or "size" (``checksums=False``: sizes only); ``backbone_weights``: with
    precision int8, the original weights the backbone is built from (``CheckpointWeights``).
    """

    path: pathlib.Path
    source: str
    precision: str
    repo_id: str | None = None
    revision: str | None = None
    commit: str | None = None
    subfolder: str | None = None
    repaired: bool = False
    notices: list[str] = dataclasses.field(default_factory=list)
    verified: str = "sha256"
    backbone_weights: Optional[CheckpointWeights] = None


def finish(reporter: Reporter, path: pathlib.Path, *, checksums: bool = True, **attrs) -> ResolvedModel:
    """The result, with the notices collected so far; reports "ready"."""
    result = ResolvedModel(path=path, notices=list(reporter.notices), verified="sha256" if checksums else "size",
                           **attrs)
    reporter.emit("ready", f"model ready: {path}")
    return result
