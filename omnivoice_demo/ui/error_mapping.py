"""Exceptions -> what the page shows.

* ``OmniVoiceError`` (``InvalidInput``, ``ModelFolderError``, ``ModelNotAvailable``, ...): raised on
  purpose with a message that says what to do; shown as a ``gr.Error`` with that message.
* anything else is a bug of ours, not the user's mistake: logged with its traceback and shown
  as "Internal error" (the details stay in the server log).

Wrap every handler that runs on a button with ``@ui_errors`` (generators too).
"""

from __future__ import annotations

import contextlib
import functools
import html
import inspect
import logging

import gradio as gr

from ..errors import ModelNotAvailable, OmniVoiceError

log = logging.getLogger(__name__)


#: Applied to every message shown (shared mode sets it to remove server paths: ``set_message_filter``).
_message_filter = None


def set_message_filter(function) -> None:
    """Pass every message the page shows through ``function`` (None: unchanged)."""
    global _message_filter
    _message_filter = function


def filtered(text: object) -> str:
    """``text`` through the message filter (shared mode: no server paths), not escaped (for API clients)."""
    return str(text) if _message_filter is None else _message_filter(str(text))


def user_message(text: object) -> str:
    """A message for gr.Error / gr.Warning (which render HTML): escaped, line breaks kept."""
    text = str(text) if _message_filter is None else _message_filter(str(text))
    return html.escape(text, quote=False).replace("\n", "<br>")


def ui_error(exc: BaseException) -> gr.Error:
    """The ``gr.Error`` that shows ``exc``: its message for our errors, "Internal error" for anything else."""
    if isinstance(exc, gr.Error):
        return exc
    if isinstance(exc, ModelNotAvailable):
        return gr.Error(user_message(exc), title="Model not available", print_exception=False)
    if isinstance(exc, OmniVoiceError):
        return gr.Error(user_message(exc), print_exception=False)
    log.error("internal error in a handler", exc_info=exc)
    return gr.Error(user_message(f"Internal error ({type(exc).__name__}). This is a bug of the app, not a problem "
                                 "with your input; the app is still running and the details are in the server "
                                 "log."), title="Internal error", print_exception=False)


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


#: handlers' errors as ``ui_error``: our errors' messages, "Internal error" for anything else
ui_errors = errors_as(ui_error)
