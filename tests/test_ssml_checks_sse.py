"""The sentence check of an SSML text streamed as SSE: the ``speech.audio.done`` event carries the checks of its
segments' chunks, as it does for a plain text (the recogniser is planted: tests/test_guard.py's)."""

from __future__ import annotations

import base64
import json

from omnivoice_demo.studio import VoiceLibrary
from tests.support.api_client import router_client
from tests.test_guard import _fresh, guarded, planted  # noqa: F401 - the planted recogniser's fixtures

SSML = '<speak>Hello there.<break time="300ms"/>The second part.</speak>'


def sse_events(response) -> list[dict]:
    return [json.loads(line[len("data: "):]) for line in response.text.splitlines() if line.startswith("data: ")]


def test_the_sse_done_event_of_ssml_carries_the_sentence_check(guarded, planted, tmp_path):  # noqa: F811
    planted.script = ["Hello there.", "The second part."]
    api = router_client(guarded, VoiceLibrary(tmp_path / "voices"))
    response = api.post("/v1/audio/speech", json={"input": SSML, "voice": "alloy", "stream_format": "sse",
                                                   "response_format": "pcm", "guard": True, "steps": 4, "seed": 7})
    assert response.status_code == 200, response.text
    events = sse_events(response)
    assert events[-1]["type"] == "speech.audio.done"
    assert sum(len(base64.b64decode(e["audio"])) for e in events if e["type"] == "speech.audio.delta") > 0
    checks = events[-1].get("checks")
    assert checks is not None and len(checks) == 2, events[-1]
    assert all(check["passed"] for check in checks) and planted.script == []
