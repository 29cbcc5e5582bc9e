"""A black-box rerun of issue 21's probe: the families of inputs and faults of its numbered list, 1 to 10,
and of issue 26's (numbered 20 + its item: 21 names, 22 unreadable voices, 25 outputs folder, 29 echoes and
whitespace), and later rounds' (issue 49's books, 61, and faults under a book, 62).

    python benchmarks/hardening_probe.py [--repo PATH] [--model DIR] [--families 1,2,...]
                                         [--json probe.json] [--markdown probe.md] [--work DIR]

It starts ``app.py`` of the checkout at ``--repo`` (default: this one) as a subprocess with PYTHONPATH set to
that checkout, on 127.0.0.1 only, on the tiny fp32 random-weight folder (``--model``, or one built into the
work folder from ``convert.random_checkpoint`` as the tests build theirs: needs the convert extras), and
sends it requests as a visitor would: HTTP (the OpenAI-compatible API and Gradio's routes), gradio_client,
the CLI and batch as subprocesses.  Nothing of the checkout under test is imported (only the process helpers
of this checkout's ``tests/support``), so the same probe runs against any commit that has ``app.py`` and
``python -m omnivoice_demo``.

Servers: one in shared mode with an API key (``--shared --api-key``: what a public server runs) for most
families, one per kill -9 run (family 3, restarted on the same data folder) and one, not shared, on a copy of
the model for family 8, one with ``--wyoming-uri`` (16), one with ``--api-key-scope all`` (17) and one started
with Gradio's localhost check made to fail (18).  Flags a checkout lacks are left out and named in the output.

Each case has a one-line criterion and one outcome:
  held       the documented behaviour: a 4xx with a clear message, bounded memory, work stopped, ...
  broke      a 5xx or internal error, unbounded memory, data kept that should not be, another visitor's data
  crash      the server process died
  data lost  a saved voice or file unreadable or missing afterwards
Output: a Markdown table per family and a summary (cases, held, broke, crashes, data lost), and a JSON file.
Every case is bounded (bodies of at most 100 MB, transcripts of at most 4,000 words, timeouts on every wait);
a whole run takes about 5 to 10 minutes on 2 cores.
"""

# The package: ``server`` (the app under test, its memory), ``visitor`` (what a visitor sends, how an answer is
# judged), ``probe`` (a run's cases and what the families share), ``families/`` (one module per family) and
# ``runner`` (the shared server, the order of a run, the report, the command line).
# ``benchmarks/hardening_probe.py`` is the command line.

from __future__ import annotations

import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parents[2]
if str(HERE) not in sys.path:  # run as a script: this checkout's tests/support (standard library only)
    sys.path.insert(0, str(HERE))
