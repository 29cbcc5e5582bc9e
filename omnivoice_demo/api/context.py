"""What the HTTP API's routes work on (``ApiContext``), and how a route receives it (``Context``).

One ``ApiContext`` per server: the app's models, saved voices and engine queue.  The route class
(``api.openai_route``) of the routers ``routes.build_router`` makes for a context puts it in each
request's scope; a route takes it as a FastAPI dependency, ``context: Context``.
"""

from __future__ import annotations

import dataclasses
import os
from typing import TYPE_CHECKING, Annotated, Callable, Optional

from fastapi import Depends, Request

from ..studio.metrics import ServerMetrics
from ..studio.service import EngineService
from ..studio.throttle import LoginThrottle
from .headers import DetailsStore

if TYPE_CHECKING:
    from ..studio.models import ModelManager
    from ..studio.voices import VoiceLibrary
    from ..text.lexicon import Lexicon

API_KEY_ENV = "OMNIVOICE_API_KEY"
#: voices created through the API live here when the library is per session (shared mode)
API_VOICE_SESSION = "api"
#: the request scope's key of the context (set by ``OpenAIRoute``)
SCOPE_KEY = "omnivoice.api_context"


@dataclasses.dataclass
class ApiContext:
    """What the routes work on: the app's models, saved voices and engine queue."""

    models: ModelManager
    voices: VoiceLibrary
    service: EngineService
    api_key: Optional[str] = None         # Bearer key for /v1 (None: open)
    shared: bool = False                  # a shared server: creating voices needs an API key
    transcribe: Optional[Callable] = None  # (audio [C, N], rate) -> text, when a recogniser is installed
    redact: Callable[[str], str] = str    # applied to every error message (shared mode: no server paths)
    lexicon: Optional[Lexicon] = None     # of --lexicon: under each request's pronunciations
    details: DetailsStore = dataclasses.field(default_factory=DetailsStore)   # whole values of cut headers
    throttle: LoginThrottle = dataclasses.field(default_factory=LoginThrottle)  # wrong keys, shared with the login
    metrics: Optional[ServerMetrics] = None   # GET /metrics (None: one of its own, over its service and models)
    replica: Optional[dict] = None   # under --replicas: this replica's id and process (said by /health)

    def __post_init__(self) -> None:
        if self.metrics is None and self.service is not None:   # (a context without a queue measures nothing)
            self.metrics = ServerMetrics(self.service, self.models)

    def session(self) -> Optional[str]:
        return API_VOICE_SESSION if getattr(self.voices, "private", False) else None

    def saved_names(self) -> list[str]:
        """The saved voices this API sees (its own session's in shared mode)."""
        return self.voices.names(self.session())


def current_context(request: Request) -> ApiContext:
    """The context of the router that matched ``request`` (a FastAPI dependency)."""
    return request.scope[SCOPE_KEY]


#: a route's parameter ``context: Context`` receives the server's ``ApiContext``
Context = Annotated[ApiContext, Depends(current_context)]


def api_key_from(value: Optional[str]) -> Optional[str]:
    """``--api-key`` or the environment variable; empty means none."""
    key = value if value is not None else os.environ.get(API_KEY_ENV)
    return key.strip() if key and key.strip() else None
