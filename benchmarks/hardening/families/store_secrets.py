"""Family 64 of the hardening probe (issue 57, root cause 2):
a database password in every form libpq takes, looked for in every output.

Every password holds ``SECRET`` and starts ``Zq9``; neither may appear in anything a process prints or answers:
the start-up error of ``omnivoice serve`` and of the app for a database that cannot be reached (each form), the
usage error of a command that has no ``--voice-store`` and of the app given a misspelt flag, and, against a real
PostgreSQL (trust authentication: the password is not asked for, so each form connects), the apps' /health,
/ready, /metrics, voices listing and saved-voice speech while the database is up and while it refuses
connections (the 503 bodies a client receives), and each server's whole log."""

from __future__ import annotations

import subprocess

import httpx

from ..database import FAST_FLAGS, execute, start
from ..probe import Probe
from ..server import Server, environment
from ..visitor import short, speak, tail
from .store_stalled import app_on_store

FAMILY = 64
WHAT = "a database password in every form libpq takes: start-up and usage errors, 503 bodies, probes, logs"
#: starts its own servers and processes (``run(probe)``)
SHARED = False

SECRET_PARTS = ("SECRET", "Zq9")
#: the forms a server runs on (libpq reads them); the others (a raw @ or / in the password, PASSWORD= in capitals,
#: which libpq does not know, key=value strings) are refused at start-up, before connecting, by the first case
SERVED = ("userinfo", "percent-encoded", "query")


def forms(host: str, port: int, database: str = "voices") -> dict[str, str]:
    """Each form of a password for ``database`` at ``host:port``, as user tts."""
    at = f"{host}:{port}"
    return {
        "userinfo": f"postgresql://tts:Zq9SECRETx@{at}/{database}",
        "percent-encoded": f"postgresql://tts:Zq9%40SECRET%2Fx@{at}/{database}",
        "raw @": f"postgresql://tts:Zq9@SECRETx@{at}/{database}",
        "raw /": f"postgresql://tts:Zq9/SECRETx@{at}/{database}",
        "query": f"postgresql://tts@{at}/{database}?password=Zq9SECRETx",
        "query, another case": f"postgresql://tts@{at}/{database}?sslmode=disable&PASSWORD=Zq9SECRETx",
        "key=value": f"host={host} port={port} password=Zq9SECRETx dbname={database}",
        "key=value quoted": f"host={host} port={port} password='Zq9 SECRET x' dbname={database}",
    }


def leaks(text: str) -> list[str]:
    return [part for part in SECRET_PARTS if part in text]


def clean(text: str) -> bool:
    return not leaks(text) and "Traceback" not in text


def run(probe: Probe) -> None:
    from tests.support.app_server import free_port

    env = environment(probe.repo, probe.work / "secrets")

    def start_up_errors() -> tuple[str, str]:
        port = free_port()   # nothing listens there
        starts = {f"serve, {name}": [probe.python, "-m", "omnivoice_demo", "serve", "--port", str(free_port()),
                                     "--voice-store", url, *FAST_FLAGS]
                  for name, url in forms("127.0.0.1", port).items()}
        for name in ("userinfo", "query", "raw @"):
            starts[f"app, {name}"] = [probe.python, str(probe.repo / "app.py"), "--port", str(free_port()),
                                      "--voice-store", forms("127.0.0.1", port)[name], *FAST_FLAGS]
        running = {name: subprocess.Popen(["nice", "-n", "19", *command], cwd=probe.work, env=env, text=True,
                                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
                   for name, command in starts.items()}
        bad = []
        for name, process in running.items():
            try:
                output, _ = process.communicate(timeout=300)
            except subprocess.TimeoutExpired:
                process.kill()
                output, _ = process.communicate()
                bad.append(f"{name}: still running after 300 s")
                continue
            lines = [line for line in output.splitlines() if line.strip()]
            if process.returncode == 0 or not clean(output) or len(lines) != 1:
                bad.append(f"{name}: exit {process.returncode}, {len(lines)} lines, leaks {leaks(output)}: "
                           f"{tail(output, 120)}")
        return ("held" if not bad else "broke"), (f"{len(running)} starts, each one line without the password"
                                                  if not bad else "; ".join(bad))
    probe.guarded(None, 64, "serve (8 forms) and the app (3) started on a database where nothing listens",
                  "exit non-zero, one line, no password part and no traceback in the output", start_up_errors)

    def usage_errors() -> tuple[str, str]:
        from concurrent.futures import ThreadPoolExecutor

        runs = [(name, argv) for name, url in forms("db", 5432).items()
                for argv in (["-m", "omnivoice_demo", "codec", "--input", "in.wav", "--voice-store", url],
                             ["-m", "omnivoice_demo", "codec", "--input", "in.wav", f"--voice-store={url}"],
                             [str(probe.repo / "app.py"), "--voicestore", url])]

        def one(argv: list[str]) -> subprocess.CompletedProcess:
            return subprocess.run(["nice", "-n", "19", probe.python, *argv], capture_output=True, text=True,
                                  cwd=probe.work, env=env, timeout=300)

        with ThreadPoolExecutor(4) as pool:
            done = list(pool.map(one, [argv for _, argv in runs]))
        bad = [f"{name}, {argv[-2]}: exit {d.returncode}, leaks {leaks(d.stdout + d.stderr)}: "
               f"{tail(d.stdout + d.stderr, 100)}" for (name, argv), d in zip(runs, done)
               if d.returncode != 2 or not clean(d.stdout + d.stderr)]
        return ("held" if not bad else "broke"), f"{len(runs)} runs; " + ("none leaked" if not bad else "; ".join(bad))
    probe.guarded(None, 64, "a usage error repeating the store (codec has no --voice-store; the app's --voicestore "
                  "misspelt), each form", "exit 2, no password part in the usage error", usage_errors)

    pg, why = start()
    if pg is None:
        probe.notes.append(f"family 64: the real-database cases skipped: {why}")
        return
    try:
        execute(pg.url(), "CREATE ROLE tts LOGIN")
        execute(pg.url(), "CREATE DATABASE voices OWNER tts")
        servers = {name: app_on_store(probe, url, f"secrets-{index}") for index, (name, url) in
                   enumerate(forms("127.0.0.1", pg.port).items()) if name in SERVED}
        try:
            served(probe, pg, servers)
        finally:
            for server in servers.values():
                server.stop()
    finally:
        pg.stop()


def served(probe: Probe, pg, servers: dict[str, Server]) -> None:
    def refuse(on: bool) -> None:
        execute(pg.url(), f"ALTER DATABASE voices ALLOW_CONNECTIONS {'false' if on else 'true'}")
        if on:
            execute(pg.url(), "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = 'voices'")

    def outputs(server: Server) -> list[tuple[str, httpx.Response]]:
        with server.http() as client:
            return [("/health", httpx.get(server.url + "health", timeout=30)),
                    ("/ready", httpx.get(server.url + "ready", timeout=30)),
                    ("/metrics", httpx.get(server.url + "metrics", timeout=30)),
                    ("listing", client.get("v1/audio/voices")), ("a voice not built in", speak(client, "Anna")),
                    ("unknown voice", speak(client, "Nobody"))]

    for name, server in servers.items():
        def answers(server: Server = server, name: str = name) -> tuple[str, str]:
            server.start()
            up = outputs(server)
            refuse(True)
            try:
                down = outputs(server)
            finally:
                refuse(False)
            log = server.log_path.read_text(errors="replace")
            leaked = [f"{label} ({state})" for state, seen in (("up", up), ("refused", down))
                      for label, answer in seen if not clean(answer.text)] + (["the log"] if not clean(log) else [])
            refused = dict(down)
            served_down = refused["listing"].status_code == 503 and refused["a voice not built in"].status_code == 503
            server.stop()
            return ("held" if not leaked and served_down and dict(up)["listing"].status_code == 200 else "broke"), (
                f"up: listing {dict(up)['listing'].status_code}; refused: listing {short(refused['listing'])}, "
                f"a voice not built in {short(refused['a voice not built in'])}; leaked in: {leaked or 'nothing'}")
        probe.guarded(None, 64, f"the app on a real database, password as {name}: up, then refusing connections",
                      "no password part in /health, /ready, /metrics, the listing, the 503 bodies or the log; "
                      "a 503 while the database refuses", answers)
