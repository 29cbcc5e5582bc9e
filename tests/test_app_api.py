"""``python app.py`` served on 127.0.0.1, driven by gradio_client on every named endpoint."""

from __future__ import annotations

import json
import time

import numpy as np
import pytest
import soundfile as sf
from gradio_client import Client, handle_file
from gradio_client.exceptions import AppError

from tests.support.app_server import AppProcess, shared_app, wait_model_ready
from tests.support.signals import speech_like

pytestmark = pytest.mark.slow  # these tests run the app in a subprocess (the fast tier stays in process)

ENDPOINTS = ("/speak", "/clone", "/codec", "/decode", "/benchmark", "/voices", "/models")


@pytest.fixture(scope="module")
def app(tiny_fp32_folder, tmp_path_factory, request):
    return shared_app(tiny_fp32_folder, tmp_path_factory.mktemp("app"), request.config)


@pytest.fixture(scope="module")
def client(app):
    client = Client(app.url, verbose=False)
    wait_model_ready(client)
    return client


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("api-ref") / "reference.ogg"
    sf.write(path, speech_like(3.0, 22050, seed=5, channels=2).T, 22050, format="OGG")
    return str(path)


def test_app_serves_in_seconds_before_the_model(app):
    assert app.serving_after is not None and app.serving_after < 30, app.log_text()


def test_every_endpoint_is_named_with_defaults_but_the_main_input(client):
    info = client.view_api(print_info=False, return_format="dict")["named_endpoints"]
    for name in ENDPOINTS:
        assert name in info
    main = {"/speak": "text", "/clone": "reference", "/codec": "audio", "/decode": "codes", "/benchmark": None,
            "/voices": None, "/models": None}
    for name, first in main.items():
        for parameter in info[name]["parameters"]:
            required = not parameter["parameter_has_default"]
            assert required == (parameter["parameter_name"] == first), (name, parameter["parameter_name"])


def test_every_parameter_is_described(client):
    info = client.view_api(print_info=False, return_format="dict")["named_endpoints"]
    for name in ("/speak", "/clone", "/codec", "/decode", "/benchmark"):
        for parameter in info[name]["parameters"]:
            assert parameter["python_type"]["description"], (name, parameter["parameter_name"])
    clone = {p["parameter_name"]: p["python_type"]["description"] for p in info["/clone"]["parameters"]}
    assert clone["consent"].startswith("Required") and clone["transcript"].startswith("Required")


def test_speak(client):
    path, seed, details = client.predict(text="Hello from the API.", num_step=4, seed=3, api_name="/speak")
    audio, rate = sf.read(path)
    assert rate == 24000 and audio.ndim == 1 and len(audio) > 4800
    assert seed == 3 and details["seed"] == 3 and details["settings"]["num_step"] == 4
    assert details["timings"]["total"] > 0 and len(details["codes_sha256"]) == 64
    again, _, again_details = client.predict(text="Hello from the API.", num_step=4, seed=3, api_name="/speak")
    np.testing.assert_array_equal(audio, sf.read(again)[0])
    assert again_details["codes_sha256"] == details["codes_sha256"]


def test_speak_has_the_tabs_script_mode(client):
    """/speak with script=true reads a dialogue script, as the Speak tab's Script mode: each name a voice, or given
    one by speakers (JSON); who speaks when is in the details."""
    script = "Anna: The first line is here.\nalloy: And the second one."
    path, seed, details = client.predict(text=script, script=True, speakers='{"Anna": "female, low pitch"}',
                                         num_step=4, seed=3, api_name="/speak")
    assert sf.read(path)[1] == 24000
    assert [turn["speaker"] for turn in details["turns"]] == ["Anna", "alloy"]
    with pytest.raises(AppError, match="Nobody"):
        client.predict(text="Nobody: Hello.", script=True, num_step=4, api_name="/speak")
    with pytest.raises(AppError, match="script=true"):
        client.predict(text="Hello.", speakers='{"Anna": "alloy"}', num_step=4, api_name="/speak")


def test_speak_with_defaults_only(client):
    path, seed, details = client.predict(text="Only the text.", api_name="/speak")
    audio, rate = sf.read(path)
    assert rate == 24000 and len(audio) > 0
    assert seed >= 0 and details["seed"] == seed  # the random seed used is returned


def test_clone(client, reference):
    path, seed, details = client.predict(reference=handle_file(reference), transcript="One two three four.",
                                         text="Hello in this voice.", consent=True, num_step=4, api_name="/clone")
    assert details["seed"] == seed
    audio, rate = sf.read(path)
    assert rate == 24000 and len(audio) > 0


def test_codec_and_decode(client, reference):
    decoded, codes, metrics = client.predict(audio=handle_file(reference), api_name="/codec")
    assert metrics["frames"] == 75 and metrics["bitrate_kbps"] == 2.0
    assert set(metrics) >= {"snr_db", "log_mel_distance", "timings"}
    audio, rate = sf.read(decoded)
    assert rate == 24000 and len(audio) == 75 * 960
    again, _ = sf.read(client.predict(codes=handle_file(codes), api_name="/decode"))
    np.testing.assert_allclose(again, audio, atol=1e-4)


def test_benchmark(client):
    rows, csv_path = client.predict(num_step=2, api_name="/benchmark")
    assert len(rows) == 1 and rows[0]["rtf"] > 0 and rows[0]["peak_rss_mb"] > 0
    with open(csv_path) as handle:
        assert handle.readline().startswith("model,")


@pytest.mark.parametrize("endpoint, kwargs, expected", [
    ("/speak", dict(text="  "), "empty"),
    ("/speak", dict(text="Hi", language="Klingon"), "Unknown language"),
    ("/speak", dict(text="Hi", instruct="<speak>male</speak>"), "markup"),
    ("/speak", dict(text="Hi", voice="nobody"), "No saved voice or named design is called 'nobody'"),
    ("/clone", dict(transcript="One two.", text="Hi"), "I have the right to use this voice"),
    ("/clone", dict(consent=True, text="Hi"), "transcript"),
    ("/clone", dict(consent=True, transcript="One two."), "text is required"),
    ("/benchmark", dict(length="huge"), "Text length"),
    ("/benchmark", dict(models="fp33 · cpu"), "the loaded models are"),
])
def test_bad_input_is_a_message_and_the_server_keeps_serving(client, reference, endpoint, kwargs, expected):
    if endpoint == "/clone":
        kwargs = dict(kwargs, reference=handle_file(reference))
    with pytest.raises(AppError) as excinfo:
        client.predict(api_name=endpoint, **kwargs)
    message = str(excinfo.value)
    assert expected in message and "Traceback" not in message
    assert "<br>" not in message and "&gt;" not in message and "&#" not in message  # plain text for API clients
    assert sf.read(client.predict(text="Still here.", num_step=1, api_name="/speak")[0])[1] == 24000


def test_speak_reads_a_description_and_says_what_it_ignored(client):
    path, _, details = client.predict(text="Hello.", instruct="a deep, cheerful British man", num_step=1,
                                      api_name="/speak")
    assert details["instruct"] == "low pitch, british accent, male" and details["ignored"] == ["cheerful"]
    assert sf.read(path)[1] == 24000


def test_voices_and_models_are_listed(client):
    voices = {v["id"]: v for v in client.predict(api_name="/voices")}
    assert voices["alloy"]["type"] == "design" and voices["alloy"]["instructions"]
    models = client.predict(api_name="/models")
    assert models["active"] in models["loaded"] and models["state"] == "ready"


def test_submit_and_cancel_cycles_never_run_two_generations(app, client):
    """Four submit-and-cancel cycles: each cancel stops its generation after the step in flight, so the
    engine never runs two at once and is idle soon after the last cancel."""
    import httpx

    before = httpx.get(app.url + "health").json()["queue"]
    long_text = " ".join(f"Sentence {n} of a text long enough to take a while." for n in range(10))
    most_running = 0
    for seed in range(4):
        job = client.submit(text=long_text, num_step=64, seed=seed, api_name="/speak")
        deadline = time.monotonic() + 60
        while job.status().code.name != "PROCESSING" and time.monotonic() < deadline:  # the server has it
            time.sleep(0.05)
        time.sleep(0.5)
        job.cancel()
        queue = httpx.get(app.url + "health").json()["queue"]
        most_running = max(most_running, queue["running"])
    deadline = time.monotonic() + 15
    while True:
        queue = httpx.get(app.url + "health").json()["queue"]
        if queue["running"] == 0 and queue["waiting"] == 0:
            break
        assert time.monotonic() < deadline, queue
        time.sleep(0.1)
    assert most_running <= 1
    assert queue["cancelled"] - before["cancelled"] >= 1
    assert queue["finished"] == before["finished"]  # none of the four ran to its end
    assert queue["steps_after_cancel"] - before["steps_after_cancel"] <= 4


def test_unreadable_upload_is_a_message(client, tmp_path):
    broken = tmp_path / "broken.wav"
    broken.write_bytes(b"RIFF....not really a wave file")
    with pytest.raises(AppError) as excinfo:
        client.predict(audio=handle_file(str(broken)), api_name="/codec")
    assert "Cannot read audio file" in str(excinfo.value)
    bad_codes = tmp_path / "codes.npz"
    np.savez(bad_codes, codes=np.zeros((3, 3)))
    with pytest.raises(AppError) as excinfo:
        client.predict(codes=handle_file(str(bad_codes)), api_name="/decode")
    assert "expected [8, frames]" in str(excinfo.value)


def test_without_a_model_the_app_serves_and_says_what_to_do(tmp_path):
    """No --model, nothing cached, the Hub unreachable (offline): the page is up and every call explains."""
    app = AppProcess(["--offline"], tmp_path)
    try:
        assert app.wait_serving() < 30
        client = Client(app.url, verbose=False)
        deadline = time.monotonic() + 30
        while True:
            with pytest.raises(AppError) as excinfo:
                client.predict(text="Hello", api_name="/speak")
            message = str(excinfo.value)
            if "still loading" not in message or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert "No model is loaded" in message and "--model" in message, message
        assert "Traceback" not in message
    finally:
        app.stop()
    assert "Traceback" not in app.log_path.read_text()


def test_launch_flags(tmp_path):
    from omnivoice_demo import app as app_module

    args = app_module.parse_args([])
    assert (args.host, args.port, args.share, args.inbrowser, args.offline, args.provider, args.precision) == \
        ("127.0.0.1", 7860, False, False, None, "cpu", None)
    args = app_module.parse_args(["--model", "x/y", "--precision", "fp16", "--provider", "cuda", "--host",
                                  "0.0.0.0", "--port", "9000", "--share", "--inbrowser", "--offline"])
    assert (args.model, args.precision, args.provider, args.host, args.port, args.share, args.inbrowser,
            args.offline) == ("x/y", "fp16", "cuda", "0.0.0.0", 9000, True, True, True)
    assert json.dumps(vars(args))
