"""OmniVoice on ONNX Runtime: the reference generation loop, token for token.

    from omnivoice_demo import OmniVoiceEngine
    engine = OmniVoiceEngine("models/omnivoice-cpu")
    result = engine.generate("Hello world.", language="English")
    soundfile.write("out.wav", result.audio, result.sample_rate)

Importing this package imports neither torch nor gradio.
"""

from .engine import ChunkEvent, GenerationPlan, GenerationResult, OmniVoiceEngine, StepEvent
from .manifest import ModelFolderError
from .voice import Voice

__all__ = ["ChunkEvent", "GenerationPlan", "GenerationResult", "ModelFolderError", "OmniVoiceEngine",
           "StepEvent", "Voice"]
