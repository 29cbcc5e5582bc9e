"""In Chromium on a 390x844 phone (issue 58, point 6): the Speak button is within a screen of the text box's bottom
(it was 1.8 screens below it), the desktop layout keeps the settings beside the text, and the no-model bar's
way to the Model tab works where that tab is hidden under "More tabs".  Screenshots in
test-artifacts/browser-phone-*.png and browser-desktop-*.png."""

from __future__ import annotations

import pytest

from tests.support.app_server import AppProcess
from tests.support.browser import VIEWPORT, chromium_page, missing
from tests.test_app_browser import SECONDS, _tab, _until, app, page  # noqa: F401 - the fixtures

pytestmark = [pytest.mark.slow, pytest.mark.skipif(missing() is not None, reason=str(missing()))]

PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 900}
TEXT = ("A text long enough that its line under the box shows the estimated time of each preset, as a reader "
        "sees it before pressing Speak.")


def _box(page, selector: str) -> dict:
    box = page.locator(selector).bounding_box()
    assert box is not None, f"{selector} is not shown"
    return box


def test_the_no_model_bar_opens_the_model_tab_where_a_phone_hides_it(tmp_path, artifacts_dir):
    # first in the module: its own browser, before the module's page (one sync Playwright at a time)
    server = AppProcess(["--offline"], tmp_path / "no-model")   # nothing cached, offline: the app opens empty
    try:
        server.wait_serving(timeout=180)
        with chromium_page(server.url) as empty:
            empty.locator("#speak-go").wait_for(state="attached", timeout=60 * SECONDS)
            _until(empty, "document.querySelector('#model-bar .ov-tab-link') !== null", timeout=30)
            for size, name in ((PHONE, "phone"), (DESKTOP, "desktop")):
                empty.set_viewport_size(size)
                empty.wait_for_timeout(500)
                shown_tabs = [tab.inner_text().strip() for tab in empty.get_by_role("tab").all() if tab.is_visible()]
                bar = empty.locator("#model-bar").inner_text()
                if name == "phone":   # the tab the bar names is not among the tabs in sight: the bar says where
                    assert "Model" not in shown_tabs and "Speak" in shown_tabs, shown_tabs
                    assert "More tabs" in bar and empty.get_by_label("More tabs").is_visible(), bar
                else:
                    assert "Model" in shown_tabs, shown_tabs
                assert "Model tab" in bar, bar
                empty.screenshot(path=str(artifacts_dir / f"browser-{name}-no-model.png"), full_page=False)
                link = empty.locator("#model-bar .ov-tab-link").first
                assert link.is_visible() and link.inner_text() == "Model tab"
                link.click()
                empty.locator("#model-details").wait_for(state="visible", timeout=10 * SECONDS)
                assert empty.locator("#speak-text").is_hidden()
                if name == "phone":   # the tabs in sight, then back to Speak for the desktop's turn
                    _until(empty, "(() => { const r = document.querySelector('.tabs').getBoundingClientRect(); "
                                  "return r.top >= -1 && r.top < window.innerHeight; })()", timeout=10)
                    empty.get_by_role("tab", name="Speak", exact=True).click()
    finally:
        server.stop()


def test_on_a_phone_speak_is_within_a_screen_of_the_text_box(page, artifacts_dir):
    _tab(page, "Speak", "#speak-text")
    page.locator("#speak-text textarea").fill(TEXT)
    _until(page, "document.querySelector('#speak-text-info').innerText.length > 20", timeout=30)
    try:
        page.set_viewport_size(PHONE)
        page.wait_for_timeout(500)
        page.screenshot(path=str(artifacts_dir / "browser-phone-speak.png"), full_page=True)
        text, go = _box(page, "#speak-text"), _box(page, "#speak-go")
        below = go["y"] - (text["y"] + text["height"])
        assert 0 < below < PHONE["height"], (text, go)
        # still after the settings a reader sets first, and the result after it
        assert _box(page, "#speak-preset")["y"] < go["y"] < _box(page, "#speak-progress")["y"]
        # the rest (Text/SSML, the other settings) after the result
        assert _box(page, "#speak-audio")["y"] < _box(page, "#speak-seed")["y"]

        page.set_viewport_size(DESKTOP)
        page.wait_for_timeout(500)
        page.screenshot(path=str(artifacts_dir / "browser-desktop-speak.png"), full_page=False)
        text, go, language = _box(page, "#speak-text"), _box(page, "#speak-go"), _box(page, "#speak-language")
        assert language["x"] > text["x"] + text["width"] and abs(language["y"] - text["y"]) < 20   # beside the text
        assert 0 < go["y"] - (text["y"] + text["height"]) < DESKTOP["height"] / 2, (text, go)
        # the help lines left out on a phone are shown here
        assert page.locator("#speak-preset .info-text").is_visible()
    finally:
        page.locator("#speak-text textarea").fill("")
        page.set_viewport_size(VIEWPORT)
