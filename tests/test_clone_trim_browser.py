""""Keep the best 10 s" in a real browser: a 27 s clip is uploaded to the Clone tab, the button appears, and a click
puts the kept part (9.8 s, three bursts cut in pauses) in place of the clip, whose note is redrawn and whose
recognition runs again (this app has no recogniser: the note says so, for the kept clip).  Gradio itself moves
the kept file into its cache, which the handler tests cannot show.  Screenshot: browser-clone-trim.png.

Needs the ``playwright`` package and chromium; skipped, saying so, where one is missing."""

from __future__ import annotations

import pytest
import soundfile as sf

from tests.support.app_server import shared_app, wait_model_ready
from tests.support.browser import chromium_page, missing
from tests.support.signals import DENSE_MIDDLE, bursts

pytestmark = [pytest.mark.slow, pytest.mark.skipif(missing() is not None, reason=missing() or "")]

SECONDS = 1000  # Playwright's timeouts are in milliseconds
NOTE = "document.querySelector('#clone-note').innerText"


@pytest.fixture(scope="module")
def app(tiny_fp32_folder, tmp_path_factory, request):
    from gradio_client import Client

    app = shared_app(tiny_fp32_folder, tmp_path_factory.mktemp("app"), request.config)
    wait_model_ready(Client(app.url, verbose=False))
    return app


def test_keep_the_best_ten_seconds_replaces_the_clip(app, tmp_path, artifacts_dir):
    clip = tmp_path / "long.wav"
    sf.write(clip, bursts(DENSE_MIDDLE, 16000)[0][0], 16000)
    with chromium_page(app.url) as page:
        page.get_by_role("tab", name="Clone", exact=True).click()
        page.locator("#clone-ref input[type=file]").set_input_files(str(clip))
        page.wait_for_function(f"{NOTE}.includes('Reference: 27.1 s') && {NOTE}.includes('Keep the best 10 s')",
                               timeout=30 * SECONDS)
        button = page.locator("#clone-trim")
        button.wait_for(state="visible", timeout=10 * SECONDS)
        button.click()
        page.wait_for_function(f"{NOTE}.includes('Reference: 9.8 s')", timeout=30 * SECONDS)
        button.wait_for(state="hidden", timeout=10 * SECONDS)
        page.screenshot(path=str(artifacts_dir / "browser-clone-trim.png"), full_page=True)
        toasts = [t.inner_text() for t in page.locator("[data-testid=toast-body]").all()]
        assert any("Kept 9.8 s of the 27.1 s clip" in t for t in toasts), toasts
        assert not [t for t in toasts if "rror" in t], toasts
    assert "Traceback" not in app.log_text()
