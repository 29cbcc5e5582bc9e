"""A real headless browser on ``python app.py`` (as ``test_app_browser``): a style variant is added to a saved
voice in the Clone tab (refused without consent, then added, listed and played), and the Speak tab speaks
with it when the description names its tag (the note under the box and the result say so).  Screenshot: test-artifacts/browser-styles.png.

Needs ``playwright`` and chromium; skipped, saying so, where one is missing.  Slow: ``-m "not slow"`` leaves it.
"""

from __future__ import annotations

import httpx
import pytest
import soundfile as sf

from tests.support.browser import chromium_page, missing
from tests.support.signals import speech_like
from tests.test_app_browser import SECONDS, _screenshot, _tab, _until, app  # noqa: F401 - app: the shared server

pytestmark = [pytest.mark.slow, pytest.mark.skipif(missing() is not None, reason=missing() or "")]

VOICE = "Style voice"


@pytest.fixture(scope="module")
def clips(tmp_path_factory) -> tuple[str, str]:
    folder = tmp_path_factory.mktemp("browser-styles")
    paths = []
    for name, seed in (("reference", 7), ("cheerful", 12)):
        path = folder / f"{name}.wav"
        sf.write(path, speech_like(3.0, 24000, seed=seed)[0], 24000)
        paths.append(str(path))
    return paths[0], paths[1]


@pytest.fixture(scope="module")
def page(app, clips):
    with open(clips[0], "rb") as handle:   # the saved voice, made over the app's own HTTP API
        made = httpx.post(app.url + "v1/audio/voices", files={"file": ("reference.wav", handle.read(), "audio/wav")},
                          data={"name": VOICE, "transcript": "One two three four.", "consent": "true"}, timeout=120)
    assert made.status_code == 201, made.text
    with chromium_page(app.url) as page:
        page.locator("#speak-go").wait_for(state="attached", timeout=60 * SECONDS)
        _until(page, "document.querySelector('#model-bar').innerText.includes('ready')", timeout=60)
        yield page


def _choose(page, dropdown: str, option: str) -> None:
    page.locator(f"#{dropdown} input").click()
    page.get_by_role("option", name=option, exact=True).click()


def test_a_style_is_added_in_the_clone_tab_and_speaks_when_named(page, clips, artifacts_dir):
    _tab(page, "Clone", "#styles-panel")
    page.locator("#styles-panel").get_by_text("Styles of a saved voice").first.click()   # opening it lists voices
    _choose(page, "styles-voice", VOICE)
    page.locator("#styles-tag textarea, #styles-tag input").first.fill("cheerful")
    page.locator("#styles-clip input[type=file]").set_input_files(clips[1])
    page.locator('#styles-clip a.download-link[href*="gradio_api/file="]').wait_for(state="attached",
                                                                                   timeout=30 * SECONDS)
    page.locator("#styles-transcript textarea").fill("Such a happy day.")
    page.locator("#styles-add").click()   # consent not ticked: nothing is added
    _until(page, "document.querySelector('#styles-status').innerText.includes('Not done')", timeout=30)
    assert "right to use this voice" in page.locator("#styles-status").inner_text()
    page.locator("#styles-consent input").check()
    page.locator("#styles-add").click()
    _until(page, "document.querySelector('#styles-status').innerText.includes('Added the style')", timeout=90)
    _until(page, "document.querySelector('#styles-pick input')?.value === 'cheerful'", timeout=20)
    page.locator("#styles-play").click()
    page.locator('#styles-player a.download-link[href*="gradio_api/file="]').wait_for(state="attached",
                                                                                     timeout=60 * SECONDS)
    _screenshot(page, artifacts_dir / "browser-styles.png")

    page.get_by_role("tab", name="Speak", exact=True).click()
    page.locator("#speak-voice-refresh").click()
    page.wait_for_timeout(500)
    _choose(page, "speak-voice", VOICE)
    page.locator("#speak-instruct textarea").fill("cheerful")
    # the note under the box says the word picks the voice's clip (not "ignored")
    _until(page, "document.querySelector('#speak-instruct-check').innerText.includes('Style: cheerful')", timeout=20)
    page.locator("#speak-text textarea").fill("Hello in the cheerful style.")
    page.locator("#speak-go").click()
    _until(page, "document.querySelector('#speak-info').innerText.includes('RTF')", timeout=90)
    assert "Style: cheerful" in page.locator("#speak-info").inner_text()
    page.locator("#speak-instruct textarea").fill("")
