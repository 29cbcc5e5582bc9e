"""The PostgreSQL voice store under faults (issue 57), against a real server of this module's own
(``tests/support/postgres.py``; its processes are stopped, locked and restarted here, so no other test shares it):

* a stalled database (its server processes stopped: SIGSTOP; or a table lock another client holds) costs a call a
  bounded wait (``settings.store.StoreTimeouts``), then ``StoreUnavailable``; a stalled pooled connection is cut and
  replaced, so the next call works;
* a restart of the database costs no call (pooled connections are checked before use);
* 10,000 voices list a page at a time, in one query a page;
* a row is untrusted: a name with ``../`` or ``/`` is refused, nothing is written under a path made from it, and
  bytes that are no voice are refused before anything is written;
* ``omnivoice serve`` on a stalled store: ``/health`` and ``/ready`` answer within 1 s, a built-in voice speaks, the
  voices route answers 503 ``voice_store_unavailable`` with ``Retry-After`` within the configured time; the app's
  ``/ready`` and ``/metrics`` answer without its key, and it speaks a built-in voice while the store is stalled.
"""

from __future__ import annotations

import contextlib
import os
import pathlib
import signal
import threading
import time
import uuid

import httpx
import numpy as np
import pytest

from omnivoice_demo.errors import InvalidInput, StoreUnavailable
from omnivoice_demo.settings.store import StoreTimeouts
from omnivoice_demo.storage.voice_file import Voice
from omnivoice_demo.studio.voice_store import open_voice_store

#: short waits, so each fault costs the tests seconds (libpq's connect timeout is 2 s at least)
FAST = StoreTimeouts(connect=2, statement=1, pool_wait=3)
FAST_FLAGS = ["--voice-store-connect-timeout", "2", "--voice-store-statement-timeout", "1",
              "--voice-store-pool-timeout", "3"]


@pytest.fixture(scope="module")
def own_pg():
    """A PostgreSQL server of this module alone (it is stopped and restarted here)."""
    from tests.support import postgres

    reason = postgres.why_not()
    if reason:
        pytest.skip(reason)
    server = postgres.PostgresServer().start()
    yield server
    with contextlib.suppress(Exception):
        _signal_all(server, signal.SIGCONT)
    server.stop()


def _postmaster(server) -> int:
    return int((server.data / "postmaster.pid").read_text().split()[0])


def _children(pid: int) -> list[int]:
    found = []
    for stat in pathlib.Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def _signal_all(server, signum) -> None:
    """``signum`` to the postmaster and every process it started (SIGSTOP: the whole database stalls)."""
    main = _postmaster(server)
    for pid in [main, *_children(main)] if signum == signal.SIGSTOP else [*_children(main), main]:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signum)


@contextlib.contextmanager
def stalled(server):
    _signal_all(server, signal.SIGSTOP)
    try:
        yield
    finally:
        _signal_all(server, signal.SIGCONT)


def voice_of(seed: int, frames: int = 12) -> Voice:
    codes = np.random.default_rng(seed).integers(0, 1024, size=(8, frames), dtype=np.int64)
    return Voice(codes=codes, transcript="Hello there.", rms=0.1)


_databases = iter(range(1, 1000))


@pytest.fixture
def store(own_pg, tmp_path):
    url = own_pg.create_database(f"faults_{next(_databases)}")
    made = open_voice_store(url, root=tmp_path / "local", timeouts=FAST, pool_size=2)
    made.check()
    made.save(voice_of(1), "Anna")
    yield made
    made.close()


def _backend_pids(store) -> list[int]:
    import psycopg

    with psycopg.connect(store.url, autocommit=True) as connection:
        rows = connection.execute("SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
                                  "AND pid <> pg_backend_pid()").fetchall()
    return [row[0] for row in rows]


def _timed(call):
    started = time.monotonic()
    try:
        return call(), time.monotonic() - started
    except StoreUnavailable as exc:
        return exc, time.monotonic() - started


def test_a_stopped_backend_costs_one_bounded_wait_and_its_connection_is_replaced(store):
    assert store.load("Anna").frames == 12
    pids = _backend_pids(store)
    assert pids, "the pool keeps its connection"
    for pid in pids:
        os.kill(pid, signal.SIGSTOP)
    try:
        result, seconds = _timed(lambda: store.load("anna"))
        # the stopped connection is cut (its check stays silent) and a new one answers, all within one call's time
        assert seconds < FAST.call, seconds
        assert isinstance(result, Voice), result
        again, seconds = _timed(lambda: store.names())
        assert again == ["Anna"] and seconds < 1.0, seconds
    finally:
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)


def test_a_table_lock_held_elsewhere_is_a_503_within_the_statement_timeout(store):
    import psycopg

    assert store.state().status == "up"
    with psycopg.connect(store.url) as holder:
        holder.execute("LOCK TABLE omnivoice_voices IN ACCESS EXCLUSIVE MODE")   # held until the rollback
        result, seconds = _timed(lambda: store.listing())
        assert isinstance(result, StoreUnavailable) and seconds < FAST.call, (result, seconds)
        assert "statement timeout" in str(result) and "postgres@" in str(result)
        assert store.state().status == "unavailable"
        holder.rollback()
    assert [entry.name for entry in store.listing()[0]] == ["Anna"] and store.state().status == "up"


def test_a_stalled_database_is_unavailable_within_the_call_time_then_works_again(own_pg, store):
    store.load("Anna")
    with stalled(own_pg):
        result, seconds = _timed(lambda: store.load("Anna"))
        assert isinstance(result, StoreUnavailable) and seconds < FAST.call + 1, (result, seconds)
        assert "cannot be used now" in str(result)
    deadline = time.monotonic() + 10
    while True:   # the pool opens a new connection: a few seconds at most
        result, _ = _timed(lambda: store.load("Anna"))
        if isinstance(result, Voice) or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert isinstance(result, Voice), result


def test_a_database_restart_costs_no_call(own_pg, store):
    # two calls at once: two pooled connections, both made stale by the restart
    threads = [threading.Thread(target=lambda: store.load("Anna")) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert len(_backend_pids(store)) >= 1
    done = own_pg._run(str(own_pg.bin / "pg_ctl"), "-D", str(own_pg.data), "-l", str(own_pg.folder / "server.log"),
                       "-m", "fast", "-w", "-t", "60", "restart", check=False)
    assert done.returncode == 0, done.stderr
    failures = []
    for _ in range(6):
        try:
            assert store.load("Anna").frames == 12 and store.names() == ["Anna"]
        except StoreUnavailable as exc:
            failures.append(str(exc))
    assert failures == []


def _insert_rows(store, rows: list[tuple[str, bytes]]) -> None:
    """Rows written straight into the table, as any program with write access could."""
    import psycopg

    from omnivoice_demo.text.voice_names import look_alike_key

    with psycopg.connect(store.url) as connection:
        with connection.cursor() as cursor:
            cursor.executemany("INSERT INTO omnivoice_voices (owner, name, name_key, created_at, data) "
                               "VALUES ('', %s, %s, %s, %s)",
                               [(name, look_alike_key(name), time.time(), data) for name, data in rows])


def _voice_bytes(voice: Voice) -> bytes:
    from omnivoice_demo.studio.voice_db import _bytes_of_voice

    return _bytes_of_voice(voice)


def test_ten_thousand_voices_list_in_pages(store):
    import psycopg

    with psycopg.connect(store.url) as connection:
        connection.execute("INSERT INTO omnivoice_voices (owner, name, name_key, created_at, tags, data) "
                           "SELECT '', 'Voice ' || lpad(i::text, 5, '0'), 'voice ' || lpad(i::text, 5, '0'), "
                           "1700000000 + i, ARRAY['calm'], %s FROM generate_series(1, 10000) AS i",
                           (_voice_bytes(voice_of(2)),))
    seen, after, pages = [], None, 0
    started = time.monotonic()
    while True:
        entries, more = store.listing(limit=1000, after=after)
        pages += 1
        seen += entries
        if not more:
            break
        after = entries[-1].name
    seconds = time.monotonic() - started
    names = [entry.name for entry in seen]
    assert names == ["Anna"] + [f"Voice {i:05d}" for i in range(1, 10001)] and pages == 11
    assert seen[1].created_at == 1700000001 and seen[1].tags == ["calm"]
    assert seconds < 20, seconds   # one query a page (the N+1 reads took seconds per thousand)
    # a name is found by one indexed query, and an unknown one is named alone, not with 10,001 others
    assert store.find("voice 09999") == "Voice 09999" and store.find("Nobody") is None
    with pytest.raises(InvalidInput) as refused:
        store.load("Nobody")
    assert "Nobody" in str(refused.value) and "Voice 0" not in str(refused.value)


def _files_named(marker: str, tmp_path: pathlib.Path) -> list[pathlib.Path]:
    """Files whose name holds ``marker``: anywhere under ``tmp_path``, and in every folder above it and above the
    system's temporary folder (where a name of ``../`` segments would have led a write)."""
    import tempfile

    above = {*tmp_path.parents, pathlib.Path(tempfile.gettempdir()), *pathlib.Path(tempfile.gettempdir()).parents}
    return list(tmp_path.rglob(f"*{marker}*")) + [path for folder in above for path in folder.glob(f"*{marker}*")]


def test_a_row_is_untrusted_input(store, tmp_path):
    marker = f"escaped-{uuid.uuid4().hex[:8]}"
    escaping = f"../../../../../../{marker}"
    good = _voice_bytes(voice_of(3))
    _insert_rows(store, [(escaping, good), (f"a/{marker}", good), (f"..{marker}", b"PK\x03\x04 not a voice"),
                         ("Bob", good)])
    for name in (escaping, f"a/{marker}"):
        for call in (store.load, store.path, store.created_at):
            with pytest.raises(InvalidInput, match="not a name a saved voice may have"):
                call(name)
        assert store.tags(name) == []
    with pytest.raises(InvalidInput):   # bytes that are no voice: refused, never written under the cache
        store.path(f"..{marker}")
    _insert_rows(store, [("Carol", b"PK\x03\x04 not a voice")])   # a name a voice may have, bytes that are none
    for call in (store.load, store.path):
        with pytest.raises(InvalidInput) as caught:
            call("Carol")
        said = str(caught.value)   # of the voice asked for, never of a file name the client did not send
        assert said.startswith("The saved voice 'Carol' cannot be used: its stored data is not a saved voice"), said
        assert "voice.npz" not in said and said.endswith("Save it again, or delete it."), said
    listed = [entry.name for entry in store.listing()[0]]
    assert escaping not in listed and f"a/{marker}" not in listed and "Bob" in listed
    with pytest.raises(InvalidInput):   # refused when looked up, never used as a path
        store.find(escaping)
    local = store.path("Bob")   # a good row: its copy is named by a digest and the version, under the cache
    assert local.is_relative_to(store.root / "db-cache") and "Bob" not in local.name
    assert Voice.load(local).frames == 12
    assert _files_named(marker, tmp_path) == []
    cached = sorted(path.name for path in (store.root / "db-cache").rglob("*") if path.is_file())
    assert cached == [local.name]


def test_wyoming_describe_does_not_wait_on_a_stalled_store(own_pg, store):
    import asyncio
    import types

    from omnivoice_demo.wyoming.handler import DESCRIBE_STORE_SECONDS, WyomingContext

    def no_model():
        raise RuntimeError("no model yet")

    context = WyomingContext(models=types.SimpleNamespace(get=no_model), voices=store, service=None)
    listed = asyncio.run(context.describe())
    assert "Anna" in str(listed.data) and "alloy" in str(listed.data)
    async def timed():
        started = time.monotonic()
        answer = await context.describe()
        return answer, time.monotonic() - started

    with stalled(own_pg):   # (asyncio.run then waits for the worker thread, which the store's timeouts end)
        listed, seconds = asyncio.run(timed())
    assert seconds < DESCRIBE_STORE_SECONDS + 1, seconds
    assert "alloy" in str(listed.data) and "Anna" not in str(listed.data)   # the built-in voices alone


class Served:
    """``omnivoice serve`` (or ``python app.py``) on the store, with the short timeouts."""

    def __init__(self, command: list[str], workdir: pathlib.Path, headers: dict | None = None):
        import subprocess
        import sys

        from tests.support.app_server import ROOT, free_port

        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.headers = headers or {}
        workdir.mkdir(parents=True, exist_ok=True)
        self.log_path = workdir / "server.log"
        self.log = open(self.log_path, "w")
        self.process = subprocess.Popen(
            [sys.executable, *command, "--port", str(self.port), "--threads", "1", *FAST_FLAGS], cwd=ROOT,
            stdout=self.log, stderr=subprocess.STDOUT,
            env=dict(os.environ, HF_HUB_OFFLINE="1", OMNIVOICE_DATA=str(workdir / "data"), GRADIO_ANALYTICS_ENABLED="False",
                     OMNIVOICE_CACHE=str(workdir / "cache"), OMP_NUM_THREADS="1"))

    def log_text(self) -> str:
        self.log.flush()
        return self.log_path.read_text(errors="replace")[-3000:]

    def wait_ready(self, timeout: float = 240) -> None:
        deadline = time.monotonic() + timeout
        while True:
            assert self.process.poll() is None, self.log_text()
            assert time.monotonic() < deadline, self.log_text()
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(self.url + "/ready", timeout=2).status_code == 200:   # no key: a probe needs none
                    return
            time.sleep(0.5)

    def get(self, path: str, **kwargs) -> httpx.Response:
        return httpx.get(self.url + path, headers=self.headers, timeout=kwargs.pop("timeout", 60), **kwargs)

    def speak(self, voice: str) -> httpx.Response:
        return httpx.post(self.url + "/v1/audio/speech", headers=self.headers, timeout=120,
                          json={"input": "Hello.", "voice": voice, "response_format": "wav", "stream": False,
                                "steps": 1, "seed": 3})

    def stop(self) -> None:
        from tests.support.app_server import stop_process

        stop_process(self.process)
        self.log.close()


def _probes_answer_at_once(served: Served) -> None:
    for path in ("/health", "/ready", "/metrics"):
        started = time.monotonic()
        answer = httpx.get(served.url + path, timeout=5)   # no key
        assert answer.status_code == 200 and time.monotonic() - started < 1.0, (path, answer.text)


@pytest.mark.slow
def test_serve_on_a_stalled_store_keeps_its_probes_and_built_in_voices(tiny_fp32_folder, own_pg, tmp_path):
    url = own_pg.create_database("served")
    seeded = open_voice_store(url, root=tmp_path / "seed")
    seeded.check()
    seeded.save(voice_of(1), "Anna")
    seeded.save(voice_of(3), "Bea")
    # rows another client wrote: names no voice may have, and a built-in voice's name (which speaks the design)
    _insert_rows(seeded, [("a/b", _voice_bytes(voice_of(2))), ("../../x", _voice_bytes(voice_of(2))),
                          ("Alloy", _voice_bytes(voice_of(2)))])
    seeded.close()
    served = Served(["-m", "omnivoice_demo", "serve", "--model", str(tiny_fp32_folder), "--precision", "fp32",
                     "--voice-store", url], tmp_path / "serve")
    try:
        served.wait_ready()
        # pages: the rows no voice may be named as are left out, the page filled after them
        listed = served.get("/v1/audio/voices", params={"limit": 1}).json()
        assert [item["id"] for item in listed["data"]] == ["Anna"] and listed["has_more"] is True
        assert listed["first_id"] == listed["last_id"] == "Anna"
        listed = served.get("/v1/audio/voices", params={"limit": 1, "after": listed["last_id"]}).json()
        ids = [item["id"] for item in listed["data"]]
        assert ids[0] == "Bea" and "alloy" in ids and listed["has_more"] is False   # the built-ins on the last page
        assert "Alloy" not in ids and ids.count("alloy") == 1, ids   # the row named like the design is left out
        assert served.get("/v1/audio/voices", params={"limit": 0}).status_code == 400
        for bad in ("a/b", "../../x"):   # a row's name that no voice may have: a 4xx, never a 500
            spoken = served.speak(bad)
            assert spoken.status_code == 400 and "Traceback" not in spoken.text, spoken.text
        assert served.speak("Anna").status_code == 200
        with stalled(own_pg):
            outcome: dict = {}

            def list_voices() -> None:
                started = time.monotonic()
                outcome["answer"] = served.get("/v1/audio/voices")
                outcome["seconds"] = time.monotonic() - started

            waiting = threading.Thread(target=list_voices)
            waiting.start()
            time.sleep(0.3)
            _probes_answer_at_once(served)   # while the voices route waits on the stalled store
            spoken = served.speak("alloy")   # a built-in voice never asks the store
            assert spoken.status_code == 200, spoken.text
            waiting.join(FAST.call + 10)
            answer = outcome["answer"]
            assert answer.status_code == 503 and outcome["seconds"] < FAST.call + 2, (answer.text, outcome)
            assert answer.json()["error"]["code"] == "voice_store_unavailable" and answer.headers["Retry-After"]
            ready = httpx.get(served.url + "/ready", timeout=5)
            assert ready.status_code == 200 and ready.json()["voice_store"]["status"] == "unavailable", ready.text
            # the probe is public: it says the store is down, not where the database lives
            assert ready.json()["voice_store"]["message"] == StoreUnavailable.PUBLIC, ready.text
            assert StoreUnavailable.PUBLIC in answer.json()["error"]["message"], answer.text
        deadline = time.monotonic() + 15
        while served.get("/v1/audio/voices").status_code != 200:
            assert time.monotonic() < deadline, served.log_text()
            time.sleep(0.5)
        assert httpx.get(served.url + "/ready", timeout=5).json()["voice_store"]["status"] == "up"
        assert "Traceback" not in served.log_text()
    finally:
        served.stop()


@pytest.mark.slow
def test_the_app_answers_its_probes_without_its_key_and_speaks_while_the_store_stalls(tiny_fp32_folder, own_pg,
                                                                                    tmp_path):
    url = own_pg.create_database("app")
    served = Served(["app.py", "--model", str(tiny_fp32_folder), "--precision", "fp32", "--voice-store", url,
                     "--api-key", "sesame"], tmp_path / "app", headers={"Authorization": "Bearer sesame"})
    try:
        served.wait_ready()
        assert httpx.get(served.url + "/v1/audio/voices", timeout=30).status_code == 401   # the API keeps its key
        assert served.get("/v1/audio/voices").status_code == 200
        with stalled(own_pg):
            _probes_answer_at_once(served)
            spoken = served.speak("alloy")
            assert spoken.status_code == 200, spoken.text
            assert served.get("/v1/audio/voices").status_code == 503
    finally:
        served.stop()
