"""The Book tab in a real headless browser: upload an EPUB written here, see its chapters and sentence counts,
make it, listen to a finished chapter and download the M4B (its chapters read back with PyAV); and the app's
book jobs pause after the sentence in flight and resume reusing every sentence made.

Slow (the app in a subprocess, shared with the other app tests); the browser part is skipped, saying so,
where Playwright or Chromium is missing.
"""

from __future__ import annotations

import threading
import time
import urllib.parse
import urllib.request

import pytest

from tests.support.books import write_epub3
from tests.support.browser import chromium_page, missing
from tests.test_app_browser import app  # noqa: F401 - the app shared by the app tests (a fixture)

pytestmark = pytest.mark.slow
av = pytest.importorskip("av")
pytest.importorskip("ebooklib")

SECONDS = 1000
CHAPTERS = [("The Harbour", ["Anna walked to the harbour. The boats were in."]),
            ("The Storm", ["The wind rose at night."]),
            ("The Morning", ["All was calm again."])]
STATUS = "document.querySelector('#book-status').innerText"


def test_the_book_tab_makes_an_m4b_and_plays_a_chapter(app, tmp_path, artifacts_dir):  # noqa: F811
    if missing() is not None:
        pytest.skip(missing())
    book = write_epub3(tmp_path / "harbour.epub", CHAPTERS)
    with chromium_page(app.url) as page:
        page.locator("#speak-go").wait_for(state="attached", timeout=60 * SECONDS)
        page.wait_for_function("document.querySelector('#model-bar').innerText.includes('ready')",
                               timeout=60 * SECONDS)
        page.get_by_role("tab", name="Book").click()
        page.locator("#book-file input[type=file]").set_input_files(str(book))
        page.wait_for_function("document.querySelector('#book-summary').innerText.includes('3 chapters')",
                               timeout=60 * SECONDS)
        summary = page.locator("#book-summary").inner_text()
        assert "The Test Book" in summary and "Ada Author" in summary and "7 sentences" in summary
        cells = [c.strip() for c in page.locator("#book-chapters").inner_text().split("\n") if c.strip()]
        assert cells[cells.index("1"):cells.index("1") + 4] == ["1", "The Harbour", "3", "0"]   # #, title, sentences, made
        assert "The Storm" in cells and "The Morning" in cells
        steps = page.locator("#book-steps input[type=number]")
        steps.fill("4")
        steps.press("Enter")
        page.locator("#book-guard input[type=checkbox]").uncheck()
        page.locator("#book-start").click()
        page.wait_for_function(f"{STATUS}.includes('done')", timeout=240 * SECONDS)
        assert "7 of 7 sentences" in page.evaluate(STATUS) and "made 7" in page.evaluate(STATUS)
        cells = [c.strip() for c in page.locator("#book-chapters").inner_text().split("\n") if c.strip()]
        assert cells[cells.index("1"):cells.index("1") + 4] == ["1", "The Harbour", "3", "3"]
        page.wait_for_function("document.querySelector('#book-m4b a') !== null", timeout=30 * SECONDS)
        href = page.locator("#book-m4b a").first.get_attribute("href")
        assert "The Test Book-" in urllib.parse.unquote(href), href   # named after the book (issue 51)
        page.locator("#book-pick input").click()
        page.get_by_role("option", name="2. The Storm").click()
        # the player shows the chapter's length once it has its audio
        page.wait_for_function("/0:0[1-9]|0:[1-5][0-9]/.test(document.querySelector('#book-player').innerText)",
                               timeout=30 * SECONDS)
        page.screenshot(path=str(artifacts_dir / "browser-book.png"), full_page=True)
        # the chapters to make, chosen in the tab as the CLI's --chapters: the plan has only them, numbered as in the book
        page.locator("#book-chapter-choice textarea, #book-chapter-choice input").first.fill("2-3")
        page.locator("#book-chapter-choice textarea, #book-chapter-choice input").first.press("Enter")
        page.wait_for_function("document.querySelector('#book-summary').innerText.includes('2 chapters')",
                               timeout=60 * SECONDS)
        cells = [c.strip() for c in page.locator("#book-chapters").inner_text().split("\n") if c.strip()]
        assert "The Storm" in cells and "The Morning" in cells and "The Harbour" not in cells, cells
    target = tmp_path / "got.m4b"
    with urllib.request.urlopen(href if href.startswith("http") else app.url.rstrip("/") + href) as response:
        target.write_bytes(response.read())
    with av.open(str(target)) as container:
        titles = [c["metadata"]["title"] for c in container.chapters()]
    assert titles == ["The Harbour", "The Storm", "The Morning"]


def test_a_book_job_pauses_after_the_sentence_in_flight_and_resumes_reusing_it(tiny_fp32_folder, tmp_path):
    from omnivoice_demo.book.jobs import BookJobs
    from omnivoice_demo.book.project import BookSettings
    from omnivoice_demo.book.voices import Voicing
    from omnivoice_demo.settings.generation import GenerationConfig
    from omnivoice_demo.engine.loop import OmniVoiceEngine

    class Loaded:   # what the studio's model manager hands out: an engine and its lock
        engine = OmniVoiceEngine(tiny_fp32_folder, verify="size", calibrate=False, backbone="fp32")
        lock = threading.Lock()

    book = write_epub3(tmp_path / "b.epub", [(f"Part {n}", [f"Sentence number {n} is here. And one more."])
                                             for n in range(1, 6)])
    jobs = BookJobs(tmp_path / "books", shared=False)
    settings = BookSettings(config=GenerationConfig(num_step=2), narrator=Voicing("default"), readalong=False)
    job = jobs.open(None, str(book), settings)
    total = len(job.plan.items)
    jobs.start(None, Loaded)
    while sum(r["made"] for r in job.chapters()) < 1:
        time.sleep(0.02)
    jobs.pause(None)
    job.thread.join(120)
    made = sum(r["made"] for r in job.chapters())
    assert job.state == "paused" and 1 <= made < total and job.result.output is None
    jobs.start(None, Loaded)
    job.thread.join(300)
    assert job.state == "done" and job.result.reused >= made and job.result.made + job.result.reused == total
    assert job.result.output.endswith(".m4b")


def test_the_tabs_chapter_choice_and_chapter_voices_reach_the_plan(tiny_fp32_folder, tmp_path):
    """The Book tab's "Chapters" and "Chapter voices" boxes (its settings and the job it opens; the browser test
    above types a choice): a description with commas of its own is one entry, the chapters chosen keep their
    numbers in the book (issue 51: a book made in parts; the voices name them so), and a voice for a chapter the
    book does not have is refused with the range."""
    import types

    from omnivoice_demo.book.jobs import BookJobs
    from omnivoice_demo.errors import InvalidInput
    from omnivoice_demo.ui.tabs.book import settings_of

    studio = types.SimpleNamespace(shared=True)   # a shared server: designs and descriptions only
    book = write_epub3(tmp_path / "b.epub", CHAPTERS)
    settings = settings_of(studio, "alloy", None, "", "2=nova, 3=female, low pitch", 4, False)
    assert settings.chapter_voices[2].name == "nova" and "low pitch" in settings.chapter_voices[3].instruct
    job = BookJobs(tmp_path / "books", shared=True).open("visitor", str(book), settings, chapters="3,2")
    assert [c.title for c in job.plan.book.chapters] == ["The Storm", "The Morning"]
    assert [row["number"] for row in job.chapters()] == [2, 3]   # the table's numbers, as in the book
    by_chapter = {s.chapter: s.item_id for s in job.plan.sentences}
    voices = {item.id: item.instruct for item in job.plan.items}
    assert voices[by_chapter[2]] != voices[by_chapter[3]] and "low pitch" in voices[by_chapter[3]]
    with pytest.raises(InvalidInput, match="chapters 1-3"):
        BookJobs(tmp_path / "books", shared=True).open(
            "visitor", str(book), settings_of(studio, "alloy", None, "", "4=nova", 4, False), chapters="2-3")
    with pytest.raises(InvalidInput, match="numbered from 1"):   # before the book is read: not "chapters 1-0"
        settings_of(studio, "alloy", None, "", "0=nova", 4, False)
    with pytest.raises(InvalidInput, match="outside the book's chapters 1-3"):
        BookJobs(tmp_path / "books", shared=True).open("visitor", str(book), settings, chapters="2-4")

