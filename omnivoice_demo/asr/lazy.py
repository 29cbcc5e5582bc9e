"""A speech recogniser made on first use, shared by every caller.

The engine holds one of these: no recogniser file is read, downloaded or loaded
until a clip without a transcript arrives.  Loading takes its own lock, so speech
generation (which never touches it) goes on while a recogniser is downloaded or
loaded; callers that need a transcript at that moment wait for the one load.
``wording``: how a recogniser that cannot be had is said where this one is used
(``source.RecognizerMissing.worded``'s arguments; default: where a reference is transcribed).
"""

from __future__ import annotations

import os
import threading
from typing import Optional

from .recognizer import SpeechRecognizer, Transcript


class LazyRecognizer:
    def __init__(self, spec: Optional[str | os.PathLike] = None, precision: Optional[str] = None,
                 provider: str = "cpu", threads: Optional[int] = None, progress=None,
                 offline: Optional[bool] = None, wording: Optional[dict] = None):
        self.spec, self.precision, self.offline, self.wording = spec, precision, offline, wording
        self.provider, self.threads, self.progress = provider, threads, progress
        self._recognizer: Optional[SpeechRecognizer] = None
        self._lock = threading.Lock()

    @property
    def loaded(self) -> bool:
        return self._recognizer is not None

    def get(self) -> SpeechRecognizer:
        with self._lock:
            if self._recognizer is None:
                from .source import RecognizerMissing, resolve_recognizer

                try:
                    resolved = resolve_recognizer(self.spec, self.precision, offline=self.offline,
                                                  progress=self.progress)
                except RecognizerMissing as exc:
                    if self.wording is None:
                        raise
                    raise exc.worded(**self.wording) from exc
                self._recognizer = SpeechRecognizer(resolved.path, precision=resolved.precision,
                                                    provider=self.provider, threads=self.threads)
            return self._recognizer

    def transcribe(self, audio, sample_rate: int, language: Optional[str] = None) -> Transcript:
        return self.get().transcribe(audio, sample_rate, language=language)

    def align(self, audio, sample_rate: int, text: str, language: Optional[str] = None) -> list:
        return self.get().align(audio, sample_rate, text, language=language)
