"""Exceptions -> what the page shows.

* ``OmniVoiceError`` (``InvalidInput``, ``ModelFolderError``, ``ModelNotAvailable``, ...): raised on
  purpose with a message that says what to do; shown as a ``gr.Error`` with that message and the title of
  ``errors.refusal_of``, the mapping the HTTP API and the command line share.
* anything else is a bug of ours, not the user's mistake: logged with its traceback and shown
  as "Internal error" (the details stay in the server log).

Wrap every handler that runs on a button with ``@ui_errors`` (generators too).
"""

from __future__ import annotations

import html
import logging

import gradio as gr

from ..errors import refusal_of
from ..studio.messages import INTERNAL_ERROR, errors_as, filtered

log = logging.getLogger(__name__)


def user_message(text: object) -> str:
    """A message for gr.Error / gr.Warning (which render HTML): escaped, line breaks kept."""
    return html.escape(filtered(text), quote=False).replace("\n", "<br>")


def ui_error(exc: BaseException) -> gr.Error:
    """The ``gr.Error`` that shows ``exc``: its message for our errors, "Internal error" for anything else."""
    if isinstance(exc, gr.Error):
        return exc
    said = refusal_of(exc)   # the one mapping of our errors (errors.refusal_of), shared with the HTTP API and the CLI
    if said is not None:   # the whole message (its later paragraphs too), as the page can show them
        if said.public is not None:   # the operator's detail (where the database is) goes to the log only
            log.warning("%s", said.message)
        return gr.Error(user_message(said.public or exc), title=said.title or "Error", print_exception=False)
    log.error("internal error in a handler", exc_info=exc)
    return gr.Error(user_message(INTERNAL_ERROR.format(name=type(exc).__name__)), title="Internal error",
                    print_exception=False)


#: handlers' errors as ``ui_error``: our errors' messages, "Internal error" for anything else
ui_errors = errors_as(ui_error)
