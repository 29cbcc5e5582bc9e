"""Headless Chromium driven by Playwright (Python), launched from the system's executable.

No ``playwright install`` download: the browser is the one on the machine
(Debian's ``chromium``; ``bash scripts/setup_dev.sh`` installs it with apt-get),
passed to Playwright by its path.

    with chromium_page("http://127.0.0.1:7860/") as page:
        page.locator("#speak-go").wait_for()
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shutil
from typing import Iterator, Optional

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
#: the page plays audio chunks by itself (no click first) and must stay silent
FLAGS = ["--autoplay-policy=no-user-gesture-required", "--mute-audio", "--disable-dev-shm-usage"]
VIEWPORT = {"width": 1280, "height": 1600}


def find_chromium() -> Optional[str]:
    for name in CHROMIUM_NAMES:
        path = shutil.which(name)
        if path:
            return path
    for path in ("/usr/bin/chromium", "/usr/lib/chromium/chromium"):
        if os.path.exists(path):
            return path
    return None


def missing() -> Optional[str]:
    """Why the browser tests cannot run here, or None when they can."""
    if importlib.util.find_spec("playwright") is None:
        return "playwright is not installed; `bash scripts/setup_dev.sh` installs it (requirements-dev.txt)"
    if find_chromium() is None:
        return "chromium is not installed; `bash scripts/setup_dev.sh` installs it (apt-get install chromium)"
    return None


@contextlib.contextmanager
def chromium_page(url: str) -> Iterator["playwright.sync_api.Page"]:  # noqa: F821
    """A page of a fresh headless Chromium at ``url``; the browser is closed afterwards."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=find_chromium(), args=FLAGS)
        try:
            page = browser.new_page(viewport=VIEWPORT)
            page.goto(url)
            yield page
        finally:
            browser.close()
