"""In Chromium: one sentence of a Speak result made again ("Again") and put back ("Restore").

The app and page of tests/test_app_browser.py (its fixtures).  The downloads must follow: the result's
WAV after Again differs, and after Restore it is the first one's bytes again.
"""

from __future__ import annotations

import pytest

from tests.support.browser import missing
from tests.test_app_browser import SECONDS, _screenshot, _until, app, page  # noqa: F401 - the fixtures

pytestmark = [pytest.mark.slow, pytest.mark.skipif(missing() is not None, reason=str(missing()))]

#: two sentences: sentence streaming (on in the app) makes them two chunks
TEXT = "The first sentence is here. And then a second sentence follows it, somewhat longer than the first one."
SENTENCES = "#speak-sentences"


def _wav(page) -> tuple[str, bytes]:
    """(address, bytes) of the result's WAV download."""
    link = page.locator('#speak-audio a.download-link[href*="gradio_api/file="]')
    link.wait_for(state="attached", timeout=20 * SECONDS)
    address = page.evaluate("(h) => new URL(h, location.href).href", link.get_attribute("href"))
    return address, page.request.get(address).body()


def _link_other_than(address: str) -> str:
    """JavaScript: the result's download link is there and is not ``address``."""
    return f"(h => !!h && h !== {address!r})(document.querySelector('#speak-audio a.download-link')?.href)"


def _sources(page) -> list[str]:
    return page.locator(f"{SENTENCES} audio").evaluate_all("(players) => players.map((p) => p.getAttribute('src'))")


def _button(page, action: str, sentence: int):
    return page.locator(f'{SENTENCES} button[data-ov-action="{action}"][data-ov-sentence="{sentence}"]')


def test_one_sentence_made_again_and_restored(page, artifacts_dir):
    page.locator("#speak-advanced button.label-wrap").click()
    steps = page.locator("#speak-num-step input[type=number]")
    steps.fill("4")
    page.locator("#speak-text textarea").fill(TEXT)
    page.locator("#speak-go").click()
    _until(page, f"document.querySelectorAll('{SENTENCES} button[data-ov-action=again]').length === 2", timeout=90)
    first_address, first = _wav(page)
    sources = _sources(page)
    assert len(sources) == 2 and all(s.startswith("data:audio/wav;base64,") for s in sources)
    assert _button(page, "restore", 1).is_disabled()   # nothing to restore yet

    _button(page, "again", 1).click()
    _until(page, "document.querySelector('#speak-progress').innerText.includes('made again')", timeout=60)
    _until(page, f"!document.querySelector('{SENTENCES} button[data-ov-action=restore][data-ov-sentence=\"1\"]')"
                 ".disabled", timeout=20)
    _until(page, _link_other_than(first_address), timeout=20)
    _screenshot(page, artifacts_dir / "browser-speak-sentence-again.png")
    again_address, again = _wav(page)
    now = _sources(page)
    assert again_address != first_address and again != first       # the download is the new version
    assert now[0] == sources[0] and now[1] != sources[1]             # only the second sentence changed
    assert "seed" in page.locator(SENTENCES).inner_text()

    _button(page, "restore", 1).click()
    _until(page, "document.querySelector('#speak-progress').innerText.includes('take before is back')", timeout=30)
    _until(page, _link_other_than(again_address), timeout=20)
    _, restored = _wav(page)
    assert restored == first                                         # the first version, byte for byte
    assert _sources(page) == sources
    steps.fill("32")  # back to the default
