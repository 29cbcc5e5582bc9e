"""Shared mode shows no server path, Gradio's file cache included (issue 49, item 11): ``/speak`` results carried
the path and URL of Gradio's cache folder.  A small Blocks behind the app's ``ui.hidden_paths.HiddenPaths`` on a
real Gradio server: a file result and an upload round trip name only the alias, and both still work."""

from __future__ import annotations

import json
import os

import httpx
import numpy as np
import pytest


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    import gradio as gr
    import soundfile
    from gradio.utils import get_upload_folder
    from starlette.middleware import Middleware

    from omnivoice_demo.ui.hidden_paths import HiddenPaths
    from tests.support.app_server import free_port

    made = tmp_path_factory.mktemp("made")

    def speak(text):
        path = made / "speech.wav"
        soundfile.write(path, np.zeros(2400, np.float32), 24000)
        return str(path)

    def length(audio):
        return f"{len(soundfile.read(audio)[0])} samples"

    with gr.Blocks() as demo:
        text, audio = gr.Textbox(label="text"), gr.Audio(type="filepath", label="audio")
        gr.Button(visible=False).click(speak, inputs=[text], outputs=gr.Audio(type="filepath"), api_name="speak")
        gr.Button(visible=False).click(length, inputs=[audio], outputs=gr.Textbox(), api_name="length")
    folder = os.path.abspath(get_upload_folder())
    port = free_port()
    demo.launch(prevent_thread_lock=True, server_port=port, quiet=True, allowed_paths=[str(made)],
                app_kwargs={"middleware": [Middleware(HiddenPaths, folder=folder)]})
    yield f"http://127.0.0.1:{port}/", folder
    demo.close()


def test_a_file_result_names_the_alias_and_its_address_still_serves_it(server):
    url, folder = server
    from gradio_client import Client

    client = Client(url, verbose=False, download_files=False)
    result = client.predict("hi", api_name="/speak")
    shown = json.dumps(result)
    assert folder not in shown and result["path"].startswith("/gradio-cache/"), shown
    assert "/gradio_api/file=/gradio-cache/" in result["url"]
    got = httpx.get(result["url"], timeout=30)
    assert got.status_code == 200 and got.content[:4] == b"RIFF"
    config = httpx.get(url + "config", timeout=30)
    assert config.status_code == 200 and folder not in config.text


def test_an_upload_names_the_alias_and_comes_back_as_the_file(server, tmp_path):
    url, folder = server
    import soundfile
    from gradio_client import Client, handle_file

    clip = tmp_path / "clip.wav"
    soundfile.write(clip, np.zeros(4800, np.float32), 24000)
    uploaded = httpx.post(url + "gradio_api/upload", files={"files": ("clip.wav", clip.read_bytes())}, timeout=30)
    assert uploaded.status_code == 200 and folder not in uploaded.text
    assert uploaded.json()[0].startswith("/gradio-cache/")
    client = Client(url, verbose=False, download_files=False)
    assert client.predict(handle_file(str(clip)), api_name="/length") == "4800 samples"
