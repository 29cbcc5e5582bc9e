"""The engine's error family: what went wrong, and whose move it is.

* ``InvalidInput``      the request is wrong (text, settings, audio, a voice file):
                        shown to the user as such; also a ``ValueError``.
* ``ModelFolderError``  a model folder's file is missing or corrupt: the message names it.
* ``ModelNotAvailable`` no model can be had (offline and never downloaded, Hub error,
                        a missing extra): the message says what to download or install.

Every entry point (app, Gradio API, HTTP API, CLI) maps these to a clear
message; any other exception is an internal error, logged with its traceback
and shown only as "internal error".
"""

from __future__ import annotations


class OmniVoiceError(Exception):
    """Base of every error the engine raises on purpose."""


class InvalidInput(OmniVoiceError, ValueError):
    """The request is wrong; the message says which part and what to do."""

    def __init__(self, message: str, param: str | None = None):
        super().__init__(message)
        self.param = param


class ModelFolderError(OmniVoiceError):
    """A model folder is unusable: a file is missing, corrupt or of the wrong kind (named in the message)."""


class ModelNotAvailable(OmniVoiceError):
    """No model could be had from the source asked for (offline, Hub failure, a missing extra)."""


class ResourceLimitExceeded(InvalidInput):
    """The request is over a server limit (text, audio, frames, bytes); the message names the limit."""


class Busy(OmniVoiceError):
    """The server is at its concurrency limit; try again later."""


def one_line(exc: BaseException) -> str:
    """The first paragraph of an error's message, for a single-line display (CLI, API)."""
    text = str(exc).strip() or type(exc).__name__
    return " ".join(text.split("\n\n")[0].split())


#: the most characters of a visitor's input an error message repeats
EXCERPT_CHARS = 60


def excerpt(value, limit: int = EXCERPT_CHARS) -> str:
    """``value`` as an error message repeats it: its ``repr``, cut to about ``limit`` characters with the
    length it had, so a 100,000-character name does not come back as a 100 KB message."""
    text = value if isinstance(value, str) else repr(value)
    if len(text) <= limit:
        return repr(value)
    return f"{text[:limit]!r}... ({len(text):,} characters)"

def check_unicode(text: str, what: str) -> str:
    """``text`` unchanged, or ``InvalidInput`` when it holds a lone surrogate (it cannot be encoded as UTF-8).

    The message gives the position, never the text itself (which no response or log could encode)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInput(f"{what} holds a character that is not valid Unicode (a lone surrogate, at position "
                           f"{exc.start}); send the text as UTF-8.") from None
    return text
