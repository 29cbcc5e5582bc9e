"""Family 37 of the hardening probe (issue 49, item 8):
bodies on Gradio's own routes: size caps counted as the body arrives, NaN, /call/v2's fields, no echo."""

from __future__ import annotations

import json

import httpx

from ..probe import Probe
from ..server import MB, PeakRSS, Server
from ..visitor import framed, raw_post

FAMILY = 37
WHAT = "bodies on Gradio's own routes: caps as they arrive, NaN, /call/v2 fields, 422 without the body"
#: run on the shared server (``run(probe, server)``)
SHARED = True

#: the routes that answered NaN with a 500 (issue 49), and their neighbours
NAN_ROUTES = ["gradio_api/queue/join", "gradio_api/run/speak", "gradio_api/api/speak", "gradio_api/call/speak",
              "gradio_api/call/v2/speak", "gradio_api/cancel", "gradio_api/reset", "gradio_api/run/predict",
              "gradio_api/component_server", "login", "v1/audio/speech"]
#: /call/v2/speak bodies that Gradio's construct_args answered with a 500
V2_BODIES = {"a wrong field": {"text": "Hi.", "not_a_field": 1}, "no field": {}, "a missing text": {"voice": "alloy"},
             "a list": [1, 2], "a field twice": '{"text": "Hi.", "text": "Bye."}',
             "an extra field beside a good call": {"text": "Hi.", "num_step": 1, "session_hash": "x"}}


def gradio_answer_ok(response: httpx.Response) -> bool:
    """A 4xx with a message, no traceback, short (a refusal never quotes a large body)."""
    text = response.text
    return 400 <= response.status_code < 500 and len(response.content) < 8192 and "Traceback" not in text \
        and bool(text.strip())


def run(probe: Probe, server: Server) -> None:
    for path, total, form in [("gradio_api/queue/join", 100 * MB, "Content-Length"),
                              ("gradio_api/queue/join", 100 * MB, "chunked"),
                              ("gradio_api/run/speak", 50 * MB, "Content-Length"),
                              ("login", 50 * MB, "chunked"),
                              ("gradio_api/upload", 100 * MB, "Content-Length"),
                              ("gradio_api/call/v2/speak", 30 * MB, "chunked")]:
        def check(path=path, total=total, form=form) -> tuple[str, str]:
            pieces = [b'{"data": ["'] + [b"a" * MB] * (total // MB) + [b'"], "fn_index": 0, "session_hash": "x"}']
            size = sum(len(p) for p in pieces)
            headers = {"Content-Type": "application/json"}
            body = framed(pieces, form, headers)
            with PeakRSS(server) as rss:
                answer = raw_post(server, path, headers, body)
            held = answer["status"] == 413 and rss.grew_mb < 40 and answer["sent"] < size and \
                len(answer["body"]) < 400 and "aaaa" not in answer["body"]
            return ("held" if held else "broke"), \
                f"{answer['status']} after {answer['sent'] / MB:.0f} MB sent, {answer['seconds']:.1f} s; {rss}"
        probe.guarded(server, FAMILY, f"a {total // MB} MB body to /{path} ({form})",
                      "413 before the body is read whole (the answer before its end), RSS grows < 40 MB, no echo",
                      check)

    def echo() -> tuple[str, str]:
        planted = "ECHO" * (1_500_000)   # 6 MB, under the cap, of the wrong shape
        response = httpx.post(server.url + "gradio_api/queue/join", timeout=60,
                              content=json.dumps({"data": planted, "fn_index": planted[:1000]}),
                              headers={"Content-Type": "application/json"})
        held = gradio_answer_ok(response) and "ECHOECHO" not in response.text
        return ("held" if held else "broke"), f"{response.status_code}, {len(response.content)} bytes: " \
                                              f"{response.text[:160]}"
    probe.guarded(server, FAMILY, "a 6 MB body of the wrong shape to /gradio_api/queue/join",
                  "a 4xx under 8 KB that does not quote the body (was the body whole in the 422)", echo)

    for path in NAN_ROUTES:
        for constant in ("NaN", "-Infinity"):
            def nan(path=path, constant=constant) -> tuple[str, str]:
                body = (f'{{"data": ["Hi.", {constant}], "fn_index": 0, "session_hash": "s", "event_id": "e", '
                        f'"text": {constant}, "input": "Hi.", "speed": {constant}}}')
                response = httpx.post(server.url + path, content=body, timeout=60, headers={
                    "Content-Type": "application/json", "Authorization": "Bearer probe-key"})
                return ("held" if gradio_answer_ok(response) else "broke"), \
                    f"{response.status_code}: {response.text[:160]}"
            probe.guarded(server, FAMILY, f"{constant} in a JSON body to /{path}", "a 4xx with a message (was a 500)",
                          nan)

    for name, body in V2_BODIES.items():
        def v2(body=body) -> tuple[str, str]:
            content = body if isinstance(body, str) else json.dumps(body)
            response = httpx.post(server.url + "gradio_api/call/v2/speak", content=content, timeout=60,
                                  headers={"Content-Type": "application/json"})
            return ("held" if gradio_answer_ok(response) else "broke"), \
                f"{response.status_code}: {response.text[:160]}"
        probe.guarded(server, FAMILY, f"/gradio_api/call/v2/speak with {name}", "a 4xx naming the fields (was a 500)",
                      v2)

    def unknown() -> tuple[str, str]:
        answers = [httpx.post(server.url + path, json=body, timeout=60) for path, body in (
            ("gradio_api/call/v2/no_such_endpoint", {}), ("gradio_api/run/no_such_endpoint", {"data": []}),
            ("gradio_api/run/predict", {"data": [], "fn_index": 100000}))]
        held = all(gradio_answer_ok(a) for a in answers)
        return ("held" if held else "broke"), "; ".join(f"{a.status_code}" for a in answers)
    probe.guarded(server, FAMILY, "calls of no endpoint and of an fn_index that is none", "4xx each, not a 500",
                  unknown)
