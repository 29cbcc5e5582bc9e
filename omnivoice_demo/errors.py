"""The engine's error family: what went wrong, and whose move it is.

* ``InvalidInput``      the request is wrong (text, settings, audio, a voice file):
                        shown to the user as such; also a ``ValueError``.
* ``ModelFolderError``  a model folder's file is missing or corrupt: the message names it.
* ``ModelNotAvailable`` no model can be had (offline and never downloaded, Hub error,
                        a missing extra): the message says what to download or install.

Every entry point (app, Gradio API, HTTP API, CLI) says these through one mapping, ``refusal_of(exc)``: the HTTP
status, OpenAI type and code, the page's title and the command line's exit status of each class, with its one-line
message; any other exception is an internal error, logged with its traceback and shown only as "internal error".
``reworded(exc, message)`` is the same error said otherwise (a command line's flag before it), whatever its class's
constructor takes.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from typing import Optional


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
    """The server is at its concurrency limit; try again later.  ``retry_after``: the whole seconds the message
    names (None: it says "shortly"), so an answer's ``Retry-After`` says what its message says (issue 49)."""

    def __init__(self, message: str, retry_after: Optional[int] = None):
        super().__init__(message)
        self.retry_after = retry_after


class StoreUnavailable(OmniVoiceError):
    """The saved voices' store (a database) cannot be reached or used now.  The message names it and why (its host,
    user and database, the driver's reason: never its password), for its operator: the command line says it, a
    server logs it.  A server says ``PUBLIC`` to its visitors instead (the HTTP API, the page, ``/ready``): a
    stranger learns that saved voices are down, not where the database lives."""

    PUBLIC = ("The voice store cannot be used now: saved voices are unavailable until its database answers. "
              "Try again shortly; the built-in voices still work.")


class StorageNotWritable(OmniVoiceError):
    """A folder the server keeps files in cannot be written now: its disk is full or over quota (``full``), or it
    is read-only.  Nothing was changed; the message says what the server's operator can do.  Not the request's
    fault, never an internal error: the HTTP API answers 507 (full) or 403 (read-only)."""

    def __init__(self, message: str, full: bool = False):
        super().__init__(message)
        self.full = full


def reworded(exc: OmniVoiceError, message: str) -> OmniVoiceError:
    """``exc`` with ``message`` instead of its own: the same class and attributes (``param``, ``line``, ``full``,
    ...), made without calling its constructor, whose arguments differ by class (``SsmlError`` takes a line and
    a column, ``BatchInputError`` its rows' problems; issue 58: a flag put before an ``SsmlError``'s message
    ended in a ``TypeError``).  Raise it ``from exc``."""
    kind = type(exc)
    copy = kind.__new__(kind)
    copy.__dict__.update(exc.__dict__)
    copy.args = (message,)
    return copy


@dataclasses.dataclass(frozen=True)
class Refusal:
    """How every front end says one of our errors: the command line's ``error: message`` line and exit status,
    the HTTP API's status and OpenAI error fields (``headers``: e.g. ``Retry-After``), the page's title."""

    message: str                 # one line (``one_line``)
    status: int                  # the HTTP status: 4xx where the request (or a limit) is at fault
    type: str                    # OpenAI's error type
    code: str                    # OpenAI's error code
    param: Optional[str] = None  # the request's field at fault, where known
    title: Optional[str] = None  # the page's error title (None: Gradio's own, "Error")
    exit_status: int = 2         # the command line's
    public: Optional[str] = None  # what a server says to its visitors where ``message`` is for the operator (logged)
    headers: tuple = ()          # (name, value) pairs of the HTTP answer


#: a 429's Retry-After when its message says "shortly" (no estimate of the wait)
RETRY_SHORTLY = 5


def refusal_of(exc: BaseException) -> Optional[Refusal]:
    """The one mapping of our errors to each front end's (``Refusal``); None for anything else (an internal
    error: the front end logs it and says only that).  Input errors (``InvalidInput`` and every subclass, in
    whichever module it is defined) are 4xx: 413 over a limit, else 400."""
    if not isinstance(exc, OmniVoiceError):
        return None
    line, param = one_line(exc), getattr(exc, "param", None)
    if isinstance(exc, Busy):
        retry = exc.retry_after if exc.retry_after else RETRY_SHORTLY   # what the message says, in whole seconds
        return Refusal(line, 429, "rate_limit_error", "busy", headers=(("Retry-After", str(retry)),))
    if isinstance(exc, ResourceLimitExceeded):
        return Refusal(line, 413, "invalid_request_error", "limit_exceeded", param)
    if isinstance(exc, InvalidInput):
        return Refusal(line, 400, "invalid_request_error", "invalid_value", param)
    if isinstance(exc, (ModelNotAvailable, ModelFolderError)):
        return Refusal(line, 503, "server_error", "model_not_ready",
                       title="Model not available" if isinstance(exc, ModelNotAvailable) else None)
    if isinstance(exc, StoreUnavailable):   # the voices' database is down: the server is not at fault for long
        return Refusal(line, 503, "server_error", "voice_store_unavailable",
                       headers=(("Retry-After", "5"),), public=StoreUnavailable.PUBLIC)
    if isinstance(exc, StorageNotWritable):   # the server's folder, not the request: 507 when full, else 403
        return Refusal(line, 507 if exc.full else 403, "server_error" if exc.full else "permission_error",
                       "storage_full" if exc.full else "storage_read_only")
    return Refusal(line, 400, "invalid_request_error", "invalid_value", param)


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


#: the special tokens of OmniVoice's text tokenizer (Qwen3's and OmniVoice's own prompt markers), as its
#: ``tokenizer.json`` marks them ``special``; an engine adds its own tokenizer's (``special_tokens``).  Written in
#: user text they would be encoded as the real markers: a second ``<|text_end|>`` or ``<|instruct_start|>``
#: inside the text sets another language or voice description from inside it (issue 43).
CONTROL_TOKENS = frozenset({
    "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>", "<|object_ref_end|>", "<|box_start|>",
    "<|box_end|>", "<|quad_start|>", "<|quad_end|>", "<|vision_start|>", "<|vision_end|>", "<|vision_pad|>",
    "<|image_pad|>", "<|video_pad|>", "<|denoise|>", "<|lang_start|>", "<|lang_end|>", "<|instruct_start|>",
    "<|instruct_end|>", "<|text_start|>", "<|text_end|>",
})


@functools.lru_cache(maxsize=8)
def _token_pattern(tokens: frozenset) -> "re.Pattern":
    return re.compile("|".join(re.escape(t) for t in sorted(tokens, key=len, reverse=True)))


#: what the prompt builder deletes from every text before it is tokenised (``text.prompt.combine_text``, the
#: reference's ``_combine_text``): line breaks.  A control token split by one (``<|text_\nend|>``) is whole again
#: in the prompt, so the check reads the text as the prompt will (issue 49).
PROMPT_DELETES = re.compile(r"[\r\n]+")


def check_control_tokens(text: Optional[str], where: str, tokens: frozenset = CONTROL_TOKENS) -> Optional[str]:
    """``text`` unchanged, or ``InvalidInput`` naming the first control token in it and ``where`` it was.

    The text is read as written and as the prompt builder reads it (``PROMPT_DELETES`` removed), so a token
    split by a line break is found too.  Regular-expression searches (no tokenising), so every text can be
    checked before any work; a text without a control token is returned as it is, so the exact path does not
    change.  ``text.prompt.build_condition_ids`` checks the token ids it builds as well, the last word."""
    if not text or not isinstance(text, str):
        return text
    pattern = _token_pattern(tokens)
    found = pattern.search(text)
    if found is not None:
        raise InvalidInput(f"{where} holds the model's control token {found.group()} (at character {found.start()}); "
                           "control tokens cannot be spoken or written into the prompt: remove it.",
                           param="control_token")
    joined = PROMPT_DELETES.sub("", text)
    found = pattern.search(joined) if len(joined) != len(text) else None
    if found is not None:
        raise InvalidInput(f"{where} holds the model's control token {found.group()} once its line breaks are "
                           "removed, as the prompt is built; control tokens cannot be spoken or written into the "
                           "prompt: remove it.", param="control_token")
    return text
