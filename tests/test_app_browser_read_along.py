"""In Chromium: the Speak tab's read-along view (issue 40) follows the result player.

``python app.py`` on the tiny model with the test recogniser (a small random Whisper with alignment heads,
``OMNIVOICE_ASR_MODEL``), "Word timings (read-along)" ticked under Advanced.  Random weights attend anywhere,
so the words' times are not good ones: the test checks that the view follows the player, not where the
words are.  While the result plays, the highlighted word is the last one started by the player's time and it
moves on; after a seek to a later word's time, the highlight is on that word.  The downloads hold the word
subtitles.
"""

from __future__ import annotations

import pytest

from tests.support.app_server import AppProcess, wait_model_ready
from tests.support.browser import chromium_page, missing
from tests.test_app_browser import SECONDS, _screenshot, _until

pytestmark = [pytest.mark.slow, pytest.mark.skipif(missing() is not None, reason=str(missing()))]

TEXT = "Every word of this sentence has its own time. And the second sentence follows after it."
VIEW = "#speak-words .ov-read-along"

#: the result player's media element: WaveSurfer keeps it in an open shadow root inside #speak-audio
MEDIA = """(() => {
  const player = document.getElementById('speak-audio');
  for (const host of player.querySelectorAll('*')) {
    const inner = host.shadowRoot && host.shadowRoot.querySelector('audio');
    if (inner) return inner;
  }
  return player.querySelector('audio');
})()"""

#: every (time, highlighted word) the page shows while the media plays, and the words' starts
WATCH = """() => {
  window.__ovSeen = [];
  const media = %s;
  media.addEventListener('timeupdate', () => {
    const time = media.currentTime;
    setTimeout(() => {   // after the view's own listener, whichever was added first
      const view = document.querySelector('%s');
      window.__ovSeen.push([time, Number(view.getAttribute('data-ov-current')), view.getAttribute('data-ov-time')]);
    }, 0);
  });
}""" % (MEDIA, VIEW)


@pytest.fixture(scope="module")
def app(tiny_fp32_folder, recognizer_folder, tmp_path_factory):
    from gradio_client import Client

    server = AppProcess(["--model", str(tiny_fp32_folder), "--precision", "fp32"],
                        tmp_path_factory.mktemp("read-along"), env={"OMNIVOICE_ASR_MODEL": str(recognizer_folder)})
    try:
        server.wait_serving(timeout=180)
        wait_model_ready(Client(server.url, verbose=False))
        yield server
    finally:
        server.stop()


def _starts(page) -> list[float]:
    return page.locator(f"{VIEW} .ov-word").evaluate_all("(spans) => spans.map((s) => Number(s.dataset.start))")


def _expected(starts: list[float], time: float) -> int:
    """The word the view must highlight at ``time``: the last one started by then (-1: none yet)."""
    return max((i for i, start in enumerate(starts) if start <= time), default=-1)


def test_the_highlighted_word_follows_playback_and_seeking(app, artifacts_dir):
    with chromium_page(app.url) as page:
        page.locator("#speak-go").wait_for(state="attached", timeout=60 * SECONDS)
        _until(page, "document.querySelector('#model-bar').innerText.includes('ready')", timeout=60)
        page.locator("#speak-advanced button.label-wrap").click()
        page.locator("#speak-num-step input[type=number]").fill("2")
        page.locator("#speak-word-timestamps input[type=checkbox]").check()
        page.locator("#speak-autoplay input[type=checkbox]").uncheck()
        page.locator("#speak-text textarea").fill(TEXT)
        page.locator("#speak-go").click()
        _until(page, f"document.querySelectorAll('{VIEW} .ov-word').length > 0", timeout=120)
        words = page.locator(f"{VIEW} .ov-word").all_inner_texts()
        assert words == TEXT.split()
        starts = _starts(page)
        assert starts == sorted(starts) and len(set(starts)) >= 3, starts   # the view needs distinct times

        # the downloads hold the word subtitles beside the audio
        files = page.locator("#speak-files").inner_text().replace("\n", "")
        assert ".words.srt" in files and ".words.vtt" in files and ".wav" in files

        # playing: the highlight is the word the player's time has reached, and it moves on
        _until(page, f"!!{MEDIA} && {MEDIA}.duration > 0", timeout=30)
        page.evaluate(WATCH)
        page.locator("#speak-audio button[aria-label=Play]").click()
        _until(page, f"{MEDIA}.ended || {MEDIA}.currentTime > {min(starts[-1], starts[len(starts) // 2]) + 0.3}",
               timeout=60)
        seen = page.evaluate("window.__ovSeen")
        assert seen and all(index == _expected(starts, time) for time, index, _ in seen), (seen, starts)
        assert len({index for _, index, _ in seen if index >= 0}) >= 2, (seen, starts)   # it moved while playing
        _screenshot(page, artifacts_dir / "browser-speak-read-along.png")

        # a click on a word plays from it
        page.evaluate(f"{MEDIA}.pause(); {MEDIA}.currentTime = 0")
        _until(page, f"document.querySelector('{VIEW}').getAttribute('data-ov-current') === "
                     f"'{_expected(starts, 0.0)}'", timeout=10)
        later = next(i for i, start in enumerate(starts) if start > starts[0])     # a word after the first
        page.locator(f'{VIEW} .ov-word[data-ov-word="{later}"]').click()
        _until(page, f"{MEDIA}.currentTime >= {starts[later] - 0.001}", timeout=10)

        # seeking (paused) to a later word's time: the highlight is on the word at that time
        page.evaluate(f"{MEDIA}.pause()")
        last = max(i for i, start in enumerate(starts) if start == starts[-1])   # the last word with that start
        for index in (last, later):
            time = starts[index] + 0.01
            page.evaluate(f"{MEDIA}.currentTime = {time}")
            expected = _expected(starts, time)
            _until(page, f"document.querySelector('{VIEW}').getAttribute('data-ov-current') === '{expected}'",
                   timeout=10)
            highlighted = page.locator(f"{VIEW} .ov-word-now")
            assert highlighted.count() == 1 and highlighted.get_attribute("data-ov-word") == str(expected)
            assert expected >= index


def test_the_gradio_speak_api_returns_the_words_with_word_timings(app):
    """/speak (the Gradio API) with ``word_timestamps``: its details carry each word's times in the audio it
    returns; without it, no words."""
    import soundfile
    from gradio_client import Client

    client = Client(app.url, verbose=False)
    audio, _, info = client.predict(text="Three words here.", num_step=2, seed=3, word_timestamps=True,
                                    api_name="/speak")
    seconds = soundfile.info(audio).duration
    assert [w["word"] for w in info["words"]] == ["Three", "words", "here."], info.get("words")
    assert all(0 <= w["start"] <= w["end"] <= seconds + 1e-3 for w in info["words"])
    _, _, plain = client.predict(text="Three words here.", num_step=2, seed=3, api_name="/speak")
    assert "words" not in plain

