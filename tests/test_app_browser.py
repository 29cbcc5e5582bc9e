"""A real headless browser (Debian's chromium, over the DevTools protocol) on ``python app.py``.

Runs Speak (the code-grid picture must change while the run goes on; a long
text's chunks must be offered before the run ends), Clone with an uploaded
reference, Codec with an uploaded clip, and a Benchmark; checks that audio
appears, and keeps screenshots in test-artifacts/browser-*.png.

Needs chromium (``bash scripts/setup_dev.sh`` installs it with apt-get); skipped,
saying so, where it is missing.
"""

from __future__ import annotations

import json
import time

import pytest
import soundfile as sf

from tests.support.app_server import shared_app, wait_model_ready
from tests.support.cdp import Browser, find_chromium
from tests.support.signals import speech_like

pytestmark = pytest.mark.skipif(
    find_chromium() is None,
    reason="chromium is not installed; `bash scripts/setup_dev.sh` installs it (apt-get install chromium)")

#: about 30 s of speech: three chunks
LONG_TEXT = " ".join(f"Sentence number {n} of the long text goes on for a while here." for n in
                     ("one", "two", "three", "four", "five", "six", "seven", "eight"))

SET_VALUE = """((selector, value) => {
    const el = document.querySelector(selector);
    const proto = el.tagName === 'TEXTAREA' ? HTMLTextAreaElement.prototype : HTMLInputElement.prototype;
    Object.getOwnPropertyDescriptor(proto, 'value').set.call(el, value);
    el.dispatchEvent(new Event('input', {bubbles: true}));
    el.dispatchEvent(new Event('change', {bubbles: true}));
    return true;
})"""

# every change of the grid picture, with the progress text at that moment
WATCH_GRID = """((prefix) => {
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
    return true;
})"""

# when the first chunk appears: was the final result already there?
WATCH_CHUNKS = """(() => {
    window.__ovFirstChunk = null;
    const root = document.querySelector('#speak-chunks');
    new MutationObserver(() => {
        if (window.__ovFirstChunk === null && root.querySelector('audio[data-ov-chunk]')) {
            window.__ovFirstChunk = {doneAlready: document.querySelector('#speak-info').innerText.includes('RTF'),
                                     progress: document.querySelector('#speak-progress').innerText};
        }
    }).observe(root, {subtree: true, childList: true});
    return true;
})()"""


def _set(page, selector: str, value: str) -> None:
    page.evaluate(f"{SET_VALUE}({json.dumps(selector)}, {json.dumps(value)})")


def _click(page, selector: str) -> None:
    page.evaluate(f"document.querySelector({json.dumps(selector)}).click()")


def _tab(page, name: str, ready_selector: str) -> None:
    page.evaluate(f"[...document.querySelectorAll('button[role=tab]')].find(b => b.innerText.trim() === "
                  f"{json.dumps(name)}).click()")
    page.wait_for(f"document.querySelector({json.dumps(ready_selector)}) !== null", timeout=10)


def _text(page, selector: str) -> str:
    return page.evaluate(f"(document.querySelector({json.dumps(selector)}) || {{innerText: ''}}).innerText")


@pytest.fixture(scope="module")
def app(tiny_fp32_folder, tmp_path_factory, request):
    from gradio_client import Client

    app = shared_app(tiny_fp32_folder, tmp_path_factory.mktemp("app"), request.config)
    wait_model_ready(Client(app.url, verbose=False))
    return app


@pytest.fixture(scope="module")
def page(app):
    with Browser.launch() as browser:
        page = browser.new_page(app.url)
        page.wait_for("document.querySelector('#speak-go') !== null", timeout=60)
        page.wait_for("document.querySelector('#model-bar').innerText.includes('ready')", timeout=60)
        yield page


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("browser-ref") / "reference.flac"
    sf.write(path, speech_like(3.0, 48000, seed=7, channels=2).T, 48000)
    return str(path)


def test_speak_shows_the_grid_filling_in_and_the_audio(page, artifacts_dir):
    _set(page, "#speak-text textarea", "Hello there. This is the browser test of the code grid, step by step.")
    page.evaluate(f"{WATCH_GRID}('speak')")
    _click(page, "#speak-go")
    shot = False
    deadline = time.monotonic() + 60
    while not page.evaluate("document.querySelector('#speak-info').innerText.includes('RTF')"):
        if not shot and page.evaluate("window.__ovGrid.some(g => g.progress.includes('Step'))"):
            page.screenshot(artifacts_dir / "browser-speak-running.png")
            shot = True
        assert time.monotonic() < deadline, "the Speak run did not finish"
        time.sleep(0.05)
    page.wait_for("!!document.querySelector('#speak-audio a.download-link[href*=\"gradio_api/file=\"]')", timeout=20)
    page.screenshot(artifacts_dir / "browser-speak.png")
    grids = page.evaluate("window.__ovGrid")
    during = [g for g in grids if g["progress"].startswith("Step")]
    assert len({g["src"] for g in grids}) >= 3 and len({g["src"] for g in during}) >= 2, grids
    info = _text(page, "#speak-info")
    seed = page.evaluate("document.querySelector('#speak-seed input').value")
    assert f"seed {seed}" in info
    files = _text(page, "#speak-files").replace("\n", "")
    assert ".wav" in files and ".flac" in files and ".codes.npz" in files


def test_speak_plays_the_first_chunks_before_the_last_is_done(page, artifacts_dir):
    page.evaluate("document.querySelector('#speak-advanced button.label-wrap').click()")
    page.wait_for("document.querySelector('#speak-num-step input[type=number]') !== null", timeout=10)
    _set(page, "#speak-num-step input[type=number]", "1")
    _set(page, "#speak-text textarea", LONG_TEXT)
    page.wait_for("document.querySelector('#speak-text-info').innerText.includes('chunks')", timeout=10)
    page.evaluate(WATCH_CHUNKS)
    _click(page, "#speak-go")
    page.wait_for("document.querySelector('#speak-info').innerText.includes('3 chunks')", timeout=90)
    page.screenshot(artifacts_dir / "browser-speak-chunks.png")
    first = page.evaluate("window.__ovFirstChunk")
    assert first is not None and not first["doneAlready"], first
    assert page.evaluate("document.querySelectorAll('#speak-chunks audio[data-ov-chunk]').length") == 3
    assert page.evaluate("window.__ovChunks.played.length") >= 1  # the page's player started the first chunk
    _set(page, "#speak-num-step input[type=number]", "32")  # back to the default


def test_stop_cancels_a_run_and_the_next_run_works(page, artifacts_dir):
    _set(page, "#speak-text textarea", LONG_TEXT)
    _set(page, "#speak-num-step input[type=number]", "64")
    _click(page, "#speak-go")
    page.wait_for("document.querySelector('#speak-progress').innerText.startsWith('Step')", timeout=30, interval=0.02)
    _click(page, "#speak-stop")
    page.wait_for("document.querySelector('#speak-progress').innerText.includes('Stopped')", timeout=10)
    time.sleep(1.0)
    assert "Stopped" in _text(page, "#speak-progress")  # no later step overwrote it: the run ended
    assert "RTF" not in _text(page, "#speak-info")
    page.screenshot(artifacts_dir / "browser-speak-stopped.png")
    _set(page, "#speak-num-step input[type=number]", "32")
    _set(page, "#speak-text textarea", "After the stop.")
    _click(page, "#speak-go")
    page.wait_for("document.querySelector('#speak-info').innerText.includes('RTF')", timeout=60)


def test_clone_from_an_uploaded_reference(page, reference, artifacts_dir):
    _tab(page, "Clone", "#clone-ref input[type=file]")
    page.set_files("#clone-ref input[type=file]", [reference])
    page.wait_for("document.querySelector('#clone-note').innerText.includes('48000 Hz')", timeout=30)
    _set(page, "#clone-transcript textarea", "One two three four.")
    _set(page, "#clone-text textarea", "Hello in the cloned voice.")
    _click(page, "#clone-go")  # consent not ticked yet: a message, no run
    page.wait_for("[...document.querySelectorAll('[data-testid=toast-body]')].some(t => "
                  "t.innerText.includes('I have the right to use this voice” first'))", timeout=20)
    assert not page.evaluate("document.querySelector('#clone-info').innerText.includes('RTF')")
    page.evaluate("document.querySelectorAll('[data-testid=toast-close]').forEach(b => b.click())")
    _click(page, "#clone-consent input")
    _click(page, "#clone-go")
    page.wait_for("document.querySelector('#clone-info').innerText.includes('RTF')", timeout=60)
    page.wait_for("!!document.querySelector('#clone-audio a.download-link[href*=\"gradio_api/file=\"]')", timeout=20)
    _set(page, "#clone-name textarea, #clone-name input", "Browser voice")
    _click(page, "#clone-save")
    page.wait_for("document.querySelector('#clone-saved').innerText.includes('Saved the voice')", timeout=30)
    page.screenshot(artifacts_dir / "browser-clone.png")


def test_codec_round_trip_of_an_upload(page, reference, artifacts_dir):
    _tab(page, "Codec", "#codec-in input[type=file]")
    page.set_files("#codec-in input[type=file]", [reference])
    page.wait_for("!!document.querySelector('#codec-in a.download-link[href*=\"gradio_api/file=\"]')", timeout=30)
    _click(page, "#codec-go")
    page.wait_for("document.querySelector('#codec-stats').innerText.includes('frames')", timeout=60)
    page.wait_for("!!document.querySelector('#codec-out a.download-link[href*=\"gradio_api/file=\"]')", timeout=20)
    assert page.evaluate("!!document.querySelector('#codec-grid img')")
    stats = _text(page, "#codec-stats")
    assert "75 frames" in stats and "kbit/s" in stats and "log-mel" in stats
    page.screenshot(artifacts_dir / "browser-codec.png")


def test_benchmark_and_model_tabs(page, artifacts_dir):
    _tab(page, "Benchmark", "#bench-go")
    _click(page, "#bench-go")
    page.wait_for("document.body.innerText.includes('Machine:')", timeout=60)
    page.wait_for("(() => { const i = document.querySelector('#bench-chart img'); "
                  "return !!i && i.complete && i.naturalWidth > 0; })()", timeout=20)
    assert "per_step_ms" in _text(page, "#bench-table")
    time.sleep(0.5)  # the picture fades in
    page.screenshot(artifacts_dir / "browser-benchmark.png")
    _tab(page, "Model", "#model-details")
    assert "licence" in _text(page, "#model-details")
    # load the model again from the Model tab: the bar follows the background load to "ready"
    page.evaluate("window.__ovBar = []; new MutationObserver(() => window.__ovBar.push("
                  "document.querySelector('#model-bar').innerText)).observe(document.querySelector('#model-bar'), "
                  "{subtree: true, childList: true, characterData: true})")
    _click(page, "#model-load")
    page.wait_for("window.__ovBar.some(t => t.includes('loading'))", timeout=20)
    page.wait_for("window.__ovBar.length > 0 && window.__ovBar[window.__ovBar.length - 1].includes('ready') && "
                  "!window.__ovBar[window.__ovBar.length - 1].includes('loading')", timeout=60)
    page.screenshot(artifacts_dir / "browser-model.png")
