"""Exceptions -> the words a person reads, the same in every front end (UI, Gradio API, HTTP API, CLI).

* ``OmniVoiceError`` (``InvalidInput``, ``ModelFolderError``, ``ModelNotAvailable``, ...): raised on
  purpose with a message that says what to do; that message is shown.
* anything else is a bug of ours, not the user's mistake: logged with its traceback and shown as
  ``INTERNAL_ERROR`` (the details stay in the server log).

Shared mode sets a message filter (``set_message_filter``: no server paths) that every shown message
goes through.  ``errors_as`` wraps a handler so its errors come out as a front end's own kind.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import logging

from ..errors import OmniVoiceError, one_line, refusal_of

log = logging.getLogger(__name__)

INTERNAL_ERROR = ("Internal error ({name}). This is a bug of the app, not a problem with your input; the app is "
                  "still running and the details are in the server log.")

#: Applied to every message shown (shared mode sets it to remove server paths: ``set_message_filter``).
_message_filter = None


def set_message_filter(function) -> None:
    """Pass every message shown through ``function`` (None: unchanged)."""
    global _message_filter
    _message_filter = function


def filtered(text: object) -> str:
    """``text`` through the message filter (shared mode: no server paths), not escaped."""
    return str(text) if _message_filter is None else _message_filter(str(text))


def is_expected(exc: BaseException) -> bool:
    """Raised on purpose with a message for the user (else: a bug, logged)."""
    return isinstance(exc, OmniVoiceError)


def error_text(exc: BaseException, where: str = "a handler") -> str:
    """What a person reads for ``exc`` (filtered): our message, or the internal-error line (then logged).  An
    error with words for a server's visitors (``Refusal.public``: a voice store that is down) is said in them, its
    operator's detail logged."""
    said = refusal_of(exc)
    if said is not None and said.public is not None:
        log.warning("%s: %s", where, exc)
        return said.public
    if is_expected(exc):
        return filtered(str(exc).strip() or one_line(exc))
    log.error("internal error in %s", where, exc_info=exc)
    return filtered(INTERNAL_ERROR.format(name=type(exc).__name__))


def errors_as(convert):
    """A decorator raising every exception of a function (plain, async or generator) as ``convert(exc)``."""
    def decorate(fn):
        if inspect.isgeneratorfunction(fn):
            @functools.wraps(fn)
            def generator(*args, **kwargs):
                with contextlib.closing(fn(*args, **kwargs)) as inner:
                    try:
                        yield from inner
                    except Exception as exc:  # noqa: BLE001 - every error becomes a message
                        raise convert(exc) from None
            return generator
        if inspect.iscoroutinefunction(fn):
            @functools.wraps(fn)
            async def call_async(*args, **kwargs):
                try:
                    return await fn(*args, **kwargs)
                except Exception as exc:  # noqa: BLE001
                    raise convert(exc) from None
            return call_async

        @functools.wraps(fn)
        def plain(*args, **kwargs):
            try:
                return fn(*args, **kwargs)
            except Exception as exc:  # noqa: BLE001
                raise convert(exc) from None
        return plain
    return decorate
