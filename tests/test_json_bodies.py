"""Request bodies are read as strict JSON (issue 49, item 8): ``NaN``, ``Infinity`` and a key given twice are a
400 naming them, at the place every front end reads a body (``studio.json_bodies``) and through the HTTP API."""

from __future__ import annotations

import pytest

from omnivoice_demo.errors import InvalidInput
from omnivoice_demo.studio import json_bodies


@pytest.mark.parametrize("body, words", [
    ('{"speed": NaN}', "holds NaN, which is not a JSON number"),
    ('[1, Infinity]', "holds Infinity"),
    ('{"a": {"b": -Infinity}}', "holds -Infinity"),
    ('{"input": "a", "input": "b"}', 'gives the field "input" twice'),
    ('{"a": [{"k": 1, "k": 1}]}', 'gives the field "k" twice'),
    ("not json", "not valid JSON"),
    ("[" * 100000, "nested too deeply"),
])
def test_what_python_reads_but_json_does_not_hold_is_refused_naming_it(body, words):
    with pytest.raises(InvalidInput, match=words):
        json_bodies.loads(body)


def test_json_is_read_as_the_standard_library_reads_it():
    body = '{"a": [1, 2.5, -3e-2, true, null, "\\u00e9"], "b": {"c": "d"}}'
    import json

    assert json_bodies.loads(body) == json.loads(body) and json_bodies.loads(body.encode()) == json.loads(body)


def test_the_http_api_answers_nan_and_duplicate_fields_with_a_400(engine, tmp_path):
    from omnivoice_demo.studio import VoiceLibrary
    from tests.support.api_client import router_client

    api = router_client(engine, VoiceLibrary(tmp_path / "voices"))
    for body, words in [('{"input": "Hi.", "speed": NaN, "stream": false}', "holds NaN"),
                        ('{"input": "Hi.", "input": "Bye.", "stream": false}', 'field "input" twice')]:
        answer = api.post("/v1/audio/speech", content=body, headers={"Content-Type": "application/json"})
        assert answer.status_code == 400 and words in answer.json()["error"]["message"], answer.text[:300]
