"""Shared mode shows no server path, Gradio's file cache included (issue 49, item 11).

Gradio answers every file an event returns (the audio of ``/speak``, an upload) with its place in Gradio's file
cache on the server: ``{"path": "/tmp/.../gradio/<hash>/speech.wav", "url": ".../gradio_api/file=/tmp/..."}``, and
its page and clients send the path back.  So in shared mode ``HiddenPaths`` (an ASGI middleware of the app, in
front of the owner check) stands between the visitor and Gradio with one fixed alias (``ALIAS``) for the cache's
folder:

* every answer of a Gradio route that is JSON or an event stream (``/config``, ``/upload``, ``/queue/data``, the
  ``/call`` and ``/run`` results) has the folder written as the alias, as it is and URL-quoted (a ``Content-Length``
  set again for the shorter body);
* a request's file route (``/gradio_api/file=<alias>/...``) and a JSON body sent to a Gradio route have the alias
  written back as the folder before Gradio (and the owner check) read them.

The HTTP API's routes (``/v1``, ``/dev``) answer with audio and no file paths; they pass untouched.
"""

from __future__ import annotations

import urllib.parse

#: what a visitor sees instead of the folder of Gradio's file cache
ALIAS = "/gradio-cache"
#: the answers that may name a file: JSON and Gradio's event streams
REWRITTEN_TYPES = (b"application/json", b"text/event-stream")
NOT_GRADIO = ("/v1/", "/dev/")


class HiddenPaths:
    def __init__(self, app, folder: str, alias: str = ALIAS):
        self.app = app
        folder = str(folder).rstrip("/")
        self.forms = [(folder.encode(), alias.encode())]
        quoted = urllib.parse.quote(folder, safe="/")
        if quoted != folder:
            self.forms.append((quoted.encode(), urllib.parse.quote(alias, safe="/").encode()))
        self.folder, self.alias = folder, alias

    def hide(self, data: bytes) -> bytes:
        for real, alias in self.forms:
            data = data.replace(real, alias)
        return data

    def reveal(self, data: bytes) -> bytes:
        for real, alias in self.forms:
            data = data.replace(alias + b"/", real + b"/")
        return data

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope.get("path", "").startswith(NOT_GRADIO):
            return await self.app(scope, receive, send)
        path = scope.get("path", "")
        if self.alias + "/" in path:   # a file route naming the alias: the real folder for Gradio
            revealed = path.replace(self.alias + "/", self.folder + "/")
            scope = dict(scope, path=revealed, raw_path=urllib.parse.quote(revealed, safe="/=").encode())
        if scope.get("method") == "POST" and _is_json(scope.get("headers", ())):
            receive = await self._revealed_body(receive)
        await self.app(scope, receive, self._hiding(send))

    async def _revealed_body(self, receive):
        """The request's JSON body whole (the server's BodyCap bounds it), the alias written back as the folder."""
        messages, parts = [], []
        while True:
            message = await receive()
            messages.append(message)
            parts.append(message.get("body", b""))
            if message["type"] != "http.request" or not message.get("more_body"):
                break
        if messages[-1]["type"] == "http.request":
            messages = [{"type": "http.request", "body": self.reveal(b"".join(parts)), "more_body": False}]

        async def replay():
            return messages.pop(0) if messages else await receive()
        return replay

    def _hiding(self, send):
        state = {"rewrite": False, "start": None, "parts": []}

        async def hiding(message):
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", ()))
                kind = next((v for k, v in headers if k.lower() == b"content-type"), b"")
                state["rewrite"] = kind.split(b";")[0].strip().lower() in REWRITTEN_TYPES
                sized = any(k.lower() == b"content-length" for k, _ in headers)
                if state["rewrite"] and sized:   # a sized answer: held until its end, then sized again
                    state["start"] = dict(message, headers=[(k, v) for k, v in headers
                                                            if k.lower() != b"content-length"])
                    return
                return await send(message)
            if message["type"] != "http.response.body" or not state["rewrite"]:
                return await send(message)
            if state["start"] is None:   # a stream: each piece as it comes (Gradio sends whole events)
                return await send(dict(message, body=self.hide(message.get("body", b""))))
            state["parts"].append(message.get("body", b""))
            if message.get("more_body"):
                return
            body = self.hide(b"".join(state["parts"]))
            start = state["start"]
            await send(dict(start, headers=[*start["headers"], (b"content-length", str(len(body)).encode())]))
            await send({"type": "http.response.body", "body": body})
        return hiding


def _is_json(headers) -> bool:
    kind = next((v for k, v in headers if k == b"content-type"), b"").split(b";")[0].strip().lower()
    return not kind or kind.endswith(b"/json") or kind.endswith(b"+json")
