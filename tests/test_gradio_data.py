"""Malformed Gradio API data is a 4xx with a message, never Gradio's bare 500 (issue 43 item 7).

A small Blocks with the app's middleware (``ui.gradio_data.GradioDataCheck``) on a real Gradio server: an
endpoint given fewer values than inputs made Gradio answer 500 ``{"error": null}``."""

from __future__ import annotations

import httpx
import pytest


@pytest.fixture(scope="module")
def server():
    import gradio as gr
    from starlette.middleware import Middleware

    from omnivoice_demo.ui.gradio_data import GradioDataCheck
    from tests.support.app_server import free_port

    with gr.Blocks() as demo:
        text, number = gr.Textbox(label="text"), gr.Number(label="seed")
        gr.Button(visible=False).click(lambda t, n: f"{t} {n}", inputs=[text, number], outputs=gr.Textbox(),
                                       api_name="speak")
    port = free_port()
    demo.launch(prevent_thread_lock=True, server_port=port, quiet=True,
                app_kwargs={"middleware": [Middleware(GradioDataCheck)]})
    yield f"http://127.0.0.1:{port}/gradio_api/"
    demo.close()


@pytest.mark.parametrize("route", ["run", "call"])
def test_too_few_values_is_a_400_naming_the_inputs(server, route):
    answer = httpx.post(server + f"{route}/speak", json={"data": []}, timeout=30)
    assert answer.status_code == 400, answer.text
    assert "/speak takes 2 values in data (text, seed); got 0" in answer.json()["error"]


def test_other_malformed_bodies_stay_4xx_and_a_good_call_passes_unchanged(server):
    assert httpx.post(server + "run/speak", content=b"not json", timeout=30).status_code == 422
    assert httpx.post(server + "run/speak", json={"data": "x"}, timeout=30).status_code == 422
    good = httpx.post(server + "run/speak", json={"data": ["hi", 3]}, timeout=30)
    assert good.status_code == 200 and good.json()["data"] == ["hi 3"]
