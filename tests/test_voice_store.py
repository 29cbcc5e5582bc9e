"""The voice store's contract (issue 52), the same tests on both stores: a folder and a real PostgreSQL server
(``tests/support/postgres.py`` starts one; no mock).  Two store objects on one backing store stand for two
processes: each sees the other's changes on its next use.  Concurrent saves racing on a few names keep one
whole voice per name.  Export from one store imports into the other.  A database that is down is a clear
``StoreUnavailable`` (a 503 from the HTTP API), and the folder store does not care."""

from __future__ import annotations

import itertools
import threading

import numpy as np
import pytest

from omnivoice_demo.errors import InvalidInput, StoreUnavailable
from omnivoice_demo.settings.store import StoreTimeouts
from omnivoice_demo.storage.voice_file import Voice
from omnivoice_demo.studio.voice_store import open_voice_store
from omnivoice_demo.studio.voices import VoiceLibrary

_databases = itertools.count(1)


@pytest.fixture(params=["folder", "postgresql"])
def make_store(request, tmp_path):
    """``make_store(private=False)``: a new store object (a "process") on this test's one backing store."""
    if request.param == "folder":
        target = str(tmp_path / "voices")
    else:
        target = request.getfixturevalue("pg_server").create_database(f"voices_{next(_databases)}")
    made = []

    def make(private: bool = False, **kwargs):
        store = open_voice_store(target, private=private, root=tmp_path / f"local-{len(made)}", **kwargs) \
            if request.param != "folder" else open_voice_store(target, private=private, **kwargs)
        store.check()
        made.append(store)
        return store

    make.kind = request.param
    yield make
    for store in made:
        store.close()


def voice_of(seed: int, frames: int = 12, transcript: str = "Hello there.") -> Voice:
    codes = np.random.default_rng(seed).integers(0, 1024, size=(8, frames), dtype=np.int64)
    return Voice(codes=codes, transcript=transcript, rms=0.1 + seed / 1000)


def same(a: Voice, b: Voice) -> bool:
    return np.array_equal(a.codes, b.codes) and a.transcript == b.transcript and a.rms == b.rms


def test_two_processes_share_voices(make_store):
    a, b = make_store(), make_store()
    a.save(voice_of(1), "Anna")
    assert b.names() == ["Anna"] and same(b.load("Anna"), voice_of(1))
    assert b.load("anna").name == "Anna"        # names compare as voice names do
    assert a.load("Anna").name == "Anna"        # A has it cached now
    assert b.rename("Anna", "Anne") == "Anne"
    assert a.names() == ["Anne"] and same(a.load("Anne"), voice_of(1))
    with pytest.raises(InvalidInput, match="no saved voice"):
        a.load("Anna")
    # a change on B (a style variant) is seen by A, which had read the voice before
    b.change("Anne", lambda voice: _with_variant(voice, "cheerful"))
    assert list(a.load("Anne").variants) == ["cheerful"] and a.tags("Anne") == ["cheerful"]
    assert abs(a.created_at("Anne") - b.created_at("Anne")) <= 1 and a.created_at("Anne") > 1_700_000_000
    a.delete("Anne")
    assert b.names() == [] and a.names() == []
    with pytest.raises(InvalidInput, match="no saved voice"):
        b.load("Anne")


def _with_variant(voice: Voice, tag: str) -> Voice:
    voice.variants = dict(voice.variants, **{tag: voice_of(9, transcript="Yay.")})
    return voice


def test_names_are_unique_per_owner_and_owners_see_only_their_own(make_store):
    a, b = make_store(private=True), make_store(private=True)
    a.save(voice_of(1), "Anna", session="one")
    b.save(voice_of(2), "Anna", session="two")      # another owner: the same name is theirs to use
    assert a.names("one") == ["Anna"] and b.names("two") == ["Anna"]
    assert same(b.load("Anna", session="one"), voice_of(1)) and same(a.load("Anna", session="two"), voice_of(2))
    for taken in ("Anna", "ANNA", "Аnna"):          # the same, another case, a Cyrillic look-alike
        with pytest.raises(InvalidInput, match="exists already|looks the same"):
            b.save(voice_of(3), taken, session="one")
    b.save(voice_of(4), "Bea", session="one")
    with pytest.raises(InvalidInput, match="exists already"):
        a.rename("Bea", "anna", session="one")
    assert a.names("one") == ["Anna", "Bea"] and a.names("three") == []
    b.save(voice_of(5), "anna", session="one", overwrite=True)     # replaced, under its own name
    assert a.names("one") == ["Anna", "Bea"] and same(a.load("Anna", session="one"), voice_of(5))


def test_concurrent_uploads_racing_on_five_names_keep_five_whole_voices(make_store):
    stores = [make_store(), make_store()]
    names = [f"Voice {n}" for n in range(5)]
    # each name four times, as written differently (case, a Cyrillic look-alike): one voice a name all the same
    spellings = (str, str.upper, str.lower, lambda name: name.replace("o", "о"))
    uploads = [(index, spellings[index // 5](names[index % 5])) for index in range(20)]
    start = threading.Barrier(len(uploads))
    outcomes: dict[int, str] = {}

    def upload(index: int, name: str) -> None:
        store = stores[index % 2]
        start.wait(30)
        try:
            store.save(voice_of(100 + index, frames=40 + index), name)
            outcomes[index] = "saved"
        except InvalidInput as exc:
            assert exc.param == "name", exc
            outcomes[index] = "taken"

    threads = [threading.Thread(target=upload, args=item) for item in uploads]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert len(outcomes) == 20
    fresh = make_store()
    saved = [index for index, outcome in outcomes.items() if outcome == "saved"]
    assert len(saved) == 5, outcomes                 # one winner a name; every other upload was told it is taken
    assert sorted(fresh.names()) == sorted(uploads[i][1] for i in saved)
    for index in saved:
        voice = fresh.load(uploads[index][1])        # whole: exactly that upload, all its frames
        assert same(voice, voice_of(100 + index, frames=40 + index))
    assert sorted(index % 5 for index in saved) == list(range(5))


def test_a_voice_exported_from_one_store_imports_into_the_other(pg_server, tmp_path):
    folder = VoiceLibrary(tmp_path / "folder")
    database = open_voice_store(pg_server.create_database("export_import"), root=tmp_path / "local")
    try:
        folder.save(_with_variant(voice_of(7), "calm"), "Carl")
        exported = folder.export("Carl", tmp_path / "out")
        assert database.import_file(exported[0]) == "Carl"
        back = database.load("Carl")
        assert same(back, voice_of(7)) and list(back.variants) == ["calm"] and database.tags("Carl") == ["calm"]
        again = database.export("Carl", tmp_path / "again")
        assert folder.import_file(again[0], name="Carl 2") == "Carl 2"
        assert same(folder.load("Carl 2"), voice_of(7))
    finally:
        database.close()


def test_the_database_store_makes_and_migrates_its_schema_once(pg_server, tmp_path):
    import psycopg

    url = pg_server.create_database("schema_check")
    first = open_voice_store(url, root=tmp_path / "a")
    second = open_voice_store(url, root=tmp_path / "b")
    try:
        threads = [threading.Thread(target=store.check) for store in (first, second)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        assert first.schema_version() == 1
        with psycopg.connect(url) as connection:   # a store of a newer program is not written by this one
            connection.execute("UPDATE omnivoice_voice_store_schema SET version = 99")
        newer = open_voice_store(url, root=tmp_path / "c")
        with pytest.raises(StoreUnavailable, match="schema version 99, newer"):
            newer.check()
        newer.close()
        with psycopg.connect(url) as connection:   # the constraint is the database's, whatever a program checks
            connection.execute("UPDATE omnivoice_voice_store_schema SET version = 1")
            connection.execute("INSERT INTO omnivoice_voices (owner, name, name_key, created_at, data) "
                               "VALUES ('', 'X', 'x', 0, 'a')")
            with pytest.raises(psycopg.errors.UniqueViolation):
                connection.execute("INSERT INTO omnivoice_voices (owner, name, name_key, created_at, data) "
                                   "VALUES ('', 'x', 'x', 0, 'a')")
    finally:
        first.close()
        second.close()


def test_a_database_that_is_down_is_a_clear_error_and_a_503(tmp_path):
    pytest.importorskip("psycopg")
    from fastapi import FastAPI
    from fastapi.testclient import TestClient

    from omnivoice_demo.api.routes import ApiContext, build_router
    from omnivoice_demo.studio import EngineService, ModelManager
    from tests.support.app_server import free_port

    url = f"postgresql://omnivoice:secret-password@127.0.0.1:{free_port()}/voices"   # nothing listens there
    # a short pool wait: a refused connection is known at once, and each wait below would otherwise be the default's
    store = open_voice_store(url, root=tmp_path / "local", timeouts=StoreTimeouts(pool_wait=1))
    try:
        with pytest.raises(StoreUnavailable) as caught:
            store.check()
        message = str(caught.value)
        assert "cannot be used now" in message and "127.0.0.1" in message and "check that it is running" in message
        assert "secret-password" not in message
        app = FastAPI()
        app.include_router(build_router(ApiContext(models=ModelManager(), voices=store, service=EngineService())))
        answer = TestClient(app).get("/v1/audio/voices/Anna")
        assert answer.status_code == 503, answer.text
        error = answer.json()["error"]
        assert error["code"] == "voice_store_unavailable" and "secret-password" not in error["message"]
        assert answer.headers["Retry-After"]
    finally:
        store.close()
    folder = open_voice_store(str(tmp_path / "folder"))   # the folder store has nothing to be down
    folder.save(voice_of(1), "Anna")
    assert folder.names() == ["Anna"]


def test_a_batch_row_speaks_with_a_voice_of_the_database(pg_server, tmp_path, monkeypatch):
    """``omnivoice batch --voice-store postgresql://...``: a row's saved voice becomes a local file the workers
    read (by name and version, under the data folder), the same voice."""
    from omnivoice_demo.batch.items import read_batch

    monkeypatch.setenv("OMNIVOICE_DATA", str(tmp_path / "data"))

    url = pg_server.create_database("batch_rows")
    store = open_voice_store(url)
    try:
        store.check()
        store.save(voice_of(11), "Anna")
    finally:
        store.close()
    rows = tmp_path / "rows.jsonl"
    rows.write_text('{"text": "Hello.", "voice": "anna"}\n{"text": "Hi.", "voice": "Nobody"}\n')
    items, problems = read_batch(rows, voices_dir=url)
    assert len(items) == 1 and len(problems) == 1 and "Nobody" in problems[0][1] and "Anna" not in problems[0][1]
    assert same(Voice.load(items[0].voice), voice_of(11))
    assert items[0].voice.startswith(str(tmp_path / "data"))
