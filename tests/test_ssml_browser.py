"""SSML in the app: the Speak tab's "Text / SSML" switch checks the markup as it is typed (a real headless
browser) and Speak generates its segments; the Gradio API's /speak takes SSML by its ``<speak``.

Slow (the app in a subprocess, shared with the other app tests); the browser part is skipped, saying so,
where Playwright or Chromium is missing.
"""

from __future__ import annotations

import pytest

from tests.support.browser import chromium_page, missing
from tests.test_app_browser import app  # noqa: F401 - the app shared by the app tests (a fixture)

pytestmark = pytest.mark.slow

SECONDS = 1000  # Playwright's timeouts are in milliseconds
MARKUP = '<speak>Hello there.<break time="300ms"/><voice name="onyx">Good morning.</voice></speak>'
CHECK = "document.querySelector('#speak-ssml-check').innerText"


@pytest.fixture(scope="module")
def page(app):
    if missing() is not None:
        pytest.skip(missing())
    with chromium_page(app.url) as page:
        page.locator("#speak-go").wait_for(state="attached", timeout=60 * SECONDS)
        page.wait_for_function("document.querySelector('#model-bar').innerText.includes('ready')",
                               timeout=60 * SECONDS)
        yield page


def _check_says(page, words: str) -> None:
    page.wait_for_function(f"{CHECK}.includes({words!r})", timeout=20 * SECONDS)


def test_the_ssml_switch_checks_as_you_type_and_speaks_the_segments(page, artifacts_dir):
    box = page.locator("#speak-text textarea")
    box.fill("<speak>\n  <p>Hello.</speak>")
    page.wait_for_timeout(500)
    assert page.evaluate(CHECK).strip() == ""   # plain text: no check
    page.locator("#speak-mode").get_by_text("SSML", exact=True).click()
    _check_says(page, "line 2, column")
    assert "not well-formed XML" in page.evaluate(CHECK)
    box.fill('<speak>Hi.<audio src="x.wav"/></speak>')
    _check_says(page, "<audio> is not supported")
    box.fill(MARKUP.replace("<break", '<prosody pitch="high">Hm.</prosody><break'))
    _check_says(page, "2 segments, 1 pause")
    assert "prosody pitch" in page.evaluate(CHECK)
    box.fill(MARKUP)
    _check_says(page, "✓ SSML: 2 segments, 1 pause")
    info = "document.querySelector('#speak-text-info').innerText.trim()"
    try:   # not planned as text
        page.wait_for_function(f"{info} === '{len(MARKUP)} characters'", timeout=60 * SECONDS)
    except Exception:   # say what it showed instead (a run on a loaded machine once timed out here)
        pytest.fail(f"the text info shows {page.evaluate(info)!r}, not {len(MARKUP)} characters")
    page.locator("#speak-go").click()
    page.wait_for_function("document.querySelector('#speak-info').innerText.includes('RTF')",
                           timeout=180 * SECONDS)
    assert "2 chunks" in page.locator("#speak-info").inner_text()   # one per segment: read as SSML
    page.screenshot(path=str(artifacts_dir / "browser-ssml.png"), full_page=True)
    page.locator("#speak-mode").get_by_text("Text", exact=True).click()
    page.wait_for_function(f"{CHECK}.trim() === ''", timeout=20 * SECONDS)


def test_the_gradio_speak_api_reads_ssml(app):
    from gradio_client import Client

    client = Client(app.url, verbose=False)
    _, seed, details = client.predict(text=MARKUP, num_step=4, seed=7, api_name="/speak")
    assert seed == 7 and details["chunks"] == 2 and details["settings"]["segments"] == 2
    _, _, plain = client.predict(text="Hello there. Good morning.", num_step=4, seed=7, api_name="/speak")
    assert plain["chunks"] == 1
