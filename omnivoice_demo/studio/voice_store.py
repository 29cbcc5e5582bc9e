"""Which store keeps the saved voices: ``--voice-store URL`` (or ``$OMNIVOICE_VOICE_STORE``) on every front end.

* none, a folder path or ``file://PATH``: a folder (``voices.VoiceLibrary``, the default: the data folder's
  ``voices``, embedded, nothing to run);
* ``postgresql://USER:PASSWORD@HOST:PORT/DATABASE`` (or ``postgres://``): a PostgreSQL database shared by any
  number of processes and machines (``voice_db.PostgresVoiceStore``; the ``store`` extra: psycopg 3 with its pool).
"""

from __future__ import annotations

import os
import pathlib
import re
from typing import Optional

from ..errors import InvalidInput
from ..settings.store import StoreTimeouts, add_store_timeout_arguments, store_timeouts_from_arguments
from .store_url import check_store_url, is_database_url, looks_like_conninfo
from .voice_db_pool import quiet_pool_warnings
from .voices import VoiceLibrary, VoiceStore

VOICE_STORE_ENV = "OMNIVOICE_VOICE_STORE"
DATABASE_SCHEMES = ("postgresql://", "postgres://")


def open_voice_store(url: Optional[str | os.PathLike] = None, private: bool = False, max_variants: Optional[int] = None,
                     timeouts: Optional[StoreTimeouts] = None, **kwargs) -> VoiceStore:
    """The store of ``url`` (None: ``$OMNIVOICE_VOICE_STORE``, else the default folder); ``timeouts``: how long a
    database may take (``settings.store``; a folder has nothing to wait for)."""
    url = os.fspath(url) if url else os.environ.get(VOICE_STORE_ENV) or None
    more = dict(kwargs, **({"max_variants": max_variants} if max_variants is not None else {}))
    if url and (is_database_url(url) or looks_like_conninfo(url)):
        check_store_url(url)   # one libpq reads as written, or refused naming it without its password
        from .voice_db import PostgresVoiceStore

        return PostgresVoiceStore(url, private=private, timeouts=timeouts, **more)
    if url and "://" in url and not url.startswith("file://"):
        scheme = url.split("://")[0] if re.fullmatch(r"[A-Za-z][A-Za-z0-9+.-]{0,30}", url.split("://")[0]) else "that"
        raise InvalidInput(f"--voice-store {scheme}://... is not a store this program knows: give a "
                           "folder (a path or file://PATH) or postgresql://USER@HOST:PORT/DATABASE.",
                           param="voice_store")
    root = pathlib.Path(os.path.expanduser(url[len("file://"):] if url and url.startswith("file://") else url)) \
        if url else None
    return VoiceLibrary(root, private=private, **more)


def add_voice_store_argument(parser) -> None:
    parser.add_argument("--voice-store", default=None, metavar="URL",
                        help=f"where saved voices are kept: a folder (the default: the data folder's voices) or "
                             f"postgresql://USER:PASSWORD@HOST:PORT/DATABASE, shared by every process and machine "
                             f"that names it (default: ${VOICE_STORE_ENV}; the database needs the store extra)")
    add_store_timeout_arguments(parser)


def store_from_arguments(args, private: bool = False, max_variants: Optional[int] = None) -> VoiceStore:
    """The store of a command line's ``--voice-store``, checked now (a database: connected, its schema made or
    migrated), so a store that cannot be used stops the start with one line."""
    store = open_voice_store(getattr(args, "voice_store", None), private=private, max_variants=max_variants,
                             timeouts=store_timeouts_from_arguments(args))
    with quiet_pool_warnings():   # a failure is said once, in its error, not the pool's warning at each try too
        try:
            store.check()
        except BaseException:
            store.close()   # its workers stop trying before the pool's warnings show again
            raise
    return store
