"""In Chromium: Stop on the Benchmark tab, the quality table's headers, the phone layout after a tap on Speak,
and a CJK font stack (the app of tests/test_app_browser.py, its page fixture)."""

from __future__ import annotations

import httpx
import pytest

from tests.support.browser import VIEWPORT, missing
from tests.test_app_browser import SECONDS, _screenshot, _tab, _until, app, page  # noqa: F401 - the fixtures

pytestmark = [pytest.mark.slow, pytest.mark.skipif(missing() is not None, reason=str(missing()))]

def running_jobs(app) -> int:
    return httpx.get(app.url + "health", timeout=10).json()["queue"]["running"]


def _set_slider(page, element: str, value: int) -> None:
    box = page.locator(f"#{element} input[type=number]")
    box.fill(str(value))
    box.press("Enter")


def test_stop_cancels_the_timing_and_the_quality_run_and_frees_the_model(page, app):
    _tab(page, "Benchmark", "#bench-go")
    # the empty quality table shows its columns, not Gradio's "1 2 3"
    headers = page.locator("#quality-table").inner_text()
    assert "configuration" in headers and "codes agreement" in headers and "WER %" in headers
    # a long timing run (the long text, 64 steps, 10 repetitions), stopped while it runs
    page.locator("#bench-length").get_by_text("long", exact=True).click()
    _set_slider(page, "bench-steps", 64)
    _set_slider(page, "bench-repeats", 10)
    _stop_while_running(page, app, "bench", "document.body.innerText.match(/step \\d+ of 64/)")
    assert "Machine:" not in page.locator("#bench-machine").inner_text()  # it did not run to its end
    # the quality run: four sentences, three candidates, stopped while it generates
    _set_slider(page, "quality-sentences", 5)
    _stop_while_running(page, app, "quality", "document.body.innerText.includes('Generating')")
    assert "exact" not in page.locator("#quality-table").inner_text()  # no report: it was stopped
    # the model serves the next request at once
    _tab(page, "Speak", "#speak-text")
    page.locator("#speak-text textarea").fill("After the stopped benchmark.")
    page.locator("#speak-go").click()
    _until(page, "document.querySelector('#speak-progress').innerText.includes('Done')", timeout=60)


def _stop_while_running(page, app, run: str, running_js: str) -> None:
    """Start ``#<run>-go``, press ``#<run>-stop`` once ``running_js`` holds, and see the run gone from the page
    and the queue: cancelled at the next step, the model's lock free again."""
    page.locator(f"#{run}-go").click()
    _until(page, running_js, timeout=60)
    page.locator(f"#{run}-stop").click()
    _until(page, f"!({running_js})", timeout=20)
    page.wait_for_timeout(1000)
    assert running_jobs(app) == 0

def _open_tab(page, name: str, ready: str) -> None:
    """A tab by its button, or through Gradio's overflow menu when the tabs do not fit the width."""
    button = page.get_by_role("tab", name=name, exact=True)
    if not button.first.is_visible():
        page.locator(".overflow-menu button, button.overflow-dropdown, .tab-container button[aria-haspopup]") \
            .first.click()
        page.locator(f"button:text-is('{name}')").filter(has_not=page.locator("[hidden]")).last.click()
    else:
        button.first.click()
    page.locator(ready).wait_for(state="visible", timeout=10 * SECONDS)


def test_on_a_phone_the_result_follows_the_speak_button_and_every_tab_is_reachable(page, artifacts_dir):
    """On a 390x844 screen: the text, then the language, voice, speed and preset right under it, then Speak,
    progress and the result with its files, then the other settings; the progress in sight after a tap on
    Speak; every tab reachable."""
    _tab(page, "Speak", "#speak-text")
    page.set_viewport_size({"width": 390, "height": 844})
    try:
        page.wait_for_timeout(500)
        top = {name: page.locator(f"#{name}").bounding_box()["y"]
               for name in ("speak-text", "speak-go", "speak-progress", "speak-audio", "speak-files",
                            "speak-language", "speak-voice", "speak-speed", "speak-preset", "speak-seed",
                            "speak-advanced")}
        _screenshot(page, artifacts_dir / "browser-phone.png")
        # text, then language, voice, speed and preset, then Speak, progress and result, then the rest
        assert top["speak-text"] < top["speak-language"] < top["speak-voice"] < top["speak-speed"], top
        assert top["speak-speed"] < top["speak-preset"] < top["speak-go"], top
        assert top["speak-go"] < top["speak-progress"] < top["speak-audio"] < top["speak-files"], top
        assert top["speak-files"] < top["speak-advanced"] and top["speak-files"] < top["speak-seed"], top
        # right under the text: within the first screen and a half, not 2,500 px down a 4,700 px page
        assert top["speak-speed"] - top["speak-text"] < 1.5 * 844, top
        # after a tap on Speak the progress is on the screen without scrolling
        page.locator("#speak-text textarea").fill("On a phone.")
        page.locator("#speak-go").click()
        # (within a pixel: scrollIntoView lands on the layout's fractional pixels, e.g. a top of -0.17 px)
        _until(page, "(() => { const r = document.querySelector('#speak-progress').getBoundingClientRect(); "
                     "return r.top >= -1 && r.bottom <= window.innerHeight + 1; })()", timeout=10)  # scrolled into sight
        _until(page, "document.querySelector('#speak-progress').innerText.includes('Done')", timeout=60)
        # and kept there while the page above it still changes (here: the text's info grown by 900 px, as a late
        # answer from a busy server grows it), in a browser without CSS scroll anchoring (Safari, the iPhone's
        # browser, has none; Chromium's would hide the shift)
        page.evaluate("document.documentElement.style.overflowAnchor = 'none'; "
                      "document.body.style.overflowAnchor = 'none'; "
                      "document.querySelectorAll('body *').forEach((e) => e.style.overflowAnchor = 'none')")
        page.evaluate("document.querySelector('#speak-text').insertAdjacentHTML('afterend', "
                      "'<div id=\\'late-info\\' style=\\'height: 900px\\'></div>')")
        _until(page, "(() => { const r = document.querySelector('#speak-progress').getBoundingClientRect(); "
                     "return r.top >= -1 && r.bottom <= window.innerHeight + 1; })()", timeout=10)
        _open_tab(page, "Benchmark", "#bench-go")
        _open_tab(page, "Model", "#model-details")
        _open_tab(page, "Speak", "#speak-text")
    finally:
        page.evaluate("document.getElementById('late-info')?.remove(); "
                      "document.querySelectorAll('*').forEach((e) => e.style.overflowAnchor = '')")
        page.set_viewport_size(VIEWPORT)


def test_text_uses_a_font_stack_with_cjk_fonts(page):
    _tab(page, "Speak", "#speak-text")
    family = page.locator("#speak-text textarea").evaluate("b => getComputedStyle(b).fontFamily")
    assert "Noto Sans CJK SC" in family and "PingFang SC" in family and "Microsoft YaHei" in family, family
    assert family.rstrip().endswith("sans-serif")
