"""A real headless browser (Playwright driving the system's Chromium) on ``python app.py``.

Runs Speak (the code-grid picture must change while the run goes on; a long
text's chunks must be offered before the run ends), Stop, Clone with an
uploaded reference, Codec with an uploaded clip, and a Benchmark (timing, and quality against
the exact model); checks that
audio appears, and keeps screenshots in test-artifacts/browser-*.png.

Needs the ``playwright`` package and chromium (``bash scripts/setup_dev.sh``
installs both; no browser download); skipped, saying so, where one is missing.
Slow (about a minute): deselected by ``-m "not slow"``.
"""

from __future__ import annotations

import re
import time

import pytest
import soundfile as sf

from tests.support.app_server import shared_app, wait_model_ready
from tests.support.browser import chromium_page, missing
from tests.support.signals import speech_like

pytestmark = [pytest.mark.slow, pytest.mark.skipif(missing() is not None, reason=missing() or "")]

#: about 30 s of speech: three chunks
LONG_TEXT = " ".join(f"Sentence number {n} of the long text goes on for a while here." for n in
                     ("one", "two", "three", "four", "five", "six", "seven", "eight"))

# every change of the grid picture, with the progress text at that moment
WATCH_GRID = """(prefix) => {
    window.__ovGrid = [];
    const root = document.querySelector('#' + prefix + '-grid');
    new MutationObserver(() => {
        const img = root.querySelector('img');
        const last = window.__ovGrid[window.__ovGrid.length - 1];
        if (img && (!last || last.src !== img.src)) {
            window.__ovGrid.push({src: img.src,
                                  progress: document.querySelector('#' + prefix + '-progress').innerText});
        }
    }).observe(root, {subtree: true, childList: true, attributes: true});
}"""

# when the first chunk appears: was the final result already there?
WATCH_CHUNKS = """() => {
    window.__ovFirstChunk = null;
    const root = document.querySelector('#speak-chunks');
    new MutationObserver(() => {
        if (window.__ovFirstChunk === null && root.querySelector('audio[data-ov-chunk]')) {
            window.__ovFirstChunk = {doneAlready: document.querySelector('#speak-info').innerText.includes('RTF'),
                                     progress: document.querySelector('#speak-progress').innerText};
        }
    }).observe(root, {subtree: true, childList: true});
}"""

# every text a tab's progress line shows from now on
WATCH_PROGRESS = """(prefix) => {
    window.__ovProgress = [];
    const line = document.querySelector('#' + prefix + '-progress');
    new MutationObserver(() => window.__ovProgress.push(line.innerText))
        .observe(line, {subtree: true, childList: true, characterData: true});
}"""

# every text the model bar shows from now on
WATCH_MODEL_BAR = """() => {
    window.__ovBar = [];
    const bar = document.querySelector('#model-bar');
    new MutationObserver(() => window.__ovBar.push(bar.innerText))
        .observe(bar, {subtree: true, childList: true, characterData: true});
}"""

SECONDS = 1000  # Playwright's timeouts are in milliseconds


def _tab(page, name: str, ready_selector: str) -> None:
    page.get_by_role("tab", name=name, exact=True).click()
    page.locator(ready_selector).wait_for(state="attached", timeout=10 * SECONDS)


def _until(page, expression: str, timeout: float, polling: float | str = "raf") -> None:
    """Wait until the JavaScript ``expression`` is true in the page (timeout in seconds)."""
    page.wait_for_function(expression, timeout=timeout * SECONDS,
                           polling=polling if isinstance(polling, str) else polling * SECONDS)


def _screenshot(page, path) -> None:
    page.screenshot(path=str(path), full_page=True)


@pytest.fixture(scope="module")
def app(tiny_fp32_folder, tmp_path_factory, request):
    from gradio_client import Client

    app = shared_app(tiny_fp32_folder, tmp_path_factory.mktemp("app"), request.config)
    wait_model_ready(Client(app.url, verbose=False))
    return app


@pytest.fixture(scope="module")
def page(app):
    with chromium_page(app.url) as page:
        page.locator("#speak-go").wait_for(state="attached", timeout=60 * SECONDS)
        _until(page, "document.querySelector('#model-bar').innerText.includes('ready')", timeout=60)
        yield page


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("browser-ref") / "reference.flac"
    sf.write(path, speech_like(3.0, 48000, seed=7, channels=2).T, 48000)
    return str(path)


def test_speak_shows_the_grid_filling_in_and_the_audio(page, artifacts_dir):
    page.locator("#speak-text textarea").fill("Hello there. This is the browser test of the code grid, step by step.")
    page.evaluate(WATCH_GRID, "speak")
    page.locator("#speak-go").click()
    shot = False
    deadline = time.monotonic() + 60
    while "RTF" not in page.locator("#speak-info").inner_text():
        if not shot and page.evaluate("window.__ovGrid.some(g => g.progress.includes('Step'))"):
            _screenshot(page, artifacts_dir / "browser-speak-running.png")
            shot = True
        assert time.monotonic() < deadline, "the Speak run did not finish"
        page.wait_for_timeout(50)
    page.locator('#speak-audio a.download-link[href*="gradio_api/file="]').wait_for(state="attached",
                                                                                   timeout=20 * SECONDS)
    _screenshot(page, artifacts_dir / "browser-speak.png")
    grids = page.evaluate("window.__ovGrid")
    during = [g for g in grids if g["progress"].startswith("Step")]
    assert len({g["src"] for g in grids}) >= 3 and len({g["src"] for g in during}) >= 2, grids
    info = page.locator("#speak-info").inner_text()
    seed = page.locator("#speak-seed input").input_value()
    assert f"seed {seed}" in info
    files = page.locator("#speak-files").inner_text().replace("\n", "")
    assert ".wav" in files and ".flac" in files and ".codes.npz" in files


def test_speak_plays_the_first_chunks_before_the_last_is_done(page, artifacts_dir):
    page.locator("#speak-advanced button.label-wrap").click()
    steps = page.locator("#speak-num-step input[type=number]")
    steps.fill("1")
    page.locator("#speak-text textarea").fill(LONG_TEXT)
    _until(page, "document.querySelector('#speak-text-info').innerText.includes('chunks')", timeout=10)
    page.evaluate(WATCH_CHUNKS)
    page.locator("#speak-go").click()
    # sentence streaming (on for several sentences): the first sentence alone, then the reference's chunks
    _until(page, "/\\d+ chunks/.test(document.querySelector('#speak-info').innerText)", timeout=90)
    _screenshot(page, artifacts_dir / "browser-speak-chunks.png")
    first = page.evaluate("window.__ovFirstChunk")
    assert first is not None and not first["doneAlready"], first
    chunks = int(re.search(r"(\d+) chunks", page.locator("#speak-info").inner_text()).group(1))
    assert chunks >= 3 and page.locator("#speak-chunks audio[data-ov-chunk]").count() == chunks
    assert page.evaluate("window.__ovChunks.played.length") >= 1  # the page's player started the first chunk
    steps.fill("32")  # back to the default


def test_stop_cancels_a_run_and_the_next_run_works(page, artifacts_dir):
    steps = page.locator("#speak-num-step input[type=number]")
    page.locator("#speak-text textarea").fill(LONG_TEXT)
    steps.fill("64")
    page.locator("#speak-go").click()
    _until(page, "document.querySelector('#speak-progress').innerText.startsWith('Step')", timeout=30, polling=0.02)
    page.locator("#speak-stop").click()
    _until(page, "document.querySelector('#speak-progress').innerText.includes('Stopped')", timeout=10)
    page.wait_for_timeout(1000)
    assert "Stopped" in page.locator("#speak-progress").inner_text()  # no later step overwrote it: the run ended
    assert "RTF" not in page.locator("#speak-info").inner_text()
    _screenshot(page, artifacts_dir / "browser-speak-stopped.png")
    steps.fill("32")
    page.locator("#speak-text textarea").fill("After the stop.")
    page.locator("#speak-go").click()
    _until(page, "document.querySelector('#speak-info').innerText.includes('RTF')", timeout=60)


def test_clone_from_an_uploaded_reference(page, reference, artifacts_dir):
    _tab(page, "Clone", "#clone-ref input[type=file]")
    page.locator("#clone-ref input[type=file]").set_input_files(reference)
    _until(page, "document.querySelector('#clone-note').innerText.includes('48000 Hz')", timeout=30)
    page.locator("#clone-transcript textarea").fill("One two three four.")
    page.locator("#clone-text textarea").fill("Hello in the cloned voice.")
    page.locator("#clone-go").click()  # consent not ticked yet: a message, no run
    page.locator("[data-testid=toast-body]", has_text="I have the right to use this voice” first").first.wait_for(
        timeout=20 * SECONDS)
    assert "RTF" not in page.locator("#clone-info").inner_text()
    page.locator("#clone-consent input").check()
    page.locator("#clone-go").click()
    _until(page, "document.querySelector('#clone-info').innerText.includes('RTF')", timeout=60)
    # the consent toast went with the new run: it does not stand over the successful one
    assert page.locator("[data-testid=toast-body]", has_text="I have the right to use this voice").count() == 0
    page.locator('#clone-audio a.download-link[href*="gradio_api/file="]').wait_for(state="attached",
                                                                                   timeout=20 * SECONDS)
    page.locator("#clone-name textarea, #clone-name input").fill("Browser voice")
    page.locator("#clone-save").click()
    _until(page, "document.querySelector('#clone-saved').innerText.includes('Saved the voice')", timeout=30)
    _screenshot(page, artifacts_dir / "browser-clone.png")


def test_the_saved_voice_panel_renames_and_exports(page, artifacts_dir):
    """Issue 19: saved voices can be renamed, deleted, exported and imported in the Clone tab."""
    _tab(page, "Clone", "#voices-panel")
    page.locator("#voices-panel").get_by_text("Saved voices").first.click()   # opening it lists the voices
    page.locator("#voices-new-name textarea, #voices-new-name input").fill("Browser voice renamed")
    _until(page, "document.querySelector('#voices-pick input')?.value === 'Browser voice'", timeout=20)
    page.locator("#voices-rename").click()
    _until(page, "document.querySelector('#voices-status').innerText.includes('Renamed')", timeout=20)
    page.locator("#voices-export").click()
    _until(page, "document.querySelector('#voices-exported').innerText.includes('.npz')", timeout=20)
    _screenshot(page, artifacts_dir / "browser-voices.png")
    page.locator("#voices-delete").click()
    # it asks first: nothing is deleted until "Yes, delete it"
    page.locator("#voices-delete-confirm").wait_for(state="visible", timeout=20 * SECONDS)
    assert "cannot be undone" in page.locator("#voices-status").inner_text()
    assert "Deleted the voice" not in page.locator("#voices-status").inner_text()
    page.locator("#voices-delete-confirm").click()
    _until(page, "document.querySelector('#voices-status').innerText.includes('Deleted the voice')", timeout=20)
    page.locator("#voices-delete").click()   # nothing picked any more: a message, and the lists stay usable
    _until(page, "document.querySelector('#voices-status').innerText.includes('Not done')", timeout=20)
    assert "Error" not in page.locator("#speak-voice").inner_text()


def test_codec_round_trip_of_an_upload(page, reference, artifacts_dir):
    _tab(page, "Codec", "#codec-in input[type=file]")
    page.locator("#codec-in input[type=file]").set_input_files(reference)
    page.locator('#codec-in a.download-link[href*="gradio_api/file="]').wait_for(state="attached",
                                                                                timeout=30 * SECONDS)
    page.locator("#codec-go").click()
    _until(page, "document.querySelector('#codec-stats').innerText.includes('frames')", timeout=60)
    page.locator('#codec-out a.download-link[href*="gradio_api/file="]').wait_for(state="attached",
                                                                                 timeout=20 * SECONDS)
    assert page.locator("#codec-grid img").count() >= 1
    stats = page.locator("#codec-stats").inner_text()
    assert "75 frames" in stats and "kbit/s" in stats and "log-mel" in stats
    _screenshot(page, artifacts_dir / "browser-codec.png")


def test_benchmark_and_model_tabs(page, artifacts_dir):
    _tab(page, "Benchmark", "#bench-go")
    # issue 19: the model list started unticked while the run took the active model; now what runs is ticked
    assert page.locator("#bench-models input[type=checkbox]:checked").count() == 1
    page.locator("#bench-go").click()
    _until(page, "document.body.innerText.includes('Machine:')", timeout=60)
    _until(page, "(() => { const i = document.querySelector('#bench-chart img'); "
                 "return !!i && i.complete && i.naturalWidth > 0; })()", timeout=20)
    assert "per_step_ms" in page.locator("#bench-table").inner_text()
    page.wait_for_timeout(500)  # the picture fades in
    _screenshot(page, artifacts_dir / "browser-benchmark.png")
    # quality against the exact model: the same table as omnivoice eval
    page.locator("#quality-go").click()
    # the finished table (while it runs, the progress line names the candidate too: "Generating fast ...")
    # (the empty table shows its headers already: wait for the report file, given with the finished table)
    _until(page, "!!document.querySelector('#quality-report a')", timeout=240)
    table = page.locator("#quality-table").inner_text()
    assert "codes agreement" in table and "exact" in table and "balanced" in table
    _screenshot(page, artifacts_dir / "browser-benchmark-quality.png")
    _tab(page, "Model", "#model-details")
    assert "licence" in page.locator("#model-details").inner_text()
    # load the model again from the Model tab: the bar follows the background load to "ready"
    page.evaluate(WATCH_MODEL_BAR)
    page.locator("#model-load").click()
    _until(page, "window.__ovBar.some(t => t.includes('loading'))", timeout=20)
    _until(page, "window.__ovBar.length > 0 && window.__ovBar[window.__ovBar.length - 1].includes('ready') && "
                 "!window.__ovBar[window.__ovBar.length - 1].includes('loading')", timeout=60)
    _screenshot(page, artifacts_dir / "browser-model.png")


def test_the_model_tab_button_appears_once_after_clicks(page):
    """Issue 19: a gr.Timer made directly in gr.Tabs added a second "Model" tab button on each click."""
    for _ in range(3):
        _tab(page, "Model", "#model-details")
        _tab(page, "Speak", "#speak-text")
    assert page.get_by_role("tab", name="Model", exact=True).count() == 1
    # Gradio keeps one hidden copy of every tab's button (for its overflow menu): as many for Model as for Clone
    count = "(name) => [...document.querySelectorAll('button')].filter(b => b.innerText.trim() === name).length"
    assert page.evaluate(count, "Model") == page.evaluate(count, "Clone") == 2


def test_a_tag_button_inserts_the_tag_as_a_word(page):
    """Issue 19: the tag buttons inserted without a space ("funny[laughter]")."""
    _tab(page, "Speak", "#speak-text")
    box = page.locator("#speak-text textarea")
    box.fill("That was funny")
    box.evaluate("b => { b.focus(); b.setSelectionRange(b.value.length, b.value.length); }")
    page.locator("#speak-text").locator("xpath=ancestor::div[contains(@class,'column')][1]") \
        .get_by_role("button", name="[laughter]", exact=True).first.click()
    _until(page, "document.querySelector('#speak-text textarea').value.includes('[laughter]')", timeout=10)
    assert box.input_value() == "That was funny [laughter]"
    box.evaluate("b => { b.focus(); b.setSelectionRange(4, 4); }")   # "That| was": a word on each side
    page.locator("#speak-text").locator("xpath=ancestor::div[contains(@class,'column')][1]") \
        .get_by_role("button", name="[sigh]", exact=True).first.click()
    _until(page, "document.querySelector('#speak-text textarea').value.includes('[sigh]')", timeout=10)
    assert box.input_value() == "That [sigh] was funny [laughter]"


def test_stop_after_a_finished_run_and_a_failed_run_say_what_happened(page):
    """Issue 19: Stop after a finished run said "The generation was cancelled", and a failed run left the
    previous "Done" and its audio on screen."""
    _tab(page, "Speak", "#speak-text")
    page.locator("#speak-text textarea").fill("A short finished run.")
    # the previous test's run left "Done" and its RTF on screen: wait for this run's steps, then its "Done"
    page.evaluate(WATCH_PROGRESS, "speak")
    page.locator("#speak-go").click()
    _until(page, "window.__ovProgress.some(t => t.startsWith('Step'))"
                 " && document.querySelector('#speak-progress').innerText.includes('Done')", timeout=60)
    _until(page, "document.querySelector('#speak-info').innerText.includes('RTF')", timeout=30)
    done = page.locator("#speak-progress").inner_text()
    page.locator("#speak-stop").click()
    page.wait_for_timeout(1500)
    assert "Stopped" not in page.locator("#speak-progress").inner_text() and \
        page.locator("#speak-progress").inner_text() == done
    page.locator("#speak-text textarea").fill("   ")                 # an empty text: the run is refused
    page.locator("#speak-go").click()
    _until(page, "document.querySelector('#speak-progress').innerText.includes('Not run')", timeout=30)
    assert "RTF" not in page.locator("#speak-info").inner_text()
    assert page.locator("#speak-audio audio").count() == 0
