"""The hardening probe's command line (what it probes, its servers and outcomes: ``benchmarks/hardening/``):

    python benchmarks/hardening_probe.py [--repo PATH] [--model DIR] [--families 1,2,...]
                                         [--json probe.json] [--markdown probe.md] [--work DIR]

The probe itself is the package ``benchmarks/hardening/``: one module per family in ``families/`` (a new family
is a module there, listed in ``families/__init__.py``), with the runner, the server under test and the
visitor's requests beside them.  This file keeps the names other tests import.
"""

from __future__ import annotations

import pathlib
import sys

if str(pathlib.Path(__file__).resolve().parents[1]) not in sys.path:  # run as a script
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from benchmarks.hardening.families import FAMILIES  # noqa: E402
from benchmarks.hardening.families.api_key_scope import KEYED_ROUTES  # noqa: E402
from benchmarks.hardening.families.busy_launch import FAILING_LOCALHOST_CHECK, SLOW_SERVER_START  # noqa: E402
from benchmarks.hardening.families.wyoming import WYOMING_MALFORMED, WYOMING_SPEAKERS, wyoming_exchange, wyoming_header  # noqa: E402
from benchmarks.hardening.probe import OUTCOMES, Case, Probe  # noqa: E402
from benchmarks.hardening.runner import HERE, main, markdown, run_probe, summary  # noqa: E402
from benchmarks.hardening.visitor import clear_4xx  # noqa: E402

__all__ = ["FAILING_LOCALHOST_CHECK", "FAMILIES", "HERE", "KEYED_ROUTES", "OUTCOMES", "SLOW_SERVER_START",
           "WYOMING_MALFORMED", "WYOMING_SPEAKERS", "Case", "Probe", "clear_4xx", "main", "markdown", "run_probe",
           "summary", "wyoming_exchange", "wyoming_header"]

if __name__ == "__main__":
    sys.exit(main())
