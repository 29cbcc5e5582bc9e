"""Saved voices in PostgreSQL (``--voice-store postgresql://...``): one store shared by any number of processes
and machines, through ``psycopg`` 3 and its connection pool (``psycopg_pool``; the ``store`` extra).

A voice is what the folder store keeps (its ``.npz`` bytes: codes, transcript, variants), with its owner (the
session in shared mode; ``""`` for the one library), its name and the time it was created, in one row:

* names are unique per owner by a database constraint on ``(owner, name_key)``, where ``name_key`` is the
  ``look_alike_key`` the folder store's ``check_free`` compares by: two processes racing on one name cannot both
  win, and the loser is told the name is taken;
* every change (save, rename, a variant added or removed, delete) is one transaction, under an advisory lock of
  its owner, so the check (the name free, the count under the bound) and the write are one step across
  processes;
* each row has a ``version`` from one sequence, new at every change: a process keeps the voices it has read by
  name and version, asks the version (a small query) at each use, and reads the voice again only when another
  process changed it;
* the schema is made and migrated by the program (``omnivoice_voice_store_schema`` holds its version; a start-up
  under an advisory lock, so several processes starting at once migrate once);
* a database that cannot be reached, or does not answer in time (``settings.store.StoreTimeouts``, every wait
  bounded by ``voice_db_pool``), is ``StoreUnavailable`` (HTTP 503), naming the store without its password;
  ``state()`` says how the last use went, without asking the database (for ``/ready``);
* a voice is found by one indexed query on its name's key (``find``), and listed a page at a time in one query
  (``listing``: names, dates and tags, ordered by the name's key);
* a row is untrusted input (any process that can write the table wrote it): its name is checked as a saved
  voice's name is (``checked_row_name``) before anything is read from it, and its bytes by ``Voice.load`` in a
  private temporary folder under a fixed name; nothing is written under a path made from the name.

The local folder (``root``: the data folder's ``voices``) holds only what needs a file: ``path()``'s copy of a
voice for batch workers (under a digest of its owner and name, and its version).
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import logging
import math
import pathlib
import tempfile
import threading
import time
from typing import Callable, Iterator, Optional

from ..errors import InvalidInput, ResourceLimitExceeded, StoreUnavailable, excerpt
from ..settings.limits import Limits
from ..settings.store import StoreTimeouts
from ..storage.voice_file import Voice
from ..text.voice_names import check_free, clean_name, find_name, look_alike_key
from .store_url import redact_store_url as describe_url   # every form of password hidden (issue 57)
from .voice_db_pool import make_pool, quiet_pool_warnings, silence_limit
from .voices import (MAX_VOICES_PER_OWNER, StoreState, VoiceEntry, VoiceStore, check_not_built_in, data_dir,
                     owner_key)

log = logging.getLogger(__name__)

#: the schema this program writes; a database at a newer one is refused (an older program must not write it)
SCHEMA_VERSION = 1
#: each migration brings the schema from the version before it to its own; run in order, each in the start-up's
#: one transaction
MIGRATIONS = {
    1: [
        "CREATE SEQUENCE IF NOT EXISTS omnivoice_voice_versions",
        """CREATE TABLE IF NOT EXISTS omnivoice_voices (
               owner text NOT NULL,
               name text NOT NULL,
               name_key text NOT NULL,
               version bigint NOT NULL DEFAULT nextval('omnivoice_voice_versions'),
               created_at double precision NOT NULL,
               tags text[] NOT NULL DEFAULT '{}',
               data bytea NOT NULL,
               PRIMARY KEY (owner, name),
               CONSTRAINT omnivoice_voices_name_unique UNIQUE (owner, name_key))""",
    ],
}
#: an advisory lock's key for the migration (any constant of our own)
MIGRATION_LOCK = 0x6F6D6E69
#: a voice's bytes at most (the folder store's ``Voice.load`` bound is 25 MB; a voice file is far smaller)
MAX_VOICE_BYTES = 25 * 1024 * 1024




class PostgresVoiceStore(VoiceStore):
    """The voices of a PostgreSQL database (see the module docstring)."""

    def __init__(self, url: str, private: bool = False, max_voices: int = MAX_VOICES_PER_OWNER,
                 max_variants: int = Limits().max_voice_variants, root: Optional[pathlib.Path] = None,
                 pool_size: int = 4, timeouts: Optional[StoreTimeouts] = None):
        try:
            import psycopg  # noqa: F401 - only its presence is checked here
            from psycopg_pool import ConnectionPool
        except ImportError:
            from ..extras import extra_install_hint

            raise StoreUnavailable("A postgresql:// voice store needs psycopg 3 and psycopg_pool, which are not "
                                   f"installed: {extra_install_hint('store')} (or use a folder: leave --voice-store "
                                   "out).") from None
        self.url, self.private = url, private
        self.max_voices, self.max_variants = max_voices, max_variants
        self.root = pathlib.Path(root) if root is not None else data_dir() / "voices"
        self._cache: dict[tuple[str, str], tuple[int, Voice]] = {}
        self._cache_lock = threading.Lock()
        self._ready = False
        self.timeouts = timeouts or StoreTimeouts()
        self._state = StoreState()
        self._pool: ConnectionPool = make_pool(url, self.timeouts, pool_size)
        self._pool.open(wait=False)

    # --- the connection --------------------------------------------------------------------------

    def describe(self) -> str:
        return describe_url(self.url)

    def private_paths(self) -> list[pathlib.Path]:
        return [self.root]

    def close(self) -> None:
        self._pool.close()

    def _unavailable(self, exc: BaseException) -> StoreUnavailable:
        reason = " ".join(str(exc).split()) or type(exc).__name__
        if type(exc).__name__ == "PoolTimeout":   # the pool says only that it waited: ask the server why, once
            reason = self._connect_failure() or reason
        return StoreUnavailable(f"The voice store {self.describe()} cannot be used now ({excerpt(reason, 200)}); "
                                "saved voices are unavailable until the database answers: check that it is "
                                "running and reachable, then try again.")

    def state(self) -> StoreState:
        return self._state

    def note_unavailable(self, message: str) -> None:
        """A front end gave up waiting for the store (``api.store_calls``): said by ``state`` until a use succeeds."""
        self._state = StoreState("unavailable", time.time(), message)

    def _connect_failure(self) -> Optional[str]:
        """Why a connection to the database fails now (one try, the connect timeout at most), or None."""
        import psycopg

        try:
            psycopg.connect(self.url, connect_timeout=max(2, math.ceil(self.timeouts.connect))).close()
        except psycopg.Error as exc:
            return " ".join(str(exc).split()) or type(exc).__name__
        return None

    @contextlib.contextmanager
    def _transaction(self, owner: Optional[str] = None) -> Iterator:
        """A cursor of a pooled connection in one transaction (committed at the end, rolled back on an error),
        under the advisory lock of ``owner`` when given: every change of one owner's voices one at a time, across
        processes.  A name taken meanwhile (the constraint) is ``InvalidInput``; the database's failures are
        ``StoreUnavailable``."""
        import psycopg
        from psycopg import errors as pg_errors
        from psycopg_pool import PoolTimeout

        try:
            with self._pool.connection() as connection, silence_limit(connection, self.timeouts.silence):
                with connection.cursor() as cursor:
                    if owner is not None:
                        cursor.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", ("omnivoice-voices:" + owner,))
                    yield cursor
        except pg_errors.UniqueViolation:   # the constraint: another process took the name between check and write
            self._state = StoreState("up", time.time())
            raise InvalidInput("A voice of that name was saved by another server just now; choose another name.",
                               param="name") from None
        except (psycopg.Error, PoolTimeout) as exc:
            failure = self._unavailable(exc)
            self._state = StoreState("unavailable", time.time(), str(failure))
            raise failure from None
        self._state = StoreState("up", time.time())

    def check(self) -> None:
        """Connect, and make or migrate the schema (once, whichever process starts first)."""
        if self._ready:
            return
        with quiet_pool_warnings(), self._transaction() as cursor:   # a failure said once, in its error
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
            cursor.execute("CREATE TABLE IF NOT EXISTS omnivoice_voice_store_schema ("
                           "id integer PRIMARY KEY CHECK (id = 1), version integer NOT NULL)")
            cursor.execute("SELECT version FROM omnivoice_voice_store_schema WHERE id = 1")
            row = cursor.fetchone()
            current = row[0] if row else 0
            if current > SCHEMA_VERSION:
                raise StoreUnavailable(f"The voice store {self.describe()} has schema version {current}, newer "
                                       f"than this program's {SCHEMA_VERSION}: upgrade omnivoice-onnx-studio on "
                                       "this machine (an older program must not write a newer store).")
            for version in range(current + 1, SCHEMA_VERSION + 1):
                for statement in MIGRATIONS[version]:
                    cursor.execute(statement)
                log.info("voice store %s: schema version %d", self.describe(), version)
            cursor.execute("INSERT INTO omnivoice_voice_store_schema (id, version) VALUES (1, %s) "
                           "ON CONFLICT (id) DO UPDATE SET version = EXCLUDED.version", (SCHEMA_VERSION,))
        self._ready = True

    def schema_version(self) -> int:
        with self._transaction() as cursor:
            cursor.execute("SELECT version FROM omnivoice_voice_store_schema WHERE id = 1")
            row = cursor.fetchone()
        return row[0] if row else 0

    def owner(self, session: Optional[str]) -> str:
        return owner_key(session) if self.private else ""

    # --- reading ---------------------------------------------------------------------------------

    def names(self, session: Optional[str] = None) -> list[str]:
        self.check()
        with self._transaction() as cursor:
            cursor.execute("SELECT name FROM omnivoice_voices WHERE owner = %s", (self.owner(session),))
            return sorted((name for (name,) in cursor.fetchall() if usable_row_name(name)), key=str.casefold)

    def find(self, name: str, session: Optional[str] = None) -> Optional[str]:
        """The saved voice ``name`` asks for (one indexed query), or None."""
        self.check()
        with self._transaction() as cursor:
            return self._lookup(cursor, name, self.owner(session))

    @staticmethod
    def _lookup(cursor, name: str, owner: str) -> Optional[str]:
        if not isinstance(name, str) or not name or len(name) > 4 * 60:
            return None
        cursor.execute("SELECT name FROM omnivoice_voices WHERE owner = %s AND name_key = %s",
                       (owner, look_alike_key(name)))
        found = find_name(name, [row[0] for row in cursor.fetchall()])   # the same key, not only a look-alike
        return checked_row_name(found) if found is not None else None

    def _found(self, cursor, name: str, owner: str) -> str:
        found = self._lookup(cursor, name, owner)
        if found is None:
            raise InvalidInput(f"There is no saved voice named {excerpt(name)} (save one from the Clone tab first, "
                               "or list the saved voices).", param="voice")
        return found

    def listing(self, session: Optional[str] = None, limit: int = 100,
                after: Optional[str] = None) -> tuple[list[VoiceEntry], bool]:
        """A page of the saved voices in one query: at most ``limit`` (name, created_at, tags), ordered by the
        name's key, those after the voice ``after`` (any name: its key); and whether more follow."""
        self.check()
        limit = max(1, min(int(limit), 10_000))
        entries: list[VoiceEntry] = []
        key = look_alike_key(after) if after else ""
        with self._transaction() as cursor:
            while True:   # rows whose names no voice may have are left out, and the page filled after them
                need = limit - len(entries)
                cursor.execute("SELECT name, created_at, tags, name_key FROM omnivoice_voices WHERE owner = %s "
                               "AND name_key COLLATE \"C\" > %s ORDER BY name_key COLLATE \"C\" LIMIT %s",
                               (self.owner(session), key, need + 1))
                rows = cursor.fetchall()
                entries += [VoiceEntry(name, int(created), list(tags)) for name, created, tags, _ in rows[:need]
                            if usable_row_name(name)]
                if len(rows) <= need or len(entries) >= limit:
                    return entries, len(rows) > need
                key = rows[need - 1][3]

    def _voice(self, owner: str, name: str, version: int, data: Optional[bytes]) -> Voice:
        """The voice of a row: the cached one when its version is the row's, else read from ``data``."""
        key = (owner, name)
        with self._cache_lock:
            cached = self._cache.get(key)
        if cached is not None and cached[0] == version:
            return copy.deepcopy(cached[1])
        if data is None:
            raise LookupError(key)
        voice = _voice_of_bytes(bytes(data), checked_row_name(name))
        voice.name = name
        with self._cache_lock:
            self._cache[key] = (version, voice)
        return copy.deepcopy(voice)

    def load(self, name: str, session: Optional[str] = None, max_frames: Optional[int] = None) -> Voice:
        """The voice ``name`` (checked by ``Voice.load``); read from the database only when its version is not
        the one this process keeps."""
        self.check()
        owner = self.owner(session)
        with self._transaction() as cursor:
            found = self._found(cursor, name, owner)
            with self._cache_lock:
                cached = self._cache.get((owner, found))
            cursor.execute("SELECT version, CASE WHEN version = %s THEN NULL ELSE data END FROM omnivoice_voices "
                           "WHERE owner = %s AND name = %s", (cached[0] if cached else -1, owner, found))
            row = cursor.fetchone()
        if row is None:   # deleted between the two reads
            raise InvalidInput(f"There is no saved voice named {excerpt(name)}.", param="voice")
        voice = self._voice(owner, found, row[0], row[1])
        if max_frames is not None and voice.frames > max_frames:
            raise ResourceLimitExceeded(f"The saved voice {excerpt(found)} holds {voice.frames} frames of "
                                        f"reference; the limit is {max_frames}.", param="max_reference_seconds")
        return voice

    def tags(self, name: str, session: Optional[str] = None) -> list[str]:
        self.check()
        owner = self.owner(session)
        with self._transaction() as cursor:
            try:
                found = self._found(cursor, name, owner)
            except InvalidInput:
                return []
            cursor.execute("SELECT tags FROM omnivoice_voices WHERE owner = %s AND name = %s", (owner, found))
            row = cursor.fetchone()
        return list(row[0]) if row else []

    def created_at(self, name: str, session: Optional[str] = None) -> int:
        self.check()
        owner = self.owner(session)
        with self._transaction() as cursor:
            found = self._found(cursor, name, owner)
            cursor.execute("SELECT created_at FROM omnivoice_voices WHERE owner = %s AND name = %s", (owner, found))
            row = cursor.fetchone()
        if row is None:
            raise InvalidInput(f"There is no saved voice named {excerpt(name)}.", param="voice")
        return int(row[0])

    def path(self, name: str, session: Optional[str] = None) -> pathlib.Path:
        """A local ``.npz`` of the voice ``name`` (for batch workers, which read voices from files): the checked
        voice written once under ``root/db-cache``, named by a digest of its owner and name and by its version
        (never by the row's name, which any writer of the table chose)."""
        voice = self.load(name, session)
        owner = self.owner(session)
        with self._cache_lock:
            version = self._cache[(owner, voice.name)][0]
        digest = hashlib.sha256(f"{owner}\0{voice.name}".encode("utf-8", "surrogatepass")).hexdigest()[:32]
        target = self.root / "db-cache" / (owner or "library") / f"{digest}.v{int(version)}.npz"
        if not target.is_file():
            voice.save(target)
        return target

    # --- changing --------------------------------------------------------------------------------

    def save(self, voice: Voice, name: str, session: Optional[str] = None, overwrite: bool = False):
        """Save ``voice`` as ``name`` (one transaction); a name taken is refused, unless ``overwrite`` and it is
        the same name: then that voice is replaced, under its own name."""
        name = clean_name(name)
        self.check()
        owner = self.owner(session)
        with self._transaction(owner) as cursor:
            cursor.execute("SELECT name FROM omnivoice_voices WHERE owner = %s", (owner,))
            same = self.admit(voice, name, [row[0] for row in cursor.fetchall()], overwrite)
            data = _bytes_of_voice(voice)
            if same is not None:
                cursor.execute("UPDATE omnivoice_voices SET data = %s, tags = %s, "
                               "version = nextval('omnivoice_voice_versions') WHERE owner = %s AND name = %s",
                               (data, list(voice.variants), owner, same))
            else:
                cursor.execute("INSERT INTO omnivoice_voices (owner, name, name_key, created_at, tags, data) "
                               "VALUES (%s, %s, %s, %s, %s, %s)",
                               (owner, voice.name, look_alike_key(voice.name), time.time(), list(voice.variants),
                                data))
        return voice.name

    def change(self, name: str, update: Callable[[Voice], Voice], session: Optional[str] = None) -> Voice:
        """The saved voice ``name`` after ``update``, written back under its name in one transaction (the row
        locked while it changes)."""
        self.check()
        owner = self.owner(session)
        with self._transaction(owner) as cursor:
            found = self._found(cursor, name, owner)
            cursor.execute("SELECT data FROM omnivoice_voices WHERE owner = %s AND name = %s FOR UPDATE",
                           (owner, found))
            row = cursor.fetchone()
            if row is None:
                raise InvalidInput(f"There is no saved voice named {excerpt(name)}.", param="voice")
            voice = update(_voice_of_bytes(bytes(row[0]), found))
            voice.name = found
            cursor.execute("UPDATE omnivoice_voices SET data = %s, tags = %s, "
                           "version = nextval('omnivoice_voice_versions') WHERE owner = %s AND name = %s",
                           (_bytes_of_voice(voice), list(voice.variants), owner, found))
        return voice

    def rename(self, name: str, new_name: str, session: Optional[str] = None) -> str:
        """Give the voice ``name`` the name ``new_name`` (one transaction); refused when another voice has it."""
        new_name = clean_name(new_name)
        self.check()
        owner = self.owner(session)
        with self._transaction(owner) as cursor:
            old = self._found(cursor, name, owner)
            check_not_built_in(new_name)
            cursor.execute("SELECT name FROM omnivoice_voices WHERE owner = %s", (owner,))
            check_free(new_name, [row[0] for row in cursor.fetchall()], itself=old)
            if new_name != old:
                cursor.execute("UPDATE omnivoice_voices SET name = %s, name_key = %s, "
                               "version = nextval('omnivoice_voice_versions') WHERE owner = %s AND name = %s",
                               (new_name, look_alike_key(new_name), owner, old))
        return new_name

    def delete(self, name: str, session: Optional[str] = None) -> None:
        """Remove the voice ``name`` (one transaction); ``InvalidInput`` when there is none."""
        self.check()
        owner = self.owner(session)
        with self._transaction(owner) as cursor:
            found = self._found(cursor, name, owner)
            cursor.execute("DELETE FROM omnivoice_voices WHERE owner = %s AND name = %s", (owner, found))
        with self._cache_lock:
            self._cache.pop((owner, found), None)


def _bytes_of_voice(voice: Voice) -> bytes:
    """The voice's ``.npz`` bytes (``Voice.save``'s format: the folder store's file, exactly)."""
    with tempfile.TemporaryDirectory(prefix="omnivoice-voice-") as folder:
        path = voice.save(pathlib.Path(folder) / "voice.npz")
        data = path.read_bytes()
    if len(data) > MAX_VOICE_BYTES:
        raise ResourceLimitExceeded(f"The voice {excerpt(voice.name)} is {len(data)} bytes; a saved voice is at most "
                                    f"{MAX_VOICE_BYTES}.", param="max_upload_bytes")
    return data


def usable_row_name(name) -> bool:
    """Whether a row's name is one a saved voice may have (``clean_name`` keeps it, and not a built-in voice's, which
    speaks the built-in one); others are left out of lists and refused when asked for (``checked_row_name``)."""
    from .vocabulary import is_built_in

    try:
        return checked_row_name(name) == name and not is_built_in(name)
    except InvalidInput:
        return False


def checked_row_name(name) -> str:
    """A row's name, checked as an uploaded voice's name is (``clean_name``: letters, digits, spaces, ``- _ .``,
    no path): a row written by another program with ``../`` or ``/`` in its name is refused, never used."""
    try:
        usable = isinstance(name, str) and clean_name(name) == name
        name.encode("utf-8")
    except (InvalidInput, UnicodeEncodeError, AttributeError):
        usable = False
    if not usable:
        raise InvalidInput(f"The voice store holds a voice named {excerpt(str(name))}, which is not a name a saved "
                           "voice may have (letters, digits, spaces, - _ . only); it is not used. The store's "
                           "operator should rename or delete that row.", param="voice")
    return name


def _voice_of_bytes(data: bytes, name: str) -> Voice:
    """A voice from its ``.npz`` bytes, checked as a file is (``Voice.load``, the loosest bounds: what the
    front end asks for is checked by its own ``max_frames``): its size first, then every field, in a private
    temporary folder under a fixed name (never the row's)."""
    if len(data) > MAX_VOICE_BYTES:
        raise InvalidInput(f"The saved voice {excerpt(name)} in the store is {len(data)} bytes, over the "
                           f"{MAX_VOICE_BYTES} a voice may be; it is not used.", param="voice")
    roomy = Limits.local()
    with tempfile.TemporaryDirectory(prefix="omnivoice-voice-") as folder:
        path = pathlib.Path(folder) / "voice.npz"
        path.write_bytes(data)
        try:
            voice = Voice.load(path, max_frames=roomy.max_reference_frames, max_bytes=MAX_VOICE_BYTES)
        except InvalidInput as exc:   # said of the voice asked for, not of the temporary file's name
            reason = str(exc).replace(repr(path.name), path.name).replace(path.name, "its stored data", 1).rstrip(".")
            raise InvalidInput(f"The saved voice {excerpt(name)} cannot be used: {reason}. Save it again, or "
                               "delete it.", param="voice") from None
    voice.name = name
    return voice
