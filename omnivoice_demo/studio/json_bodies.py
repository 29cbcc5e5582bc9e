"""A request's JSON body read strictly, for every front end that takes one (the HTTP API, Gradio's routes).

Python's ``json`` reads more than JSON (RFC 8259): ``NaN``, ``Infinity`` and ``-Infinity`` become floats that no
answer can carry back (Starlette's ``JSONResponse`` refuses them: a 500 on 8 of Gradio's routes, issue 49), and an
object with a key twice keeps the last silently.  ``loads`` reads with the standard library's own hooks and
refuses both, with what to send instead; nothing of the body is quoted back.
"""

from __future__ import annotations

import json

from ..errors import InvalidInput


def _no_constant(name: str):
    raise InvalidInput(f"The request body holds {name}, which is not a JSON number: send a finite number "
                       "(or leave the field out).")


def _one_of_each(pairs):
    keys = [key for key, _ in pairs]
    if len(set(keys)) != len(keys):
        twice = next(key for key in keys if keys.count(key) > 1)
        raise InvalidInput(f"The request body gives the field {json.dumps(twice[:40])} twice: send each field once.")
    return dict(pairs)


def loads(body, example: str = ""):
    """``body`` (bytes or text) as strict JSON; ``InvalidInput`` (a 400) when it is not JSON, holds a non-finite
    number or a key twice, or is nested too deeply to read."""
    try:
        return json.loads(body, parse_constant=_no_constant, object_pairs_hook=_one_of_each)
    except InvalidInput:
        raise
    except (ValueError, RecursionError) as exc:
        reason = "nested too deeply" if isinstance(exc, RecursionError) else "not valid JSON"
        raise InvalidInput(f"The request body is {reason}{'; send ' + example if example else ''}.") from None
