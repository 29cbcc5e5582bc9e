"""A small Chrome DevTools Protocol client over ``--remote-debugging-pipe`` (standard library only).

Debian's ``chromium`` is driven directly: no chromedriver, no selenium, no
websocket library.  Chromium reads commands (JSON, each ending in a NUL byte)
from its file descriptor 3 and writes answers and events to descriptor 4.

    with Browser.launch() as browser:
        page = browser.new_page("http://127.0.0.1:7860/")
        page.wait_for("document.querySelector('#speak-go') !== null")
        page.screenshot("shot.png")
"""

from __future__ import annotations

import base64
import json
import os
import pathlib
import select
import shutil
import subprocess
import tempfile
import time
from typing import Any, Optional

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--autoplay-policy=no-user-gesture-required", "--mute-audio",
         "--window-size=1280,1600", "--remote-debugging-pipe"]


def find_chromium() -> Optional[str]:
    for name in CHROMIUM_NAMES:
        path = shutil.which(name)
        if path:
            return path
    for path in ("/usr/bin/chromium", "/usr/lib/chromium/chromium"):
        if os.path.exists(path):
            return path
    return None


def _high_fd(fd: int) -> int:
    import fcntl

    high = fcntl.fcntl(fd, fcntl.F_DUPFD, 10)
    os.close(fd)
    return high


class CDPError(RuntimeError):
    pass


class Browser:
    def __init__(self, process: subprocess.Popen, to_browser: int, from_browser: int, profile: str):
        self.process, self.to_browser, self.from_browser, self.profile = process, to_browser, from_browser, profile
        self._next_id = 0
        self._buffer = b""
        self.events: list[dict] = []

    @classmethod
    def launch(cls, executable: Optional[str] = None, extra_flags: tuple[str, ...] = ()) -> "Browser":
        executable = executable or find_chromium()
        if executable is None:
            raise FileNotFoundError("chromium is not installed")
        profile = tempfile.mkdtemp(prefix="omnivoice-chromium-")
        cmd_read, cmd_write = os.pipe()     # we write commands, chromium reads them on fd 3
        out_read, out_write = os.pipe()     # chromium writes on fd 4, we read
        # the child's ends move above 9, so that the redirections below cannot clobber them
        cmd_read, out_write = (_high_fd(fd) for fd in (cmd_read, out_write))
        script = f'exec "$0" "$@" 3<&{cmd_read} 4>&{out_write} {cmd_read}<&- {out_write}>&-'
        process = subprocess.Popen(
            ["bash", "-c", script, executable, *FLAGS, f"--user-data-dir={profile}", *extra_flags, "about:blank"],
            pass_fds=(cmd_read, out_write), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL)
        os.close(cmd_read)
        os.close(out_write)
        return cls(process, cmd_write, out_read, profile)

    # --- protocol ---------------------------------------------------------------------------

    def _read_message(self, timeout: float) -> Optional[dict]:
        deadline = time.monotonic() + timeout
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([self.from_browser], [], [], left)
            if not ready:
                return None
            chunk = os.read(self.from_browser, 1 << 20)
            if not chunk:
                raise CDPError("chromium closed the pipe (it exited?)")
            self._buffer += chunk
        raw, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(raw)

    def send(self, method: str, params: Optional[dict] = None, session: Optional[str] = None,
             timeout: float = 30.0) -> dict:
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self.to_browser, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            reply = self._read_message(max(0.0, deadline - time.monotonic()))
            if reply is None:
                raise CDPError(f"no answer to {method} within {timeout} s")
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise CDPError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)
            del self.events[:-500]

    def new_page(self, url: str) -> "Page":
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        page = Page(self, session)
        page.send("Page.enable")
        page.send("Runtime.enable")
        page.send("Emulation.setDeviceMetricsOverride",
                  {"width": 1280, "height": 1600, "deviceScaleFactor": 1, "mobile": False})
        page.navigate(url)
        return page

    def close(self) -> None:
        try:
            self.send("Browser.close", timeout=5)
        except (CDPError, OSError):
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        for fd in (self.to_browser, self.from_browser):
            try:
                os.close(fd)
            except OSError:
                pass
        shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Page:
    def __init__(self, browser: Browser, session: str):
        self.browser, self.session = browser, session

    def send(self, method: str, params: Optional[dict] = None, timeout: float = 30.0) -> dict:
        return self.browser.send(method, params, session=self.session, timeout=timeout)

    def navigate(self, url: str) -> None:
        self.send("Page.navigate", {"url": url})

    def evaluate(self, expression: str, timeout: float = 30.0) -> Any:
        result = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                                "awaitPromise": True}, timeout=timeout)
        if "exceptionDetails" in result:
            raise CDPError(f"JS error in {expression[:80]!r}: {result['exceptionDetails'].get('text')} "
                           f"{result['exceptionDetails'].get('exception', {}).get('description', '')}")
        return result.get("result", {}).get("value")

    def wait_for(self, expression: str, timeout: float = 30.0, interval: float = 0.1) -> Any:
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            last = self.evaluate(expression)
            if last:
                return last
            time.sleep(interval)
        raise TimeoutError(f"waited {timeout} s for {expression!r} (last value {last!r})")

    def set_files(self, selector: str, paths: list[str]) -> None:
        """Put files into an <input type=file> (what choosing them in the file dialog does)."""
        found = self.send("Runtime.evaluate", {"expression": f"document.querySelector({json.dumps(selector)})"})
        object_id = found.get("result", {}).get("objectId")
        if not object_id:
            raise CDPError(f"no element matches {selector!r}")
        self.send("DOM.setFileInputFiles", {"files": [str(p) for p in paths], "objectId": object_id})

    def screenshot(self, path: str | pathlib.Path) -> pathlib.Path:
        data = self.send("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True})["data"]
        path = pathlib.Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(data))
        return path
