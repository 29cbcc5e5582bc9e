"""How long the voice store may take: ``StoreTimeouts``, the ``--voice-store-*-timeout`` flags.

A database that stalls (its server process stopped, a table lock held by another client, a network that drops
packets) must cost a request a bounded wait, then a clear 503 (``voice_store_unavailable``), never the server:

* ``connect``: seconds to open a connection (libpq's ``connect_timeout``; libpq counts whole seconds, 2 at least);
* ``statement``: seconds one statement may run (the server's ``statement_timeout``, which also bounds a wait for a
  lock); the program itself cuts a connection that stays silent a second longer than that (a server process that
  is stopped cannot enforce its own timeout);
* ``pool_wait``: seconds to wait for a free pooled connection when all are busy.

``call`` is what one front-end call of the store may take in all (a connection waited for, checked, and used);
the HTTP API answers 503 after it whatever the store is doing.
"""

from __future__ import annotations

import argparse
import dataclasses
import math

from ..errors import excerpt


@dataclasses.dataclass(frozen=True)
class StoreTimeouts:
    """Seconds the voice store may take (see the module docstring)."""

    connect: float = 5.0
    statement: float = 5.0
    pool_wait: float = 5.0

    @property
    def statement_ms(self) -> int:
        return max(1, int(self.statement * 1000))

    @property
    def silence(self) -> float:
        """Seconds a connection may stay silent in one statement before the program cuts it."""
        return self.statement + 1.0

    @property
    def check(self) -> float:
        """Seconds a pooled connection may take to answer the empty query that checks it before a use (then it is
        replaced: a healthy server answers in milliseconds)."""
        return min(self.silence, 2.0)

    @property
    def call(self) -> float:
        """One front-end call at most: a connection waited for, checked (or opened), a transaction run."""
        return self.pool_wait + max(self.connect, self.silence) + self.silence + 1.0


FLAGS = {"connect": "--voice-store-connect-timeout", "statement": "--voice-store-statement-timeout",
         "pool_wait": "--voice-store-pool-timeout"}
HELP = {"connect": "seconds to open a database connection", "statement": "seconds one database statement may run",
        "pool_wait": "seconds to wait for a free pooled database connection"}


def add_store_timeout_arguments(parser) -> None:
    """One flag per ``StoreTimeouts`` field (a database store only; the folder store has nothing to wait for)."""
    for field in dataclasses.fields(StoreTimeouts):
        parser.add_argument(FLAGS[field.name], dest="store_" + field.name, type=_seconds(FLAGS[field.name]),
                            default=None, metavar="S",
                            help=f"{HELP[field.name]} (default {field.default:g}; then a 503 voice_store_unavailable)")


def store_timeouts_from_arguments(args) -> StoreTimeouts:
    given = {f.name: getattr(args, "store_" + f.name) for f in dataclasses.fields(StoreTimeouts)
             if getattr(args, "store_" + f.name, None) is not None}
    return StoreTimeouts(**given)


def _seconds(flag: str):
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not (0 < value <= 3600 and math.isfinite(value)):
            raise argparse.ArgumentTypeError(f"{flag} takes seconds between 0 and 3600, got {excerpt(text)}")
        return value
    parse.__name__ = "seconds"
    return parse
