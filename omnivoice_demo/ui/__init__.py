"""The Gradio app over the engine: ``build_app(Studio(...))`` (layout) and plain handlers (handlers)."""

from .handlers import Studio
from .models import ModelManager
from .voices import VoiceLibrary, data_dir

__all__ = ["ModelManager", "Studio", "VoiceLibrary", "data_dir"]
