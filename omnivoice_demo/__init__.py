"""OmniVoice on ONNX Runtime: the reference generation loop, token for token.

    from omnivoice_demo import GenerationConfig, OmniVoiceEngine
    engine = OmniVoiceEngine("models/omnivoice-cpu")
    result = engine.generate("Hello world.", language="English", config=GenerationConfig(num_step=16))
    soundfile.write("out.wav", result.audio, result.sample_rate)

Importing this package imports neither torch nor gradio.
"""

from .settings.generation import GenerationConfig
from .settings.limits import Limits
from .engine.loop import ChunkEvent, GenerationPlan, GenerationResult, OmniVoiceEngine, StepEvent
from .errors import InvalidInput, ModelFolderError, ModelNotAvailable, OmniVoiceError, ResourceLimitExceeded
from .storage.voice_file import Voice

__all__ = ["ChunkEvent", "GenerationConfig", "GenerationPlan", "GenerationResult", "InvalidInput", "Limits",
           "ModelFolderError", "ModelNotAvailable", "OmniVoiceEngine", "OmniVoiceError", "ResourceLimitExceeded",
           "StepEvent", "Voice"]
