"""A database password given in any form libpq takes never appears in what the programs print or answer (issue
57), end to end: the start-up error of ``omnivoice serve`` and of the app with a database that cannot be reached
(one line, no pool warnings: the docs promise one; each way a start-up fails, while ``test_store_url.py`` holds the
redaction of every form in one process), and, against the real PostgreSQL the tests start, the 503
body an API client gets while the database refuses connections, ``/health``, ``/ready``, ``/metrics`` and the
log; ``omnivoice synth --voice-store`` speaks a voice of the database and names the store redacted when a voice
is not there.  Every password holds ``SECRET`` and starts ``Zq9``: neither may appear anywhere."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import urllib.parse

import pytest

from benchmarks.hardening.families.store_secrets import forms, leaks
from tests.support.app_server import ROOT, free_port


#: (front end, form) of each way a start-up fails, one process each (the forms that share one are in-process in
#: test_store_url.py): the pool tried and failed (the app logs at INFO, so the pool's warnings would show there);
#: the address refused before connecting, as libpq would misread it, and as a key=value string
START_UPS = [("serve", "query"), ("serve", "raw @"), ("serve", "key=value quoted"), ("app", "query")]
#: a wait for a pooled connection long enough for the pool's first try (and its warning) to have been made
POOL_WAIT = "1"


def test_the_start_up_error_is_one_line_without_the_password(tmp_path):
    port = free_port()   # a database address where nothing listens
    env = dict(os.environ, HF_HUB_OFFLINE="1", OMNIVOICE_DATA=str(tmp_path / "data"),
               OMNIVOICE_CACHE=str(tmp_path / "cache"))
    program = {"serve": [sys.executable, "-m", "omnivoice_demo", "serve"], "app": [sys.executable, "app.py"]}
    running = {(front, form): subprocess.Popen(
        program[front] + ["--port", str(free_port()), "--voice-store", forms("127.0.0.1", port)[form],
                          "--voice-store-pool-timeout", POOL_WAIT],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for front, form in START_UPS}
    for (front, form), process in running.items():
        output, _ = process.communicate(timeout=120)
        lines = [line for line in output.splitlines() if line.strip()]
        assert process.returncode == (1 if front == "app" else 2), (front, form, output)   # app: SystemExit
        assert not leaks(output), (front, form, output)
        assert len(lines) == 1 and lines[0].startswith("error: "), (front, form, output)   # no pool warnings
        assert "cannot be used now" in output or "percent-encode" in output or "as a URL" in output, output


@pytest.fixture
def refusing_database(pg_server):
    """A database of the real server, and ``refuse(True)`` to make it refuse connections (those open are ended)
    as a database that is down does; allowed again at the end."""
    import psycopg

    name = f"secrets_{free_port()}"
    pg_server.create_database(name)

    def refuse(on: bool) -> None:
        with psycopg.connect(pg_server.url(), autocommit=True) as connection:
            connection.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS {"false" if on else "true"}')
            if on:
                connection.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s",
                                   (name,))
    yield name, refuse
    refuse(False)


def database_forms(pg_server, database: str) -> dict[str, str]:
    """The forms libpq connects with (the test server trusts, so a password given is not asked for)."""
    at = f"127.0.0.1:{pg_server.port}"
    return {
        "userinfo": f"postgresql://postgres:Zq9SECRETx@{at}/{database}",
        "percent-encoded": f"postgresql://postgres:{urllib.parse.quote('Zq9@SECRET/x', safe='')}@{at}/{database}",
        "query": f"postgresql://postgres@{at}/{database}?password=Zq9SECRETx&application_name=omnivoice",
    }


@pytest.mark.parametrize("form", ["userinfo", "percent-encoded", "query"])
def test_the_503_body_and_the_probes_never_show_the_password(pg_server, refusing_database, form, tmp_path,
                                                            caplog):
    from fastapi import FastAPI
    from fastapi.testclient import TestClient

    from omnivoice_demo.api.routes import ApiContext, build_router
    from omnivoice_demo.errors import StoreUnavailable
    from omnivoice_demo.settings.store import StoreTimeouts
    from omnivoice_demo.studio import EngineService, ModelManager
    from omnivoice_demo.studio.voice_store import open_voice_store

    database, refuse = refusing_database
    # a short pool wait: the refused database is known at once, and each wait here would otherwise be the default's
    store = open_voice_store(database_forms(pg_server, database)[form], root=tmp_path / "local",
                             timeouts=StoreTimeouts(pool_wait=1))
    caplog.set_level(logging.DEBUG)
    try:
        store.check()
        app = FastAPI()
        app.include_router(build_router(ApiContext(models=ModelManager(), voices=store, service=EngineService())))
        client = TestClient(app)
        assert client.get("/v1/audio/voices").status_code == 200
        refuse(True)
        said = []
        answer = client.get("/v1/audio/voices/Anna")
        assert answer.status_code == 503 and answer.json()["error"]["code"] == "voice_store_unavailable", answer.text
        said.append(answer.text)
        for path in ("/v1/audio/voices", "/health", "/ready", "/metrics"):
            answer = client.get(path)
            said.append(f"{path} {answer.status_code} {dict(answer.headers)} {answer.text}")
        message = answer.text
        said.append(store.describe())
        said.append("\n".join(record.getMessage() for record in caplog.records))
        assert not leaks("\n".join(said)), said
        # a visitor learns that saved voices are down, not where the database lives: that is in the server's log
        address = f"127.0.0.1:{pg_server.port}/{database}"
        assert StoreUnavailable.PUBLIC in said[0] and "127.0.0.1" not in said[0] and database not in said[0], said[0]
        assert StoreUnavailable.PUBLIC in said[1] and "127.0.0.1" not in said[1], said[1]   # the list's 503
        assert address in said[-1] and "cannot be used now" in said[-1], said[-1]
        assert message   # /metrics answered
    finally:
        store.close()


def test_synth_takes_voice_store_and_names_it_redacted(pg_server, tiny_fp32_folder, tmp_path):
    """``omnivoice synth --voice-store`` (docs/deploy.md lists it on every front end): a voice of the database
    is spoken; one that is not there is said naming the store to list, without its password."""
    from omnivoice_demo.studio.voice_store import open_voice_store
    from tests.test_vocabulary import a_voice

    database = pg_server.create_database(f"synth_{free_port()}").rsplit("/", 1)[1]
    url = database_forms(pg_server, database)["query"]
    store = open_voice_store(url, root=tmp_path / "local")
    try:
        store.check()
        store.save(a_voice(20), "Anna")
    finally:
        store.close()
    env = dict(os.environ, HF_HUB_OFFLINE="1", OMNIVOICE_DATA=str(tmp_path / "data"))
    env.pop("OMNIVOICE_VOICE_STORE", None)
    out = tmp_path / "out.wav"

    def synth(voice: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "omnivoice_demo", "synth", "--model", str(tiny_fp32_folder),
                               "--text", "Hello.", "--voice", voice, "--voice-store", url, "--steps", "2",
                               "--output", str(out)], cwd=ROOT, env=env, capture_output=True, text=True,
                              timeout=300)

    spoken = synth("anna")
    assert spoken.returncode == 0 and out.is_file(), spoken.stderr
    missing = synth("Nobody")
    assert missing.returncode == 2 and "'Nobody'" in missing.stderr, missing.stderr
    assert f"omnivoice voices --store postgresql://postgres@127.0.0.1:{pg_server.port}/{database}?password=***" \
        in missing.stderr, missing.stderr
    assert not leaks(spoken.stdout + spoken.stderr + missing.stdout + missing.stderr)
