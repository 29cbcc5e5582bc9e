"""The Gradio app over the engine: ``layout.build_app(Studio(...))`` assembles the tabs (``tabs/``)."""

from .models import ModelManager
from .studio import Studio
from .voices import VoiceLibrary, data_dir

__all__ = ["ModelManager", "Studio", "VoiceLibrary", "data_dir"]
