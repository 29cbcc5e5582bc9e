"""Two visitors of a shared server (two Playwright browser contexts on the system Chromium).

The app runs with ``--shared``.  Visitor A saves a voice in the Clone tab; it
is offered to A after a reload (it lives in A's browser) and never to B; the
Model tab offers neither visitor a way to load, unload or switch models, and
the model both see stays the same.  Slow (a browser and a server).
"""

from __future__ import annotations

import contextlib

import pytest

from omnivoice_demo.studio.models import CODEC_CARD, MODEL_CARD
from tests.support.browser import FLAGS, find_chromium, missing
from tests.support.signals import write_speech_like

pytestmark = [pytest.mark.slow, pytest.mark.skipif(missing() is not None, reason=missing() or "")]
SECONDS = 1000


@pytest.fixture(scope="module")
def shared_server(tiny_fp32_folder, tmp_path_factory):
    from tests.support.app_server import AppProcess

    with AppProcess(["--model", str(tiny_fp32_folder), "--precision", "fp32", "--shared"],
                    tmp_path_factory.mktemp("shared-app")) as server:
        server.wait_serving()
        yield server


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> str:
    return write_speech_like(tmp_path_factory.mktemp("shared-ref") / "reference.wav", 3.0, 48000, seed=6)


def _voice_choices(page) -> list[str]:
    page.get_by_role("tab", name="Speak", exact=True).click()
    page.locator("#speak-voice-refresh").click()
    page.wait_for_timeout(500)
    page.locator("#speak-voice input").click()
    options = page.get_by_role("option")
    options.first.wait_for(timeout=10 * SECONDS)
    names = [text.strip() for text in options.all_inner_texts()]
    page.keyboard.press("Escape")
    return names


def _model_bar(page) -> str:
    page.wait_for_function("document.querySelector('#model-bar')?.innerText.includes('ready')",
                           timeout=60 * SECONDS)
    return page.locator("#model-bar").inner_text()


@contextlib.contextmanager
def _two_visitors(server):
    """Pages of two visitors (two browser contexts: their own cookies and storage) on ``server``'s page."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=find_chromium(), args=FLAGS)
        try:
            pages = [browser.new_context().new_page() for _ in range(2)]
            for page in pages:
                page.goto(server.url, timeout=60 * SECONDS)
            yield pages
        finally:
            browser.close()


def test_two_visitors_keep_their_voices_and_cannot_touch_the_model(shared_server, reference, tmp_path):
    with _two_visitors(shared_server) as (alice, bob):
        bar = _model_bar(alice)
        assert str(tmp_path.anchor + "tmp") not in bar  # no server folder on a shared page

        # A saves a voice
        alice.get_by_role("tab", name="Clone", exact=True).click()
        alice.locator("#clone-ref input[type=file]").set_input_files(reference)
        alice.wait_for_function("document.querySelector('#clone-note')?.innerText.includes('48000 Hz')",
                                timeout=30 * SECONDS)
        alice.locator("#clone-transcript textarea").fill("One two three four.")
        alice.locator("#clone-consent input").check()
        alice.locator("#clone-name textarea, #clone-name input").fill("Alice voice")
        alice.locator("#clone-save").click()
        alice.wait_for_function("document.querySelector('#clone-saved')?.innerText.includes('Saved the voice')",
                                timeout=60 * SECONDS)
        assert "this browser" in alice.locator("#clone-saved").inner_text()

        # A keeps it across a reload; B never sees it
        alice.reload()
        _model_bar(alice)
        assert "Alice voice" in _voice_choices(alice)
        assert "Alice voice" not in _voice_choices(bob)

        # neither can change the model: the controls are not offered, and the model stays
        for page in (alice, bob):
            page.get_by_role("tab", name="Model", exact=True).click()
            # redaction keeps web addresses whole and never doubles its placeholder (issue 19)
            details = page.locator("#model-details").inner_text()
            assert MODEL_CARD in details and CODEC_CARD in details, details
            assert "<server><server>" not in details + page.locator("#model-bar").inner_text()
            assert page.locator("#model-load button, button#model-load").first.is_disabled()
            assert page.locator("#model-unload button, button#model-unload").first.is_disabled()
        assert _model_bar(bob) == bar


def test_a_visitors_audio_plays_for_them_and_is_not_found_for_another(shared_server):
    """Issue 21 item 6: the page's player fetches its output with the visitor's owner cookie; another visitor
    asking the same address is answered 404."""
    with _two_visitors(shared_server) as (alice, bob):
        _model_bar(alice)
        alice.locator("#speak-text textarea").fill("Hello there.")
        alice.locator("#speak-go").click()
        link = alice.locator('#speak-audio a.download-link[href*="gradio_api/file="]')
        link.wait_for(state="attached", timeout=120 * SECONDS)
        address = link.get_attribute("href")
        # the player loaded the audio from the file route, with Alice's cookie, and plays it
        alice.wait_for_function("!/^0:00$/.test(document.querySelector('#speak-audio #duration')?.innerText"
                                " ?? '0:00')", timeout=30 * SECONDS)
        alice.locator("#speak-audio button[aria-label=Play]").click()
        alice.wait_for_function("document.querySelector('#speak-audio #time')?.innerText !== '0:00'",
                                timeout=30 * SECONDS)
        fetch = "async (u) => { const r = await fetch(u); return r.status; }"
        assert alice.evaluate(fetch, address) == 200
        assert bob.evaluate(fetch, address) == 404


def test_two_visitors_book_tab_jobs_are_their_own(shared_server, tmp_path):
    """Issue 49, cause 7: the Book tab's handlers never received the visitor, so every visitor's book was one
    job: B was told "Your book is being made" while A's ran, and A's page followed whichever book was opened last.
    Here each opens a book of their own; A makes theirs; B's page shows B's book, never A's, and B can open
    another while A's runs."""
    books = {}
    for name, sentences in (("alpha", "One. Two."), ("beta", "Uno. Dos. Tres. Cuatro. Cinco.")):
        books[name] = tmp_path / f"{name}.txt"
        books[name].write_text(f"Chapter 1\n\n{sentences}\n")
    status = "document.querySelector('#book-status').innerText"
    with _two_visitors(shared_server) as (alice, bob):
        for page, name in ((alice, "alpha"), (bob, "beta")):
            _model_bar(page)
            page.get_by_role("tab", name="Book", exact=True).click()
            page.locator("#book-file input[type=file]").set_input_files(str(books[name]))
            page.wait_for_function(f"document.querySelector('#book-summary').innerText.includes('**{name}**')"
                                   f" || document.querySelector('#book-summary').innerText.includes('{name}')",
                                   timeout=60 * SECONDS)
        assert "3 sentences" in alice.locator("#book-summary").inner_text()
        assert "6 sentences" in bob.locator("#book-summary").inner_text()
        steps = alice.locator("#book-steps input[type=number]")
        steps.fill("4")
        steps.press("Enter")
        alice.locator("#book-guard input[type=checkbox]").uncheck()
        alice.locator("#book-start").click()
        alice.wait_for_function(f"{status}.includes('done')", timeout=240 * SECONDS)
        assert "3 of 3 sentences" in alice.evaluate(status)
        # B's book is still B's: not started, its own count; B opens it again without being told A's is running
        bob.locator("#book-chapter-choice textarea, #book-chapter-choice input").first.fill("1")
        bob.locator("#book-chapter-choice textarea, #book-chapter-choice input").first.press("Enter")
        bob.wait_for_function(f"{status}.includes('0 of 6 sentences')", timeout=60 * SECONDS)
        assert "being made" not in bob.locator("body").inner_text()
        assert "3 sentences" in alice.locator("#book-summary").inner_text()
