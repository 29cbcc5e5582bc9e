"""Family 16 of the hardening probe:
Wyoming: malformed events, odd speakers, a client that half-closes after synthesize."""

from __future__ import annotations

import contextlib
import json
import socket
import time

from tests.support.app_server import free_port

from ..probe import Probe
from ..server import Server

FAMILY = 16
WHAT = "Wyoming: malformed events, odd speakers, a client that half-closes after synthesize"
#: starts its own servers (``run(probe)``)
SHARED = False


def wyoming_header(**fields) -> bytes:
    return json.dumps(fields).encode() + b"\n"


#: malformed Wyoming events as bytes on the wire: (what is sent, the stream keeps its frame after it)
WYOMING_MALFORMED = {
    "synthesize data {}": (wyoming_header(type="synthesize", data={}), True),
    "text a number": (wyoming_header(type="synthesize", data={"text": 5}), True),
    "text a list": (wyoming_header(type="synthesize", data={"text": ["Hi."]}), True),
    "text an object": (wyoming_header(type="synthesize", data={"text": {"a": 1}}), True),
    "chunk text a number": (wyoming_header(type="synthesize-start") +
                            wyoming_header(type="synthesize-chunk", data={"text": 7}), True),
    "data a list": (wyoming_header(type="synthesize", data=["Hi."]), True),
    "data a string": (wyoming_header(type="synthesize", data="Hi."), True),
    "data part a list": (wyoming_header(type="synthesize", data_length=7) + b'["Hi."]', True),
    "data part not JSON": (wyoming_header(type="synthesize", data_length=9) + b"{not json", True),
    "no type": (wyoming_header(data={"text": "Hi."}), True),
    "type a number": (wyoming_header(type=5), True),
    "data_length -5": (wyoming_header(type="synthesize", data_length=-5), False),
    "data_length NaN": (b'{"type": "synthesize", "data_length": NaN}\n', False),
    "data_length a string": (wyoming_header(type="synthesize", data_length="5") + b'{"a":1}', False),
    "data_length a fraction": (wyoming_header(type="synthesize", data_length=2.5) + b"{}", False),
    "data_length 2**40": (wyoming_header(type="synthesize", data_length=2**40), False),
    "payload_length -1": (wyoming_header(type="audio-chunk", payload_length=-1), False),
    "header not JSON": (b"synthesize Hello\n", False),
    "header a list": (b'["synthesize"]\n', False),
    "header nested 60k deep": (b"[" * 60_000 + b"\n", False),
}


WYOMING_SPEAKERS = ["²", "٣", "-1", "4 2", "abc", "", "9" * 13, 42, ["1"], {"seed": 1}]


WYOMING_DESCRIBE = b'{"type": "describe"}\n'


def wyoming_exchange(port: int, raw: bytes, half_close: bool = False, timeout: float = 120) -> list[dict]:
    """Send ``raw`` on a fresh connection (then ``describe``, or with ``half_close`` a shutdown of the writing
    side), and read events (``{"type", "data", "payload"}``) until the server closes or answers info / audio-stop."""
    events = []
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(raw)
        if half_close:
            sock.shutdown(socket.SHUT_WR)
        else:
            sock.sendall(WYOMING_DESCRIBE)
        stream = sock.makefile("rb")
        with contextlib.suppress(OSError, ValueError):
            while line := stream.readline():
                head = json.loads(line)
                data = head.get("data") or {}
                if head.get("data_length"):
                    data.update(json.loads(stream.read(head["data_length"])))
                payload = stream.read(head["payload_length"]) if head.get("payload_length") else b""
                events.append({"type": head.get("type"), "data": data, "payload": payload})
                if head.get("type") in ("info", "audio-stop"):
                    break
    return events


def wyoming_case(server: Server, port: int, raw: bytes) -> tuple[str, str]:
    """One malformed event: held when the first answer is an error event with a code other than
    internal_error and the server's log gained no traceback."""
    logged = len(server.log_tail(10**9))
    events = wyoming_exchange(port, raw)
    time.sleep(0.2)   # the server's log line, if any, is written
    added = server.log_tail(10**9)[logged:]
    first = events[0] if events else {"type": "nothing", "data": {}}
    code = first["data"].get("code")
    held = first["type"] == "error" and code not in (None, "internal_error") and "Traceback" not in added
    lines = len([line for line in added.splitlines() if line.strip()])
    return ("held" if held else "broke"), f"{first['type']} {code or ''}: {str(first['data'].get('text', ''))[:100]}; " \
        f"then {[e['type'] for e in events[1:]]}; {lines} log lines"


def run(probe: Probe) -> None:
    port = free_port()
    args = [part for part in probe.shared_args if part not in ("--shared",)] + \
        ["--wyoming-uri", f"tcp://127.0.0.1:{port}"]
    server = Server(probe.repo, probe.python, probe.work / "wyoming", args, "wyoming")
    server.start()
    try:
        for name, (raw, _) in WYOMING_MALFORMED.items():
            probe.guarded(server, 16, f"Wyoming: {name}",
                         "an error event whose code is not internal_error; no traceback in the log",
                         lambda raw=raw: wyoming_case(server, port, raw))
        for speaker in WYOMING_SPEAKERS:
            raw = wyoming_header(type="synthesize", data={"text": "Hello.", "voice": {"speaker": speaker}})
            probe.guarded(server, 16, f"Wyoming: voice.speaker {speaker!r}",
                         "an error event whose code is not internal_error; no traceback in the log",
                         lambda raw=raw: wyoming_case(server, port, raw))

        def half_close() -> tuple[str, str]:
            raw = wyoming_header(type="synthesize", data={"text": "Hello there.", "seed": 1})
            kinds = [e["type"] for e in wyoming_exchange(port, raw, half_close=True)]
            held = "audio-start" in kinds and "audio-chunk" in kinds and "audio-stop" in kinds
            return ("held" if held else "broke"), f"events: {', '.join(dict.fromkeys(kinds)) or 'none'}"
        probe.guarded(server, 16, "Wyoming: synthesize, then shutdown(SHUT_WR), then read",
                     "the audio comes (audio-start, audio-chunk, audio-stop)", half_close)
    finally:
        server.stop()
