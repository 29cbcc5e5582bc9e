"""A real PostgreSQL for the voice-store families (63-65), as the tests start one (``tests/support/postgres.py``:
Debian's ``initdb``/``pg_ctl`` on a free port of 127.0.0.1, trust authentication), and the faults done to it: every
process of the database stopped (SIGSTOP) and continued, a restart, a stop and a start, rows written straight into
the voice table as any program with write access could.  Nothing of the checkout under test is imported: a row's
bytes are copied from a voice the server itself saved."""

from __future__ import annotations

import contextlib
import os
import pathlib
import signal
from typing import Iterator, Optional

#: the store's own short waits, so each fault costs the probe seconds (libpq's connect timeout is 2 s at least)
FAST_FLAGS = ["--voice-store-connect-timeout", "2", "--voice-store-statement-timeout", "2",
              "--voice-store-pool-timeout", "3"]
#: what one stalled store call may take at most with ``FAST_FLAGS`` (connect + statement + pool wait)
CALL_SECONDS = 7.0


def start() -> tuple[Optional[object], str]:
    """(a started ``PostgresServer``, '') or (None, why none can start here)."""
    from tests.support import postgres

    reason = postgres.why_not()
    if reason:
        return None, reason
    return postgres.PostgresServer().start(), ""


def postmaster(server) -> int:
    return int((server.data / "postmaster.pid").read_text().split()[0])


def children(pid: int) -> list[int]:
    found = []
    for stat in pathlib.Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, IndexError, ValueError):
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(stat.parent.name))
    return found


def signal_all(server, signum: int) -> None:
    """``signum`` to the postmaster and every process it started (stopped first, continued last)."""
    main = postmaster(server)
    for pid in [main, *children(main)] if signum == signal.SIGSTOP else [*children(main), main]:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signum)


@contextlib.contextmanager
def stalled(server) -> Iterator[None]:
    """The whole database stopped (its processes SIGSTOPped: connections open, nothing answers), then continued."""
    signal_all(server, signal.SIGSTOP)
    try:
        yield
    finally:
        signal_all(server, signal.SIGCONT)


def pg_ctl(server, action: str) -> int:
    """``pg_ctl restart|stop|start`` with the options the server started with (its log beside them)."""
    options = (f"-c listen_addresses=127.0.0.1 -c port={server.port} -c unix_socket_directories={server.folder} "
               "-c fsync=off -c max_connections=100 -c shared_buffers=16MB")
    extra = ["-m", "fast"] if action in ("restart", "stop") else []
    return server._run(str(server.bin / "pg_ctl"), "-D", str(server.data), "-l", str(server.folder / "server.log"),
                       "-o", options, *extra, "-w", "-t", "60", action, check=False).returncode


def execute(url: str, statement: str, parameters=None, fetch: bool = False):
    import psycopg

    with psycopg.connect(url, autocommit=True, connect_timeout=10) as connection:
        cursor = connection.execute(statement, parameters)
        return cursor.fetchall() if fetch else None


def voice_bytes(url: str, name: str) -> bytes:
    """The stored bytes of a voice the server saved (a good row's bytes, to write under other names)."""
    rows = execute(url, "SELECT data FROM omnivoice_voices WHERE name = %s", (name,), fetch=True)
    return bytes(rows[0][0])


def insert_rows(url: str, rows: list[tuple[str, bytes]]) -> None:
    """Rows written straight into the table (the name's key: its lower case), as any program with write access
    to the shared table could."""
    import time

    for name, data in rows:
        execute(url, "INSERT INTO omnivoice_voices (owner, name, name_key, created_at, data) "
                "VALUES ('', %s, %s, %s, %s)", (name, name.lower(), time.time(), data))
