"""What the handlers work on: the models, the saved voices, the cloned-voice cache, where output files go."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import pathlib
import tempfile
import threading
import time
from collections import OrderedDict
from typing import Callable, Hashable, Optional

from ..errors import ResourceLimitExceeded
from ..voice import Voice
from .models import ModelManager
from .voices import VoiceLibrary


class VoiceCache:
    """The last few cloned voices by key (file content, transcript, model), so a second click does not re-encode."""

    def __init__(self, size: int = 8):
        self.size = size
        self._voices: "OrderedDict[Hashable, Voice]" = OrderedDict()
        self._lock = threading.Lock()

    def get_or_make(self, key: Hashable, make: Callable[[], Voice]) -> Voice:
        """The cached voice of ``key``, or ``make()``'s (then cached; the oldest drops out past ``size``)."""
        with self._lock:
            voice = self._voices.get(key)
        if voice is not None:
            return voice
        voice = make()
        with self._lock:
            self._voices[key] = voice
            while len(self._voices) > self.size:
                self._voices.popitem(last=False)
        return voice

    def __len__(self) -> int:
        with self._lock:
            return len(self._voices)


@dataclasses.dataclass
class Studio:
    """The app's state shared by every tab (one per server)."""

    models: ModelManager
    voices: VoiceLibrary
    out_dir: pathlib.Path = dataclasses.field(
        default_factory=lambda: pathlib.Path(tempfile.mkdtemp(prefix="omnivoice-studio-")))
    max_upload_mb: float = 50.0
    history_limit: int = 20
    min_update_interval: float = 0.08   # seconds between two step pictures sent to the browser
    keep_outputs_seconds: float = 6 * 3600
    voice_cache: VoiceCache = dataclasses.field(default_factory=VoiceCache)

    def output_path(self, stem: str, suffix: str) -> pathlib.Path:
        """A path in the output folder (old outputs are swept first)."""
        self.out_dir.mkdir(parents=True, exist_ok=True)
        self._sweep()
        return self.out_dir / f"{stem}{suffix}"

    def check_upload(self, path: str, what: str) -> None:
        """``ResourceLimitExceeded`` when the uploaded file is over ``max_upload_mb``."""
        size = os.path.getsize(path)
        if size > self.max_upload_mb * 1024 * 1024:
            raise ResourceLimitExceeded(f"The {what} is {size / 1024 / 1024:.0f} MB; the limit is "
                                        f"{self.max_upload_mb:.0f} MB. Upload a shorter clip (3-10 s of speech "
                                        "is best).", param="max_upload_mb")

    def _sweep(self) -> None:
        """Delete output files older than ``keep_outputs_seconds``."""
        cutoff = time.time() - self.keep_outputs_seconds
        for path in self.out_dir.glob("*"):
            with contextlib.suppress(OSError):
                if path.is_file() and path.stat().st_mtime < cutoff:
                    path.unlink()


def session_of(request) -> Optional[str]:
    """The browser session of a Gradio request (None outside a request)."""
    return getattr(request, "session_hash", None) if request is not None else None
