"""Quality against the exact model: ``omnivoice eval`` and its Python API.

    from omnivoice_demo.eval import exact_candidate, parse_candidate, read_eval_items, run_eval

    report = run_eval(read_eval_items("builtin"), [parse_candidate("preset=fast")], "eval-out",
                      exact=exact_candidate("path/to/model"))
    print(report.markdown)

Every candidate (a precision, backbone, preset, any generation setting, sentence
streaming) speaks the same items at the same seeds as the exact configuration;
``runner`` runs and scores them (resumably; ``eval_events`` a step at a time, for
the server's queue), ``report`` compares, ``scores`` holds the measures and the text
normalisation, ``speaker`` the speaker-similarity model, ``quick`` the app's run
over the loaded models, ``quick_bench`` the app's Benchmark tab (seconds per stage of loaded engines).
"""

from .candidates import Candidate, EngineCache, exact_candidate, parse_candidate
from .items import EvalItem, read_eval_items
from .report import EvalReport
from .runner import EvalProgress, Scorers, eval_events, run_eval

__all__ = ["Candidate", "EngineCache", "EvalItem", "EvalProgress", "EvalReport", "Scorers", "eval_events",
           "exact_candidate", "parse_candidate", "read_eval_items", "run_eval"]
