"""Reading one Wyoming event, checking each part of it before it is used.

An event is a JSON header line (``{"type": ..., "data": {...}, "data_length": N, "payload_length": M}``),
then N bytes of JSON merged into ``data``, then M bytes of payload.  The ``wyoming`` library's
``async_read_event`` takes the header on trust (a list as ``data``, a length that is a string or a
fraction raise inside it; a header that is not JSON ends the connection without a word), so the server
reads events here:

* a header whose lengths are not whole numbers from 0 to ``MAX_EVENT_PART_BYTES``, or that is not a JSON
  object, leaves the rest of the stream without a frame: ``MalformedEvent`` with ``fatal`` (the server
  answers an ``error`` event and closes the connection);
* a header that frames its parts but has no type, or whose data is not a JSON object: ``MalformedEvent``
  after its parts were read, so the connection goes on with the next event;
* the end of the stream is None, as in the library.
"""

from __future__ import annotations

import asyncio
import json
from typing import Optional

from wyoming.event import Event

from ..errors import InvalidInput, excerpt

#: the most an event's data or payload may declare: a text-to-speech client sends JSON of a text (the
#: local limit's 50,000 characters fit) and no audio; the header line itself is bounded by the reader (64 KiB)
MAX_EVENT_PART_BYTES = 1 << 20


class MalformedEvent(InvalidInput):
    """An event that breaks the protocol; ``fatal`` when what follows it cannot be framed."""

    def __init__(self, message: str, fatal: bool = False):
        super().__init__(message, param="event")
        self.fatal = fatal


def _json(raw: bytes, what: str, fatal: bool):
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):   # not UTF-8 or not JSON; nested past the parser's depth
        raise MalformedEvent(f"The event's {what} is not JSON: {excerpt(raw)}.", fatal) from None


def _length(header: dict, key: str, limit: int) -> int:
    value = header.get(key)
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= limit:
        raise MalformedEvent(f"The event's {key} must be a whole number of bytes from 0 to {limit}, got "
                             f"{excerpt(value)}; the connection is closed.", fatal=True)
    return value


async def read_event(reader: asyncio.StreamReader, limit: int = MAX_EVENT_PART_BYTES) -> Optional[Event]:
    """The next event of ``reader``; None at the end of the stream; ``MalformedEvent`` when it breaks the
    protocol (``ConnectionError`` when the connection breaks)."""
    try:
        line = await reader.readline()
    except ValueError:   # longer than the reader's limit (it drops what it read)
        raise MalformedEvent("The event's header line is longer than the server reads (64 KiB).", fatal=True) from None
    if not line:
        return None
    header = _json(line, "header line", fatal=True)
    if not isinstance(header, dict):
        raise MalformedEvent(f"The event's header must be a JSON object, got {excerpt(header)}.", fatal=True)
    data_length, payload_length = _length(header, "data_length", limit), _length(header, "payload_length", limit)
    try:
        data_bytes = await reader.readexactly(data_length) if data_length else b""
        payload = await reader.readexactly(payload_length) if payload_length else None
    except asyncio.IncompleteReadError:
        raise MalformedEvent("The connection ended inside an event (fewer bytes than its data_length or "
                             "payload_length).", fatal=True) from None
    kind = header.get("type")
    if not isinstance(kind, str) or not kind.strip():
        raise MalformedEvent(f"The event's type must be a name such as \"synthesize\", got {excerpt(kind)}.")
    data = {} if header.get("data") is None else header["data"]
    extra = _json(data_bytes, "data", fatal=False) if data_bytes else {}
    for part in (data, extra):
        if not isinstance(part, dict):
            raise MalformedEvent(f"The data of a {excerpt(kind)} event must be a JSON object, got {excerpt(part)}.")
    return Event(type=kind, data={**data, **extra}, payload=payload)
