"""How the command line says an error: one ``error: ...`` line and an exit status, never a traceback.

Our errors go through ``errors.refusal_of``, the mapping the HTTP API and the page share: the line is its
message and the status its ``exit_status`` (2).  A wrong flag is the same kind of line (``OneLineParser``).
Anything else is an internal error: its traceback goes to the log, the user gets one line, status 1.
``flagged`` says an input's error as one of its flag (``--text: ...``), of the same class whatever its
constructor takes (``errors.reworded``; issue 58: an ``SsmlError`` ended in a ``TypeError`` there).
"""

from __future__ import annotations

import logging
import sys

from ..errors import InvalidInput, refusal_of, reworded
from ..studio.store_url import RedactingParser

#: the line of an error that is not ours (the log above it has the traceback)
INTERNAL_ERROR = "error: internal error (the log above has the details); please report it"


class OneLineParser(RedactingParser):
    """An ``ArgumentParser`` whose errors are one ``error:`` line (status 2), like every other known error, never
    repeating a store's password (``RedactingParser``: argparse echoes the arguments it does not know)."""

    def error(self, message: str):  # type: ignore[override]
        self.exit(2, f"error: {' '.join(self.redacted(message).split())} (see {self.prog} --help)\n")


def flagged(flag: str, check, *args, **kwargs):
    """``check(*args, **kwargs)``, its ``InvalidInput`` said as one of ``flag``."""
    try:
        return check(*args, **kwargs)
    except InvalidInput as exc:
        raise reworded(exc, f"{flag}: {exc}") from exc


def run_command(run, args) -> int:
    """``run(args)``'s exit status, or its error said as one line on stderr (``errors.refusal_of``)."""
    try:
        return run(args)
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # noqa: BLE001 - every error is one line; the unexpected ones are logged
        said = refusal_of(exc)
        if said is None:   # an internal error: the traceback goes to the log, the user gets one line
            logging.getLogger("omnivoice").error("internal error", exc_info=exc)
            print(INTERNAL_ERROR, file=sys.stderr)
            return 1
        print(f"error: {said.message}", file=sys.stderr)
        return said.exit_status
