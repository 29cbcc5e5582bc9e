"""Family 63 of the hardening probe (issue 57, root causes 1, 3 and 6):
the voice store stalled (its database's processes stopped), restarted and down; the app's probes without a key.

One app (``app.py --voice-store postgresql://... --api-key KEY``, the default key scope: all) on a real PostgreSQL
of its own (``..database``), with the store's short waits.  A saved voice is made through the API first; it must be
there and speak after every fault (else "data lost").  Held: /health, /ready and /metrics answer without the key
within 1 s while a voices call waits on the stalled database; a built-in voice speaks; a saved voice's call is a
503 ``voice_store_unavailable`` with Retry-After within the store's call time; a restart costs no call."""

from __future__ import annotations

import threading
import time

import httpx

from tests.support.app_server import free_port

from ..database import CALL_SECONDS, FAST_FLAGS, pg_ctl, stalled, start
from ..probe import Probe
from ..server import KEY, Server
from ..visitor import create_voice, names_of, short, speak
from .wyoming import wyoming_exchange

FAMILY = 63
WHAT = "the voice store stalled, restarted and down (a real PostgreSQL); the app's probes without its key"
#: starts its own servers (``run(probe)``)
SHARED = False


def timed(call) -> tuple[httpx.Response, float]:
    started = time.monotonic()
    answer = call()
    return answer, time.monotonic() - started


def unavailable(answer: httpx.Response) -> bool:
    """A 503 voice_store_unavailable with Retry-After, in the API's JSON shape, no traceback."""
    try:
        code = answer.json()["error"]["code"]
    except (ValueError, KeyError, TypeError):
        return False
    return answer.status_code == 503 and code == "voice_store_unavailable" and \
        answer.headers.get("Retry-After", "").isdigit() and "Traceback" not in answer.text


def app_on_store(probe: Probe, url: str, name: str, wyoming_port: int = 0) -> Server:
    args = ["--model", str(probe.model), "--precision", "fp32", "--offline", "--api-key", KEY, "--voice-store", url,
            *FAST_FLAGS, *(["--wyoming-uri", f"tcp://127.0.0.1:{wyoming_port}"] if wyoming_port else [])]
    return Server(probe.repo, probe.python, probe.work / name, args, name)


def probes_at_once(server: Server) -> tuple[bool, str]:
    """/health, /ready and /metrics without the key: each a 200 within 1 s."""
    seen, held = [], True
    for path in ("health", "ready", "metrics"):
        answer, seconds = timed(lambda path=path: httpx.get(server.url + path, timeout=10))
        held = held and answer.status_code == 200 and seconds < 1.0
        seen.append(f"/{path} {answer.status_code} in {seconds:.2f} s")
    return held, ", ".join(seen)


def run(probe: Probe) -> None:
    pg, why = start()
    if pg is None:
        probe.notes.append(f"family 63 skipped: {why}")
        return
    wyoming_port = free_port()
    server = app_on_store(probe, pg.url(), "stalled", wyoming_port)
    try:
        server.start()
        client = server.http()
        made = create_voice(client, "Anna", probe.wav)
        if made.status_code not in (200, 201):
            probe.add(63, "a saved voice made through the API", "200", "broke", short(made))
            return
        cases(probe, server, pg, client, wyoming_port)
        log_clean(probe, server, 63)
    finally:
        server.stop()
        pg.stop()


def kept(client: httpx.Client, deadline: float = 20.0) -> tuple[bool, str]:
    """The saved voice is listed and speaks again (within ``deadline`` s: the pool opens new connections)."""
    ends, listed, spoken = time.monotonic() + deadline, None, None
    while time.monotonic() < ends:
        listed = client.get("v1/audio/voices")
        if listed.status_code == 200 and "Anna" in names_of(listed):
            spoken = speak(client, "Anna")
            if spoken.status_code == 200:
                return True, "Anna listed and spoken"
        time.sleep(0.5)
    return False, f"listing {short(listed) if listed else '-'}; speech {short(spoken) if spoken else '-'}"


def describe(port: int) -> tuple[list[str], float]:
    """The voices Wyoming's describe offers (their names), and the seconds its answer took."""
    started = time.monotonic()
    events = wyoming_exchange(port, b"", timeout=60)
    seconds = time.monotonic() - started
    info = next((event["data"] for event in events if event["type"] == "info"), {})
    return [voice.get("name", "") for program in info.get("tts", []) for voice in program.get("voices", [])], seconds


def cases(probe: Probe, server: Server, pg, client: httpx.Client, wyoming_port: int) -> None:
    def keyless_probes() -> tuple[str, str]:
        held, seen = probes_at_once(server)
        guarded = httpx.get(server.url + "v1/audio/voices", timeout=30).status_code
        return ("held" if held and guarded == 401 else "broke"), f"{seen}; /v1/audio/voices without the key {guarded}"
    probe.guarded(server, 63, "the app's /health, /ready and /metrics without the key (--api-key, scope all)",
                  "each 200 within 1 s (docs/deploy.md: a probe needs no key); the API still asks for it",
                  keyless_probes)

    def describe_up() -> tuple[str, str]:
        voices, seconds = describe(wyoming_port)
        return ("held" if "alloy" in voices and "Anna" in voices else "broke"), \
            f"{len(voices)} voices in {seconds:.1f} s: alloy {'alloy' in voices}, Anna {'Anna' in voices}"
    probe.guarded(server, 63, "Wyoming's describe with the store up (the app's --wyoming-uri)",
                  "offers the built-in voices and the saved one", describe_up)

    def stalled_database() -> tuple[str, str]:
        waiting: dict = {}

        def list_voices() -> None:
            waiting["answer"], waiting["seconds"] = timed(lambda: client.get("v1/audio/voices"))

        with stalled(pg):
            thread = threading.Thread(target=list_voices)
            thread.start()
            time.sleep(0.3)
            probes_held, probes_seen = probes_at_once(server)   # while the listing waits on the database
            builtin, builtin_s = timed(lambda: speak(client, "alloy"))
            saved, saved_s = timed(lambda: speak(client, "Anna"))
            voices, describe_s = describe(wyoming_port)
            thread.join(CALL_SECONDS + 20)
            ready = httpx.get(server.url + "ready", timeout=10)
        listing, listing_s = waiting.get("answer"), waiting.get("seconds", -1)
        held = probes_held and builtin.status_code == 200 and unavailable(saved) and listing is not None and \
            unavailable(listing) and max(saved_s, listing_s) < CALL_SECONDS + 3 and ready.status_code == 200 and \
            "alloy" in voices and describe_s < 4
        back, said = kept(client)
        if not back:
            return "data lost", f"after the stall: {said}"
        return ("held" if held else "broke"), (
            f"{probes_seen}; alloy {short(builtin)} in {builtin_s:.1f} s; Anna {short(saved)} "
            f"(Retry-After {saved.headers.get('Retry-After')}) in {saved_s:.1f} s; listing "
            f"{short(listing) if listing is not None else 'no answer'} in {listing_s:.1f} s; Wyoming describe "
            f"{len(voices)} voices (alloy {'alloy' in voices}, Anna {'Anna' in voices}) in {describe_s:.1f} s; "
            f"/ready {ready.status_code}; after: {said}")
    probe.guarded(server, 63, "every process of the database stopped (SIGSTOP) while a voices listing waits",
                  "/health, /ready, /metrics within 1 s; a built-in voice speaks; Wyoming's describe offers the built-in "
                  "voices within 4 s (the handler waits 2 s on the store); the saved voice and the listing a "
                  "503 voice_store_unavailable with Retry-After within the store's call time; after SIGCONT the "
                  "voice is there", stalled_database)

    def restarted() -> tuple[str, str]:
        code = pg_ctl(pg, "restart")
        answers = [client.get("v1/audio/voices") for _ in range(3)] + [speak(client, "Anna") for _ in range(3)]
        failed = [short(a) for a in answers if a.status_code != 200]
        return ("held" if code == 0 and not failed else "broke"), \
            f"pg_ctl restart exit {code}; {len(answers) - len(failed)} of {len(answers)} calls 200; failed: {failed}"
    probe.guarded(server, 63, "the database restarted (pg_ctl restart -m fast), then three listings and three "
                  "speeches of the saved voice", "every call 200: a restart costs no call", restarted)

    def down() -> tuple[str, str]:
        code = pg_ctl(pg, "stop")
        try:
            builtin, builtin_s = timed(lambda: speak(client, "alloy"))
            saved, saved_s = timed(lambda: speak(client, "Anna"))
            ready = httpx.get(server.url + "ready", timeout=10)
        finally:
            code2 = pg_ctl(pg, "start")
        held = code == 0 and builtin.status_code == 200 and builtin_s < 3 and unavailable(saved) and \
            ready.status_code == 200
        back, said = kept(client)
        if not back:
            return "data lost", f"after the start: {said}"
        return ("held" if held else "broke"), (
            f"stop exit {code}; alloy {short(builtin)} in {builtin_s:.1f} s; Anna {short(saved)} in {saved_s:.1f} s; "
            f"/ready {ready.status_code} {ready.text[:120]}; start exit {code2}; after: {said}")
    probe.guarded(server, 63, "the database down (pg_ctl stop), then started again",
                  "a built-in voice speaks within 3 s (it needs no saved voice); the saved voice a 503 "
                  "voice_store_unavailable with Retry-After; /ready 200 naming the store's state; the voice back "
                  "after the start", down)


def log_clean(probe: Probe, server: Server, family: int) -> None:
    """The server's whole log: no traceback (an error is said in its own words)."""
    def check() -> tuple[str, str]:
        log = server.log_path.read_text(errors="replace")
        found = log.count("Traceback")
        return ("held" if not found else "broke"), f"{len(log.splitlines())} lines, {found} tracebacks" + \
            (f": {log[log.index('Traceback'):][:300]}" if found else "")
    probe.guarded(server, family, "the server's log after every case above", "no traceback", check)
