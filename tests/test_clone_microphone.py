"""Clone from the microphone in a real browser, without typing the transcript (issue 11).

Chromium (the system's, driven by Playwright) gets a fake microphone that plays a
speech-like WAV file; the Clone tab records it, the speech recogniser (a tiny
random-weight Whisper exported to ONNX, given to the app by $OMNIVOICE_ASR_MODEL)
fills in the transcript box by itself, and Clone and speak then succeeds.
A random Whisper hears nonsense: the test asserts that *some* text arrives, not
what it says.  Screenshot: test-artifacts/browser-clone-microphone.png.

Needs the ``playwright`` package and chromium; skipped, saying so, where one is
missing.  Slow (builds the recogniser, starts the app and a browser).
"""

from __future__ import annotations

import pytest
import soundfile as sf

from omnivoice_demo.ui.tabs.clone import RECOGNISING
from tests.support.app_server import AppProcess, wait_model_ready
from tests.support.browser import FLAGS, VIEWPORT, find_chromium, missing
from tests.support.signals import speech_like

pytestmark = [pytest.mark.slow, pytest.mark.skipif(missing() is not None, reason=missing() or "")]

SECONDS = 1000  # Playwright's timeouts are in milliseconds
MICROPHONE_RATE = 48000
RECORD_SECONDS = 4


@pytest.fixture(scope="module")
def recognizer_folder(tmp_path_factory):
    """A tiny random Whisper exported with the app's default recogniser precision (int8) and fp32."""
    from convert.whisper import convert_whisper
    from convert.whisper_checkpoint import build_checkpoint

    root = tmp_path_factory.mktemp("mic-whisper")
    checkpoint = build_checkpoint("test", root / "ckpt", seed=0, max_length=40)
    return convert_whisper(checkpoint, root / "onnx", ("fp32", "int8"))


@pytest.fixture(scope="module")
def app(tiny_fp32_folder, recognizer_folder, tmp_path_factory):
    from gradio_client import Client

    with AppProcess(["--model", str(tiny_fp32_folder), "--precision", "fp32"], tmp_path_factory.mktemp("mic-app"),
                    env={"OMNIVOICE_ASR_MODEL": str(recognizer_folder)}) as app:
        app.wait_serving()
        wait_model_ready(Client(app.url, verbose=False))
        yield app


@pytest.fixture(scope="module")
def microphone_wav(tmp_path_factory) -> str:
    """What the fake microphone plays (Chromium loops it): 16-bit PCM, 48 kHz, mono."""
    path = tmp_path_factory.mktemp("mic") / "microphone.wav"
    sf.write(path, speech_like(RECORD_SECONDS + 2.0, MICROPHONE_RATE, seed=8)[0], MICROPHONE_RATE, subtype="PCM_16")
    return str(path)


@pytest.fixture
def page(app, microphone_wav):
    from playwright.sync_api import sync_playwright

    flags = FLAGS + ["--use-fake-ui-for-media-stream", "--use-fake-device-for-media-stream",
                     f"--use-file-for-fake-audio-capture={microphone_wav}"]
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=find_chromium(), args=flags)
        try:
            context = browser.new_context(viewport=VIEWPORT)
            context.grant_permissions(["microphone"], origin=app.url.rstrip("/"))
            page = context.new_page()
            page.goto(app.url)
            page.locator("#speak-go").wait_for(state="attached", timeout=60 * SECONDS)
            yield page
        finally:
            browser.close()


def test_clone_records_the_microphone_and_fills_in_the_transcript(page, app, artifacts_dir):
    errors = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.get_by_role("tab", name="Clone", exact=True).click()
    reference = page.locator("#clone-ref")
    reference.wait_for(state="visible", timeout=10 * SECONDS)
    reference.get_by_label("Record audio").click()  # the microphone source
    reference.locator("button.record-button").click()
    reference.locator("button.stop-button").wait_for(state="visible", timeout=10 * SECONDS)
    page.wait_for_timeout(RECORD_SECONDS * SECONDS)
    reference.locator("button.stop-button").click()

    # the recording reaches the server, the note describes it, and the recogniser fills in the box
    page.wait_for_function("document.querySelector('#clone-note').innerText.includes('Reference:')",
                           timeout=60 * SECONDS)
    transcript = page.locator("#clone-transcript textarea")
    page.wait_for_function(
        """(recognising) => {
            const box = document.querySelector('#clone-transcript textarea');
            return box && !box.disabled && box.value.trim() !== '' && box.value.trim() !== recognising;
        }""", arg=RECOGNISING, timeout=90 * SECONDS)
    heard = transcript.input_value().strip()
    note = page.locator("#clone-note").inner_text()
    assert heard and heard != RECOGNISING
    assert "⚠" not in note, note
    seconds = float(note.split("Reference:")[1].split(" s,")[0])
    assert RECORD_SECONDS - 1.5 <= seconds <= RECORD_SECONDS + 3, note  # the recording, not an empty clip

    page.locator("#clone-consent input").check()
    page.locator("#clone-text textarea").fill("Hello in the voice from the microphone.")
    page.locator("#clone-go").click()
    page.wait_for_function("document.querySelector('#clone-info').innerText.includes('RTF')", timeout=90 * SECONDS)
    page.locator('#clone-audio a.download-link[href*="gradio_api/file="]').wait_for(state="attached",
                                                                                   timeout=20 * SECONDS)
    page.screenshot(path=str(artifacts_dir / "browser-clone-microphone.png"), full_page=True)
    toasts = [t.inner_text() for t in page.locator("[data-testid=toast-body]").all()]
    assert not [t for t in toasts if "rror" in t], toasts
    assert transcript.input_value().strip() == heard, "the recognised transcript was kept for cloning"
    assert not errors, errors
    assert "Traceback" not in app.log_text()
