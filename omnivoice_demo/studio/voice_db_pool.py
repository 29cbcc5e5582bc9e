"""The voice database's connections (``voice_db.PostgresVoiceStore``): a ``psycopg_pool`` pool in which every
wait is bounded (``settings.store.StoreTimeouts``).

* opening a connection: libpq's ``connect_timeout``;
* a statement: the server's ``statement_timeout`` (sent as ``options=-c statement_timeout=MS`` with each new
  connection), which also bounds a wait for a lock another client holds;
* a server that does not answer at all (its process stopped: it cannot enforce its own timeout; a network that
  drops packets): ``silence_limit`` cuts the connection's socket when a use of it stays silent longer than the
  statement timeout and a second, so the call in progress fails at once (``StoreUnavailable``) and the pool
  replaces the connection instead of a thread waiting on it for good;
* a free connection: the pool's ``timeout``;
* a pooled connection is checked before each use (``check``: an empty query, under ``silence_limit``): one that a
  database restart or a dropped network left dead is replaced then, so it costs no request;
* the store's first contact (``quiet_pool_warnings``: a start-up, a command) says a failure once, in its own
  error, without the pool's warning at each try (issue 57: seven lines where one was promised).
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import socket
import threading
from typing import Iterator

from ..settings.store import StoreTimeouts


@contextlib.contextmanager
def silence_limit(connection, seconds: float) -> Iterator[None]:
    """Cut ``connection``'s socket (``shutdown``: whatever waits on it wakes with an error) if this block takes
    longer than ``seconds``.  The socket is never touched after the block ends (one lock for both)."""
    try:
        fd = connection.pgconn.socket
    except Exception:  # noqa: BLE001 - a connection already closed: nothing to guard, its use will say so
        yield
        return
    lock, armed = threading.Lock(), [True]

    def cut() -> None:
        with lock:
            if not armed[0]:
                return
            with contextlib.suppress(OSError):
                duplicate = socket.socket(fileno=os.dup(fd))
                try:
                    duplicate.shutdown(socket.SHUT_RDWR)
                finally:
                    duplicate.close()

    timer = threading.Timer(seconds, cut)
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        with lock:
            armed[0] = False
        timer.cancel()


def make_pool(url: str, timeouts: StoreTimeouts, size: int, name: str = "omnivoice-voices"):
    """A pool of at most ``size`` connections to ``url`` (not opened yet), bounded as the module docstring says."""
    from psycopg_pool import ConnectionPool

    def check(connection) -> None:
        with silence_limit(connection, timeouts.check):
            ConnectionPool.check_connection(connection)

    connect = {"connect_timeout": max(2, math.ceil(timeouts.connect)), "autocommit": False,
               "options": f"-c statement_timeout={timeouts.statement_ms}"}
    return ConnectionPool(url, min_size=0, max_size=size, open=False, timeout=timeouts.pool_wait, kwargs=connect,
                          check=check, name=name)


@contextlib.contextmanager
def quiet_pool_warnings() -> Iterator[None]:
    """``psycopg_pool``'s warnings (one per failed connection attempt, from its worker threads) left out while this
    block runs; its errors still show."""
    pool_log = logging.getLogger("psycopg.pool")
    only_errors = _OnlyErrors()
    pool_log.addFilter(only_errors)
    try:
        yield
    finally:
        pool_log.removeFilter(only_errors)


class _OnlyErrors(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno >= logging.ERROR
