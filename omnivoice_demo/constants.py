"""The model's fixed numbers, in one place.

These are properties of OmniVoice and of the Higgs Audio V2 codec (see
``../shared/omnivoice-reference.md``); a model folder's manifest repeats them
and the engine checks the two agree.
"""

SAMPLE_RATE = 24000           # codec audio, Hz
SEMANTIC_SAMPLE_RATE = 16000  # the codec's HuBERT branch, Hz
HOP_LENGTH = 960              # samples per codec frame
FRAME_RATE = SAMPLE_RATE // HOP_LENGTH  # 25 frames per second
NUM_CODEBOOKS = 8
CODEBOOK_SIZE = 1024          # code values 0..1023
AUDIO_MASK_ID = 1024          # "not decided yet"
AUDIO_VOCAB_SIZE = CODEBOOK_SIZE + 1
BITS_PER_CODE = 10            # log2(CODEBOOK_SIZE)

#: the stages a generation is timed by, in the order they run (GenerationResult.timings' keys)
STAGES = ("prompt", "embeddings", "backbone", "heads", "sampling", "codec_decode", "postprocess")


def app_version() -> str:
    """This project's version: the installed distribution's, else (a source checkout run without installing)
    the one pyproject.toml states."""
    import importlib.metadata
    import pathlib
    import re

    try:
        return importlib.metadata.version("omnivoice-onnx-studio")
    except importlib.metadata.PackageNotFoundError:
        pyproject = pathlib.Path(__file__).resolve().parents[1] / "pyproject.toml"
        found = re.search(r'^version\s*=\s*"([^"]+)"', pyproject.read_text(encoding="utf-8"), re.M) \
            if pyproject.is_file() else None
        return found.group(1) if found else "unknown"
