"""Family 65 of the hardening probe (issue 57, root causes 4 and 5):
rows written straight into the shared voice table, and many voices listed.

One app on a real PostgreSQL (``..database``).  A voice saved through the API gives the bytes of a good row; rows
are then written into the table directly, as any program with write access could: a name of ``../`` segments
that leads out of the cache, a name with ``/``, bytes that are no voice, a good row named Bob, then 1,200 voices.
Held: a request for a row no voice may be named as is a clear 4xx (never a 500 or a traceback) and nothing is
written outside the server's folders; a good row speaks; the list comes in pages (the issue: 1,200 voices 3.7 s
per list, five lists at once 19 s with /health waiting behind them); an unknown voice's error names that voice
alone."""

from __future__ import annotations

import pathlib
import tempfile
import threading
import time
import uuid

import httpx

from ..database import execute, insert_rows, start, voice_bytes
from ..probe import Probe
from ..visitor import clear_4xx, create_voice, message_of, short, speak
from .store_stalled import app_on_store, log_clean, timed

FAMILY = 65
WHAT = "rows written straight into the voice table (../ and / in a name, bytes no voice), 1,200 voices listed"
#: starts its own servers (``run(probe)``)
SHARED = False

MANY = 1200


def files_named(marker: str, work: pathlib.Path) -> list[str]:
    """Files whose name holds ``marker`` under the probe's work folder, and in every folder above it and above the
    system's temporary folder (where ``../`` segments would have led a write)."""
    temporary = pathlib.Path(tempfile.gettempdir())
    above = {*work.parents, temporary, *temporary.parents}
    return [str(p) for p in work.rglob(f"*{marker}*")] + [str(p) for folder in above
                                                          for p in folder.glob(f"*{marker}*")]


def cached(work: pathlib.Path) -> set[str]:
    """The files under the server's work folder that are in a cache of voices (``db-cache``)."""
    return {str(p) for p in work.rglob("*") if "db-cache" in p.parts and p.is_file()}


def whole_list(client: httpx.Client, limit: int = 100) -> tuple[list[str], int, list[int]]:
    """Every id of the paged listing: (ids, pages, statuses that were not 200)."""
    ids, after, pages, bad = [], None, 0, []
    while pages < 1000:
        answer = client.get("v1/audio/voices", params={"limit": limit, **({"after": after} if after else {})})
        pages += 1
        if answer.status_code != 200:
            bad.append(answer.status_code)
            break
        body = answer.json()
        ids += [item.get("id") for item in body.get("data", [])]
        if not body.get("has_more"):
            break
        after = body.get("last_id")
    return ids, pages, bad


def run(probe: Probe) -> None:
    pg, why = start()
    if pg is None:
        probe.notes.append(f"family 65 skipped: {why}")
        return
    url = pg.url()
    server = app_on_store(probe, url, "rows")
    try:
        server.start()
        client = server.http()
        made = create_voice(client, "Anna", probe.wav)
        if made.status_code not in (200, 201):
            probe.add(65, "a saved voice made through the API", "200", "broke", short(made))
            return
        good = voice_bytes(url, "Anna")
        marker = f"escaped-{uuid.uuid4().hex[:8]}"
        escaping = "../" * 12 + marker
        insert_rows(url, [(escaping, good), (f"a/{marker}", good), (f"Junk {marker}", b"PK\x03\x04 not a voice"),
                          ("Bob", good)])

        for name, what in ((escaping, "twelve ../ segments"), (f"a/{marker}", "a /"),
                           (f"Junk {marker}", "a good name, bytes that are no voice")):
            def row(name: str = name) -> tuple[str, str]:
                before = cached(server.work)
                spoken = speak(client, name)
                added = sorted(cached(server.work) - before)
                held = clear_4xx(spoken) and "Traceback" not in spoken.text and not added
                return ("held" if held else "broke"), f"{short(spoken)}; new files in the cache: {added or 'none'}"
            probe.guarded(server, 65, f"speech with the voice of a row: {what}",
                          "a clear 4xx, no traceback; no file added to the server's voice cache", row)

        def nothing_written() -> tuple[str, str]:
            found = files_named(marker, probe.work)
            listed, _, bad = whole_list(client)
            shown = [name for name in listed if name in (escaping, f"a/{marker}")]
            held = not found and not shown and not bad and "Bob" in listed and "Anna" in listed
            return ("held" if held else "broke"), (f"files named after the rows: {found or 'none'}; rows listed: "
                                                   f"{shown or 'none'}; listing {len(listed)} ids")
        probe.guarded(server, 65, "after those requests: files named after the rows, and the listing",
                      "no file named after a row anywhere (the work folder, the folders above it and above /tmp); "
                      "the rows no voice may be named as (../, /) are not listed, Anna and Bob are", nothing_written)

        def good_row() -> tuple[str, str]:
            spoken = speak(client, "Bob")
            return ("held" if spoken.status_code == 200 else "broke"), short(spoken)
        probe.guarded(server, 65, "speech with a good row written straight into the table (Bob)", "200", good_row)

        execute(url, "INSERT INTO omnivoice_voices (owner, name, name_key, created_at, tags, data) "
                "SELECT '', 'Voice ' || lpad(i::text, 5, '0'), 'voice ' || lpad(i::text, 5, '0'), "
                "1700000000 + i, ARRAY['calm'], %s FROM generate_series(1, %s) AS i", (good, MANY))

        def paged() -> tuple[str, str]:
            (ids, pages, bad), seconds = timed(lambda: whole_list(client))
            page, page_s = timed(lambda: client.get("v1/audio/voices", params={"limit": 100}))
            saved = [i for i in ids if i and (i.startswith("Voice ") or i in ("Anna", "Bob"))]
            held = not bad and len(saved) == MANY + 2 and len(set(ids)) == len(ids) and page.status_code == 200
            return ("held" if held else "broke"), (f"{len(saved)} saved voices in {pages} pages of 100 in "
                                                   f"{seconds:.2f} s; one page {page_s:.2f} s; not 200: {bad or 'none'}")
        probe.guarded(server, 65, f"{MANY + 2} saved voices listed a page at a time (limit 100, after)",
                      "every voice once, every page 200", paged)

        def five_at_once() -> tuple[str, str]:
            results: list = []
            threads = [threading.Thread(target=lambda: results.append(timed(lambda: whole_list(client))))
                       for _ in range(5)]
            started = time.monotonic()
            for thread in threads:
                thread.start()
            time.sleep(0.2)
            health, health_s = timed(lambda: httpx.get(server.url + "health", timeout=30))
            for thread in threads:
                thread.join(300)
            seconds = time.monotonic() - started
            complete = [len(ids) for (ids, _, bad), _ in results if not bad]
            held = health.status_code == 200 and health_s < 1.0 and len(complete) == 5
            return ("held" if held else "broke"), (f"five whole lists at once in {seconds:.1f} s (each "
                                                   f"{complete} ids); /health {health.status_code} in {health_s:.2f} s")
        probe.guarded(server, 65, "five whole paged lists at once, /health asked meanwhile",
                      "/health within 1 s; every list complete", five_at_once)

        def unknown() -> tuple[str, str]:
            spoken = speak(client, "Nobody")
            message = message_of(spoken)
            held = clear_4xx(spoken, "Nobody") and "Voice 0" not in message and "Anna" not in message
            return ("held" if held else "broke"), f"{short(spoken)} ({len(message)} characters)"
        probe.guarded(server, 65, f"speech with an unknown voice beside {MANY + 2} saved ones",
                      "a clear 4xx naming the voice asked for, not the saved ones", unknown)
        log_clean(probe, server, 65)
    finally:
        server.stop()
        pg.stop()
