"""What the handlers work on: the models, the saved voices, the cloned-voice cache, where output files go."""

from __future__ import annotations

import dataclasses
import os
import pathlib
import threading
from collections import OrderedDict
from typing import Callable, Hashable, Optional

from ..settings.limits import Limits
from ..errors import ResourceLimitExceeded
from ..storage.outputs import DEFAULT_MAX_BYTES, OutputFolder
from .service import EngineService
from ..text.lexicon import Lexicon
from ..storage.voice_file import Voice
from .lexicons import LEXICON_FILE, OwnerLexicons
from .models import ModelManager
from .sharing import BrowserVoices
from .voices import VoiceLibrary, data_dir


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
    """The app's state shared by every tab (one per server).

    ``limits`` bound every request (the engine enforces them too); ``shared``
    is shared mode (``sharing.is_shared``): visitors cannot change models,
    their voices live in their browsers, messages show no server path.
    Output files go to ``out_dir`` (default: ``outputs/`` in the user data
    folder, the same on every start), capped at ``max_output_bytes``; in
    shared mode each is served only to the visitor it was made for
    (``output_path``'s ``owner``, ``output_hidden_from``).
    """

    models: ModelManager
    voices: VoiceLibrary
    out_dir: Optional[pathlib.Path] = None
    max_upload_mb: float = 50.0
    history_limit: int = 20
    min_update_interval: float = 0.08   # seconds between two step pictures sent to the browser
    keep_outputs_seconds: float = 6 * 3600
    max_output_bytes: int = DEFAULT_MAX_BYTES
    voice_cache: VoiceCache = dataclasses.field(default_factory=VoiceCache)
    limits: Limits = dataclasses.field(default_factory=Limits)
    shared: bool = False
    #: the engine slot shared by the UI, the Gradio API and the HTTP API (queue bound, cancellation)
    service: EngineService = dataclasses.field(default_factory=EngineService)
    #: the server's pronunciations (``--lexicon``), under each owner's (``lexicons``)
    lexicon: Optional[Lexicon] = None

    def __post_init__(self):
        self.out_dir = pathlib.Path(self.out_dir) if self.out_dir is not None else data_dir() / "outputs"
        self.outputs = OutputFolder(self.out_dir, max_bytes=self.max_output_bytes,
                                    max_age_seconds=self.keep_outputs_seconds)
        self.browser_voices = BrowserVoices(max_frames=self.limits.max_reference_frames,
                                            max_variants=self.limits.max_voice_variants)
        # each owner's lexicon: in the visitor's browser in shared mode, else the studio's file
        self.lexicons = OwnerLexicons(self.shared, self.voices.root.parent / LEXICON_FILE, self.lexicon)
        if self.shared:
            from .messages import set_message_filter

            self.models.locked = True
            set_message_filter(self.message)

    def output_path(self, stem: str, suffix: str, owner: Optional[str] = None) -> pathlib.Path:
        """A path in the output folder (old outputs, and the oldest past the size cap, are removed first) for a
        file made for ``owner`` (the visitor, ``ui.owners.owner_of``; only they may fetch it in shared mode)."""
        return self.outputs.path(stem, suffix, owner=owner if self.shared else None)

    def output_hidden_from(self, requested: str, owner: Optional[str]) -> bool:
        """Whether a request for the file ``requested`` (a path as a client sent it) by ``owner`` (None: a client
        that has none) must be answered as if there were no such file: in shared mode, an output (or Gradio's
        copy of one) made for someone else, or one whose owner is not known."""
        return self.shared and self.outputs.readable_by(requested, owner) is False

    @property
    def max_upload_bytes(self) -> int:
        return int(min(self.max_upload_mb * 1024 * 1024, self.limits.max_upload_bytes))

    def check_upload(self, path: str, what: str) -> None:
        """``ResourceLimitExceeded`` when the uploaded file is over ``max_upload_bytes``."""
        size = os.path.getsize(path)
        if size > self.max_upload_bytes:
            raise ResourceLimitExceeded(f"The {what} is {size / 1024 / 1024:.0f} MB; the limit is "
                                        f"{self.max_upload_bytes / 1024 / 1024:.0f} MB. Upload a shorter clip "
                                        "(3-10 s of speech is best).", param="max_upload_bytes")

    def message(self, text: str) -> str:
        """``text`` as a visitor may see it: in shared mode without server paths."""
        if not self.shared:
            return text
        from .sharing import redact_paths

        return redact_paths(text, [self.out_dir, *self.voices.private_paths(), self.models.cache_dir])


def session_of(request) -> Optional[str]:
    """The browser session of a Gradio request (None outside a request), as a voice library's key: prefixed,
    so a client that picks its own session hash (``"api"``) never names the HTTP API's voices."""
    session = getattr(request, "session_hash", None) if request is not None else None
    return f"{BROWSER_SESSION_PREFIX}{session}" if session else None


#: before every browser session's key (the HTTP API's voices are under the session ``api``)
BROWSER_SESSION_PREFIX = "web-"
