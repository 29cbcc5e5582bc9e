"""Speech recognition for transcript-free cloning: Whisper on ONNX Runtime, no torch.

``SpeechRecognizer(folder).transcribe(audio, sample_rate) -> Transcript``; the folder
comes from ``resolve_recognizer()`` (the Hub, our cache, or a local folder built with
``python -m convert.whisper``).
"""

from .lazy import LazyRecognizer
from .recognizer import SpeechRecognizer, Transcript

__all__ = ["LazyRecognizer", "SpeechRecognizer", "Transcript"]
