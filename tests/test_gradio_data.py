"""Malformed bodies on Gradio's own routes are a 4xx with a message, never a 500 nor the body quoted back
(issue 43 item 7, issue 49 item 8), and every route's body is capped as it arrives.

A small Blocks with the app's middleware (``api.body_cap.BodyCap`` in front, ``ui.gradio_data.GradioDataCheck``)
and its 422 handler (``ui.gradio_data.validation_answer``) on a real Gradio server, as ``app.py`` installs them."""

from __future__ import annotations

import json
import socket

import httpx
import pytest

CAP = 256 * 1024
UPLOAD_CAP = 2 * 2**20


@pytest.fixture(scope="module")
def server():
    import gradio as gr
    from fastapi.exceptions import RequestValidationError
    from starlette.middleware import Middleware

    from omnivoice_demo.api.body_cap import BodyCap
    from omnivoice_demo.ui.gradio_data import GradioDataCheck, validation_answer
    from tests.support.app_server import free_port

    def speak(text, n):
        return f"{text} {n}"

    with gr.Blocks() as demo:
        text, number = gr.Textbox(label="text"), gr.Number(label="seed")
        gr.Button(visible=False).click(speak, inputs=[text, number], outputs=gr.Textbox(), api_name="speak")
    port = free_port()
    middleware = [Middleware(BodyCap, default=CAP, uploads={"/gradio_api/upload": UPLOAD_CAP}),
                  Middleware(GradioDataCheck)]
    demo.launch(prevent_thread_lock=True, server_port=port, quiet=True,
                app_kwargs={"middleware": middleware, "exception_handlers": {RequestValidationError: validation_answer}})
    yield f"http://127.0.0.1:{port}/gradio_api/"
    demo.close()


def message(answer: httpx.Response) -> str:
    return answer.json()["error"]


@pytest.mark.parametrize("route", ["run", "call"])
def test_too_few_values_is_a_400_naming_the_inputs(server, route):
    answer = httpx.post(server + f"{route}/speak", json={"data": []}, timeout=30)
    assert answer.status_code == 400, answer.text
    assert "/speak takes 2 values in data (text, seed); got 0" in message(answer)


def test_other_malformed_bodies_stay_4xx_and_a_good_call_passes_unchanged(server):
    answer = httpx.post(server + "run/speak", content=b"not json", timeout=30)
    assert answer.status_code == 400 and "not valid JSON" in message(answer)
    assert httpx.post(server + "run/speak", json={"data": "x"}, timeout=30).status_code == 422
    good = httpx.post(server + "run/speak", json={"data": ["hi", 3]}, timeout=30)
    assert good.status_code == 200 and good.json()["data"] == ["hi 3"]


ROUTES = ["queue/join", "run/speak", "api/speak", "call/speak", "call/v2/speak", "cancel", "reset", "run/predict",
          "component_server"]


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_nan_or_infinity_in_a_body_is_a_400_on_every_route(server, route, constant):
    """Issue 49: Python read them and no answer could carry them back: 500 on 8 routes."""
    body = f'{{"data": ["hi", {constant}], "fn_index": 0, "session_hash": "s", "event_id": "e", "text": {constant}}}'
    answer = httpx.post(server + route, content=body, headers={"Content-Type": "application/json"}, timeout=30)
    assert answer.status_code == 400, (route, answer.status_code, answer.text[:300])
    assert f"holds {constant}, which is not a JSON number" in message(answer)


@pytest.mark.parametrize("body, status, words", [
    ({"text": "hi", "bogus": 1}, 400, 'has no parameter "bogus"; its parameters are text, n'),
    ({}, 400, "/call/v2/speak needs text, n"),
    ({"n": 3}, 400, "needs text"),
    ([1, 2], 400, "takes a JSON object of its parameters by name"),
    ('{"text": "a", "text": "b", "n": 1}', 400, 'gives the field "text" twice'),
])
def test_call_v2_with_wrong_missing_extra_or_duplicate_fields_is_a_400(server, body, status, words):
    """Issue 49: Gradio's construct_args raised a TypeError on each of them: a 500."""
    content = body if isinstance(body, str) else json.dumps(body)
    answer = httpx.post(server + "call/v2/speak", content=content, headers={"Content-Type": "application/json"},
                        timeout=30)
    assert answer.status_code == status and words in message(answer), answer.text[:300]


def test_call_v2_and_run_name_no_endpoint_or_function_with_a_4xx(server):
    answer = httpx.post(server + "call/v2/nothing", json={}, timeout=30)
    assert answer.status_code == 404 and "no endpoint /nothing; its endpoints are /speak" in message(answer)
    assert httpx.post(server + "run/nothing", json={"data": []}, timeout=30).status_code == 404
    answer = httpx.post(server + "run/predict", json={"data": [], "fn_index": 99}, timeout=30)
    assert answer.status_code == 400 and "fn_index 99 names no function" in message(answer)
    good = httpx.post(server + "call/v2/speak", json={"text": "hi", "n": 2}, timeout=30)
    assert good.status_code == 200 and "event_id" in good.json(), good.text


def test_a_422_names_the_fields_and_never_quotes_the_body(server):
    """Issue 49: FastAPI's 422 quoted the refused body whole (a 50 MB body came back)."""
    planted = "PLANTED" * 20000   # 140 kB, under the cap
    answer = httpx.post(server + "queue/join", json={"data": planted, "fn_index": planted[:5000]}, timeout=30)
    assert answer.status_code == 422 and len(answer.content) < 2000, len(answer.content)
    assert "PLANTED" not in answer.text and "data: Input should be a valid list" in message(answer)


def raw(server: str, path: str, headers: dict, pieces) -> tuple[int, int, str]:
    """POST ``pieces`` on a socket until the server answers: (status, bytes sent, body)."""
    import select

    port = int(server.split(":")[2].split("/")[0])
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    head = f"POST /gradio_api/{path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n" + \
        "".join(f"{k}: {v}\r\n" for k, v in headers.items()) + "\r\n"
    sock.sendall(head.encode())
    sent = 0
    try:
        for piece in pieces:
            if select.select([sock], [], [], 0)[0]:
                break
            sock.sendall(piece)
            sent += len(piece)
    except OSError:
        pass
    reply = b""
    try:
        while chunk := sock.recv(65536):
            reply += chunk
    except OSError:
        pass
    sock.close()
    return int(reply.split(b" ", 2)[1]), sent, reply.split(b"\r\n\r\n", 1)[-1].decode(errors="replace")


@pytest.mark.parametrize("form", ["Content-Length", "chunked"])
@pytest.mark.parametrize("path", ["queue/join", "run/speak", "upload"])
def test_every_route_has_a_body_cap_counted_as_the_body_arrives(server, form, path):
    """Issue 49: a 300 MB body to /gradio_api/queue/join was read whole.  Here 64 MB: the 413 comes before its
    end, whether the length is declared or the body is chunked, and names the route's cap."""
    mb = 2**20
    pieces = [b'{"data": ["'] + [b"a" * mb] * 64 + [b'"]}']
    size = sum(map(len, pieces))
    headers = {"Content-Type": "application/json"}
    if form == "chunked":
        headers["Transfer-Encoding"] = "chunked"
        pieces = [f"{len(p):x}\r\n".encode() + p + b"\r\n" for p in pieces] + [b"0\r\n\r\n"]
    else:
        headers["Content-Length"] = str(size)
    status, sent, body = raw(server, path, headers, pieces)
    cap = UPLOAD_CAP if path == "upload" else CAP
    assert status == 413 and sent < size / 2, (status, sent)
    assert f"at most {cap / mb:.1f} MB on this route" in json.loads(body)["error"]["message"]


def test_the_cap_lets_a_body_under_it_through_whole(server):
    text = "b" * (CAP - 200)
    answer = httpx.post(server + "run/speak", json={"data": [text, 1]}, timeout=30)
    assert answer.status_code == 200 and answer.json()["data"] == [f"{text} 1"]
