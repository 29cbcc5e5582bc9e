"""In Chromium, what a new user trips on (issue 44): with no model Speak is not "Ready." and its button is not
active; after an error the old code grid is cleared; an error toast does not stay over the next successful run
(tests/test_app_browser.py's clone test); on a 390x844 phone the language, voice and speed sit right under the
text (tests/test_app_browser_rough_edges.py's phone test)."""

from __future__ import annotations

import pytest

from tests.support.app_server import AppProcess
from tests.support.browser import chromium_page, missing
from tests.test_app_browser import SECONDS, _tab, _until, app, page  # noqa: F401 - the fixtures

pytestmark = [pytest.mark.slow, pytest.mark.skipif(missing() is not None, reason=str(missing()))]


def test_with_no_model_speak_says_so_and_its_button_is_not_active(tmp_path):
    server = AppProcess(["--offline"], tmp_path / "no-model")   # nothing cached, offline: the app opens empty
    try:
        server.wait_serving(timeout=180)
        with chromium_page(server.url) as empty:
            empty.locator("#speak-go").wait_for(state="attached", timeout=60 * SECONDS)
            _until(empty, "document.querySelector('#speak-progress').innerText.includes('No model')", timeout=30)
            progress = empty.locator("#speak-progress").inner_text()
            assert "Ready." not in progress and "Model tab" in progress, progress
            assert empty.locator("#speak-go").is_disabled()
    finally:
        server.stop()


def test_after_an_error_the_old_code_grid_is_cleared(page):
    _tab(page, "Speak", "#speak-text")
    page.locator("#speak-text textarea").fill("A short sentence for the grid.")
    page.locator("#speak-go").click()
    _until(page, "document.querySelector('#speak-info').innerText.includes('RTF')", timeout=90)
    assert page.locator("#speak-grid img").count() == 1
    page.locator("#speak-text textarea").fill("   ")   # an error: nothing to say
    page.locator("#speak-go").click()
    _until(page, "document.querySelector('#speak-progress').innerText.includes('previous result was cleared')",
           timeout=30)
    _until(page, "document.querySelector('#speak-grid img') === null", timeout=10)
