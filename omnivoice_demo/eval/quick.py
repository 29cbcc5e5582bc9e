"""A quick evaluation over engines already loaded (the app's Benchmark tab): a few built-in sentences.

The exact configuration is the active model at the Reference preset; the
candidates are presets and sentence streaming on it, and the other loaded models
(another precision, another backbone) at the Reference preset.  The run goes to
a temporary folder: the app keeps only the report.
"""

from __future__ import annotations

import re
import tempfile
from typing import Callable, Mapping, Optional, Sequence

from ..errors import InvalidInput
from .candidates import Candidate, exact_candidate, parse_candidate
from .items import read_eval_items
from .report import EvalReport
from .runner import Scorers, run_eval

#: what the tab offers, as ``--candidate`` specs
CANDIDATE_CHOICES = {"balanced": "name=balanced,preset=balanced", "fast": "name=fast,preset=fast",
                     "streaming": "name=streaming,streaming=on"}
MAX_SENTENCES = 5


def quality_run(engines: Mapping[str, object], exact_label: str, choices: Sequence[str], sentences: int,
                intelligibility: bool, on_progress: Optional[Callable[[int, int, str], None]] = None) -> EvalReport:
    """``engines``: loaded model label -> engine (the exact one's label among them)."""
    if not 1 <= sentences <= MAX_SENTENCES:
        raise InvalidInput(f"Sentences must be between 1 and {MAX_SENTENCES}, got {sentences}.", param="sentences")
    unknown = [c for c in choices if c not in CANDIDATE_CHOICES]
    if unknown:
        raise InvalidInput(f"Unknown candidate {unknown[0]!r}; choose from {', '.join(CANDIDATE_CHOICES)}.",
                           param="candidates")

    def backbone(label: str) -> str:
        return str(getattr(engines[label], "backbone_choice", {}).get("mode", "as loaded"))

    exact = exact_candidate(exact_label, backbone=backbone(exact_label))
    candidates = [parse_candidate(CANDIDATE_CHOICES[c]) for c in choices]
    candidates += [Candidate(re.sub(r"[^A-Za-z0-9._+-]+", "-", label).strip("-")[:64] or "model", model=label,
                             backbone=backbone(label)) for label in engines if label != exact_label]
    if not candidates:
        raise InvalidInput("Choose a candidate (a preset, streaming, or another loaded model) to compare.",
                           param="candidates")
    scorers = Scorers(notes=[] if intelligibility else ["WER/CER not measured (tick it to load the recogniser)."])
    if intelligibility:
        recognizer = engines[exact_label].recognizer
        if hasattr(recognizer, "get"):
            recognizer.get()  # a recogniser that cannot be had stops the run before any work
        scorers.recognizer, scorers.recognizer_id = recognizer, "app"
    with tempfile.TemporaryDirectory(prefix="omnivoice-quality-") as folder:
        return run_eval(read_eval_items("builtin", limit=sentences), candidates, folder, exact=exact,
                        engines=lambda candidate: engines[candidate.model], scorers=scorers, progress=False,
                        on_progress=on_progress)
