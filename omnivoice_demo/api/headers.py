"""Every ``X-OmniVoice-*`` response header has a size cap; what a header cannot hold is kept for the client.

Headers that echo user input grow with it: 60 words of Hangul left out of a description made a 17.4 KB
``X-OmniVoice-Ignored`` (each character percent-encoded as 9 bytes), and Node's ``fetch`` (undici, under the
``openai`` package) fails a response whose headers pass 16 KB; common proxies drop headers over 8 KB.  The
audio was made and never reached the client (issue 43, item 3).

``cap_headers`` cuts each ``X-OmniVoice-*`` value to ``HEADER_CAP`` bytes, never inside a percent escape, and
ends it with a marker that says how long it was and where the whole is; ``DetailsStore`` keeps the whole
values of a response whose headers were cut, under a random token, for ``GET /v1/audio/speech/details/{token}``
(the ``X-OmniVoice-Details`` header gives that path; the SSE stream's ``speech.audio.done`` event carries them
too).  The store is bounded (the newest ``MAX_KEPT``) and lives in memory.
"""

from __future__ import annotations

import collections
import secrets
import threading
import urllib.parse
from typing import Optional

#: the most bytes one X-OmniVoice-* header value holds (its marker included)
HEADER_CAP = 1024
PREFIX = "x-omnivoice-"
DETAILS_PATH = "/v1/audio/speech/details/"
#: responses whose whole header values are kept
MAX_KEPT = 256


def _marker(length: int, where: str) -> str:
    return f"...[truncated: {length} bytes; whole value: {where}]"


def _cut(value: str, room: int) -> str:
    """``value`` (ASCII, percent-encoded UTF-8) cut to ``room`` characters, not inside an escape or a character."""
    cut = value[:max(0, room)]
    tail = cut[-2:]
    if "%" in tail:
        cut = cut[: len(cut) - (len(tail) - tail.index("%"))]
    for _ in range(4):   # nor inside a character of several UTF-8 bytes (each its own escape)
        try:
            urllib.parse.unquote(cut, errors="strict")
            break
        except UnicodeDecodeError:
            cut = cut[: cut.rfind("%")]
    return cut


def cap_headers(headers: dict, where: str = "the response body") -> tuple[dict, dict]:
    """(``headers`` with each ``X-OmniVoice-*`` value at most ``HEADER_CAP`` bytes, ``{name: whole value}`` of
    the values that were cut).  Other headers are left as they are."""
    capped, whole = {}, {}
    for name, value in headers.items():
        text = str(value)
        if name.lower().startswith(PREFIX) and len(text.encode("latin-1", "replace")) > HEADER_CAP:
            marker = _marker(len(text), where)
            capped[name] = _cut(text, HEADER_CAP - len(marker)) + marker
            whole[name] = text
        else:
            capped[name] = text
    return capped, whole


def readable(whole: dict) -> dict:
    """The whole values as text (the percent-encoding of headers undone), for a JSON body."""
    return {name: urllib.parse.unquote(value) for name, value in whole.items()}


class DetailsStore:
    """The whole header values of the newest ``MAX_KEPT`` responses whose headers were cut, by random token."""

    def __init__(self, max_kept: int = MAX_KEPT):
        self.max_kept = int(max_kept)
        self._kept: collections.OrderedDict[str, dict] = collections.OrderedDict()
        self._lock = threading.Lock()

    def keep(self, whole: dict, token: Optional[str] = None) -> str:
        token = token or secrets.token_urlsafe(16)
        with self._lock:
            self._kept[token] = readable(whole)
            while len(self._kept) > self.max_kept:
                self._kept.popitem(last=False)
        return token

    def get(self, token: str) -> Optional[dict]:
        with self._lock:
            return self._kept.get(token)


def capped_response_headers(headers: dict, store: DetailsStore) -> tuple[dict, dict]:
    """``cap_headers`` for a speech response: when a value is cut, its whole is kept in ``store`` and the
    ``X-OmniVoice-Details`` header (and each marker) points to ``GET /v1/audio/speech/details/{token}``.
    Returns (the headers to send, the whole values that were cut, readable; empty when none was)."""
    if not any(name.lower().startswith(PREFIX) and len(str(v)) > HEADER_CAP for name, v in headers.items()):
        return {name: str(value) for name, value in headers.items()}, {}
    token = secrets.token_urlsafe(16)
    capped, whole = cap_headers(headers, where="GET " + DETAILS_PATH + token)
    store.keep(whole, token)
    capped["X-OmniVoice-Details"] = DETAILS_PATH + token
    return capped, readable(whole)
