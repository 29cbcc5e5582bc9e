"""Listing saved voices in a real PostgreSQL at 10,000 voices (issue 57): the time of every page of
``PostgresVoiceStore.listing`` (one query a page) and of the whole list in pages, on a server this script starts
(tests/support/postgres.py) and removes.

    .venv-dev/bin/python benchmarks/voice_list.py [--voices 10000] [--page 100]
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))


def main() -> int:
    import numpy as np

    from omnivoice_demo.storage.voice_file import Voice
    from omnivoice_demo.studio.voice_db import _bytes_of_voice
    from omnivoice_demo.studio.voice_store import open_voice_store
    from tests.support.postgres import PostgresServer

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--voices", type=int, default=10_000)
    parser.add_argument("--page", type=int, default=100)
    args = parser.parse_args()
    server = PostgresServer().start()
    try:
        store = open_voice_store(server.create_database("voice_list"), root=pathlib.Path(tempfile.mkdtemp()))
        store.check()
        codes = np.random.default_rng(0).integers(0, 1024, size=(8, 40), dtype=np.int64)
        data = _bytes_of_voice(Voice(codes=codes, transcript="Hello there.", rms=0.1))
        import psycopg

        with psycopg.connect(store.url) as connection:
            connection.execute("INSERT INTO omnivoice_voices (owner, name, name_key, created_at, tags, data) "
                               "SELECT '', 'Voice ' || lpad(i::text, 5, '0'), 'voice ' || lpad(i::text, 5, '0'), "
                               "1700000000 + i, ARRAY['calm'], %s FROM generate_series(1, %s) AS i",
                               (data, args.voices))
        store.listing(limit=args.page)   # a connection opened
        times, after, count = [], None, 0
        started = time.perf_counter()
        while True:
            begun = time.perf_counter()
            entries, more = store.listing(limit=args.page, after=after)
            times.append(time.perf_counter() - begun)
            count += len(entries)
            if not more:
                break
            after = entries[-1].name
        whole = time.perf_counter() - started
        begun = time.perf_counter()
        store.find("voice 09999")
        found = time.perf_counter() - begun
        times.sort()
        print(f"{args.voices} voices, pages of {args.page}: {len(times)} pages, {count} voices listed in "
              f"{whole:.2f} s; a page median {times[len(times) // 2] * 1000:.1f} ms, slowest "
              f"{times[-1] * 1000:.1f} ms; find one by name {found * 1000:.1f} ms")
        store.close()
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
