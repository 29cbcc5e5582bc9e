"""The studio core: the server's state and words, below every front end.

The Gradio UI (``omnivoice_demo.ui``), the HTTP API (``omnivoice_demo.api``), the
command line and later the Wyoming server all use this package; none of them owns
it and none imports another front end.

* ``models``: ``ModelManager`` (resolve and load models in the background, the active one)
* ``voices``: ``VoiceLibrary`` (saved voices on disk: list, save, load, rename, delete, export, import)
* ``variants``: style variants of a saved voice (clips tagged cheerful, sad, ...; chosen by a description's word)
* ``sharing``: shared mode (who may change models, voices kept in browsers, no server paths in messages)
* ``service``: ``EngineService``, the one queue every generation waits in (bounds, cancellation)
* ``state``: ``Studio``, all of the above for one server, plus output files and limits
* ``messages``: exceptions -> the message a person reads
* ``vocabulary``: the names every front end accepts (presets and their aliases, voices, languages)
* ``results``: what a finished generation was (seed, settings, timings, codes digest)
* ``sentences``: ``SentenceResult``, a finished generation whose sentences can each be made again or restored
* ``lexicons``: each owner's pronunciations (the visitor's browser in shared mode, else the studio's file)
"""

from .models import ModelManager, ModelNotReady
from .service import EngineService
from .state import Studio, session_of
from .voices import VoiceLibrary, data_dir

__all__ = ["EngineService", "ModelManager", "ModelNotReady", "Studio", "VoiceLibrary", "data_dir", "session_of"]
