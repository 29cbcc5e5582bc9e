"""A batch file over MAX_ITEMS is refused while it is read, at the first row past the limit, in bounded memory,
before any row is parsed (issue 43 item 6: a 1,000,001-line file was refused after 81 s and 702 MB)."""

from __future__ import annotations

import tracemalloc

import pytest

from omnivoice_demo.batch import items as batch_items
from omnivoice_demo.batch.items import MAX_ITEMS, MAX_ROW_BYTES, BatchInputError, read_batch


def test_a_file_one_row_over_the_limit_is_refused_at_that_row_unparsed(tmp_path, monkeypatch):
    path = tmp_path / "rows.txt"
    with open(path, "w") as handle:
        handle.write("# a comment is not a row\n\n")
        handle.write("Hello.\n" * (MAX_ITEMS + 1))
    parsed = []
    monkeypatch.setattr(batch_items, "_item_from_row", lambda *a, **k: parsed.append(a) or None)
    tracemalloc.start()
    try:
        with pytest.raises(BatchInputError) as caught:
            read_batch(path, voices_dir=tmp_path / "voices")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert caught.value.problems == [(MAX_ITEMS + 3, f"more than {MAX_ITEMS} items; split the file")]
    assert parsed == []                     # no row was parsed
    assert peak < 16 * 2**20, peak          # bounded: not the file's rows in memory


def test_a_line_longer_than_a_row_is_refused_without_reading_it_whole(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_bytes(b'{"id": "a", "text": "Hi."}\n' + b"x" * (MAX_ROW_BYTES * 3) + b"\n")
    with pytest.raises(BatchInputError, match=f"line 2: the line is over {MAX_ROW_BYTES} bytes"):
        read_batch(path, voices_dir=tmp_path / "voices")


def test_a_reference_clip_over_the_limit_is_a_413(engine, limited, tmp_path):
    """Over-limit inputs answer 413 consistently: a reference clip longer than max_reference_seconds (the
    probe's two-hour clip got 400) is over a limit, not malformed."""

    import numpy as np
    import soundfile

    from omnivoice_demo.audio.processing import load_audio_file
    from omnivoice_demo.errors import ResourceLimitExceeded
    from omnivoice_demo.studio import VoiceLibrary
    from tests.support.api_client import router_client

    limited(max_reference_seconds=1.0)
    clip = tmp_path / "long.wav"
    soundfile.write(clip, (0.1 * np.sin(np.arange(3 * 24000) / 20)).astype(np.float32), 24000)
    with pytest.raises(ResourceLimitExceeded, match="max_reference_seconds|limit is 1 s"):
        load_audio_file(clip, max_seconds=1.0)
    api = router_client(engine, VoiceLibrary(tmp_path / "voices"))
    response = api.post("/v1/audio/voices", files={"file": ("long.wav", clip.read_bytes(), "audio/wav")},
                        data={"name": "long", "transcript": "hello there", "consent": "true"})
    assert response.status_code == 413, response.text
    assert response.json()["error"]["param"] == "max_reference_seconds"
