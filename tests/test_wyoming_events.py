"""Malformed Wyoming events, odd speakers and a client that half-closes its socket, on a real server.

Each malformed event (the hardening probe's table, family 16) is sent as raw bytes on a socket (the
``wyoming`` client cannot send most of them): the answer is an ``error`` event whose code is not
``internal_error``, the log has one line for it and no traceback, and the connection goes on (a
``describe`` after it is answered) unless the stream has no frame left (then it is closed after the
error).  A client that shuts down its writing side after ``synthesize`` reads the same audio as one that
keeps it open.
"""

from __future__ import annotations

import io
import logging

import pytest
from wyoming.event import write_event

from benchmarks.hardening_probe import WYOMING_MALFORMED as MALFORMED
from benchmarks.hardening_probe import WYOMING_SPEAKERS as SPEAKERS
from benchmarks.hardening_probe import wyoming_exchange as exchange
from benchmarks.hardening_probe import wyoming_header as header
from omnivoice_demo.errors import InvalidInput
from omnivoice_demo.wyoming.requests import parse_request

from tests.test_wyoming import ONE_SENTENCE, SEED, audio_of, core, server, synthesize, talk  # noqa: F401 - fixtures


def event_bytes(event) -> bytes:
    buffer = io.BytesIO()
    write_event(event, buffer)
    return buffer.getvalue()


def _log_lines(caplog, since: int) -> list:
    return [r for r in caplog.records[since:] if r.name.startswith(("omnivoice_demo", "asyncio", "wyoming"))]


@pytest.mark.parametrize("name", list(MALFORMED))
def test_a_malformed_event_is_a_clear_error_logged_in_one_line(server, caplog, name):
    raw, keeps_frame = MALFORMED[name]
    caplog.set_level(logging.DEBUG)
    since = len(caplog.records)
    events = exchange(server.port, raw)
    assert events and events[0]["type"] == "error", [e["type"] for e in events]
    error = events[0]["data"]
    assert error["code"] in ("invalid_event", "invalid_value"), error
    assert "internal" not in error["text"].lower() and len(error["text"]) < 400, error
    if keeps_frame:
        assert [e["type"] for e in events] == ["error", "info"]   # the connection went on
    else:
        assert [e["type"] for e in events] == ["error"]           # closed after the error
    lines = [r for r in _log_lines(caplog, since) if r.levelno >= logging.WARNING]
    assert all(r.exc_info is None and "Traceback" not in r.getMessage() for r in lines), lines
    if error["code"] == "invalid_event":
        assert len(lines) == 1, [r.getMessage() for r in lines]


@pytest.mark.parametrize("speaker", SPEAKERS, ids=repr)
def test_an_odd_speaker_is_an_invalid_value(server, speaker):
    raw = header(type="synthesize", data={"text": ONE_SENTENCE, "voice": {"speaker": speaker}})
    events = exchange(server.port, raw)
    assert [e["type"] for e in events] == ["error", "info"]
    assert events[0]["data"]["code"] == "invalid_value" and "speaker" in events[0]["data"]["text"]


def test_a_speaker_of_ascii_digits_is_the_seed():
    assert parse_request({"voice": {"speaker": " 42 "}}).seed == 42
    for speaker in ("²", "٣", "1" * 13):
        with pytest.raises(InvalidInput, match="speaker"):
            parse_request({"voice": {"speaker": speaker}})


def test_a_client_that_half_closes_after_synthesize_gets_its_audio(server):
    kept_open = audio_of(talk(server.port, [synthesize(ONE_SENTENCE, seed=SEED)]))
    events = exchange(server.port, event_bytes(synthesize(ONE_SENTENCE, seed=SEED).event()), half_close=True)
    kinds = [e["type"] for e in events if e["type"] != "ping"]
    assert kinds[0] == "audio-start" and kinds[-1] == "audio-stop" and "audio-chunk" in kinds, kinds
    half_closed = b"".join(e["payload"] for e in events if e["type"] == "audio-chunk")
    assert half_closed == kept_open and len(half_closed) > 0
