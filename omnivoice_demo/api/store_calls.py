"""The voice store from the HTTP API's ``async`` routes: ``await store_call(context, fn, ...)``.

The store is synchronous (a folder, or psycopg's pool), and a database can stall.  So every call runs in a worker
thread of its own limiter (``STORE_THREADS``: a stalled store takes at most these threads, never the event loop
nor the threads speech plans in), and the route waits for it at most the store's ``timeouts.call`` (settings.store);
after that it answers 503 ``voice_store_unavailable`` with ``Retry-After`` while the thread ends by the store's own
timeouts.  ``/health``, ``/ready`` and ``/metrics`` never call the store.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, TypeVar

import anyio

from ..errors import StoreUnavailable

#: worker threads for store calls of one process (anyio's own pool, a limiter of their own)
STORE_THREADS = anyio.CapacityLimiter(16)
#: seconds a call of a store without timeouts (a folder) may take: a disk that hangs says so too
FOLDER_CALL_SECONDS = 60.0

T = TypeVar("T")


def call_seconds(voices) -> float:
    timeouts = getattr(voices, "timeouts", None)
    return timeouts.call if timeouts is not None else FOLDER_CALL_SECONDS


async def store_call(context, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``fn(*args, **kwargs)`` (a function that uses ``context.voices``) in a worker thread, waited for at most
    ``call_seconds``; ``StoreUnavailable`` after that."""
    seconds = call_seconds(context.voices)
    try:
        with anyio.fail_after(seconds):
            return await anyio.to_thread.run_sync(functools.partial(fn, *args, **kwargs), abandon_on_cancel=True,
                                                  limiter=STORE_THREADS)
    except TimeoutError:
        message = (f"The voice store {context.voices.describe()} did not answer within {seconds:g} s; saved voices "
                   "are unavailable until it answers: check that the database is running and reachable, then try "
                   "again.")
        note = getattr(context.voices, "note_unavailable", None)
        if note is not None:
            note(message)
        raise StoreUnavailable(context.redact(message)) from None
