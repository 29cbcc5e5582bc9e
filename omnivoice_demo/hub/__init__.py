"""Where the ONNX model folder comes from: a local folder, the Hub, or a build from the checkpoint.

``resolve_model()`` turns what the user asked for into a ready, self-contained model
folder (backbone graphs, tokenizer, ``audio_tokenizer/``, and a manifest of ours whose
backbone is bidirectional) and returns a ``ResolvedModel`` (``.path``, ``.notices``, ...).

One job per module:

* ``choose``    which folder of a repo's listing is the model for a precision, which files it needs
* ``download``  the Hub: settings of one call, commit and listing, downloads checked against the Hub
* ``cache``     where ready folders, refs and listings are kept (our cache; the HF cache's location)
* ``assemble``  the repair step: check the files, write a ready folder, bidirectional backbone
* ``build``     the build step from the PyTorch checkpoint (imports ``convert`` only there)
* ``progress``  progress events, the console printer, huggingface_hub's bars as events
* ``resolve``   ``resolve_model`` and the local and Hub routes; ``resolved``: its result
* ``cli``       the --model/--precision/--offline options

Hugging Face settings are read from the environment at call time and passed to every
huggingface_hub call: HF_ENDPOINT, HF_HOME / HF_HUB_CACHE, HF_TOKEN, HF_HUB_OFFLINE.
"""

from ..extras import BUILD_MODULES, extras_message, missing_build_modules
from .build import BuildExtrasMissingError
from ..storage.cache import CACHE_ENV, default_cache_dir
from .cache import hf_cache_dir
from .choose import (DEFAULT_PRECISION, FOLDER_ALIASES, PRECISION_PROFILES, PRECISIONS, backbone_folders,
                     choose_backbone_folder, codec_base, needed_files, precision_of_manifest, precision_of_name)
from .cli import add_model_arguments, resolve_from_args
from .download import ModelDownloadError, env_offline
from .progress import ProgressCallback, ProgressEvent, console_progress
from .resolve import DEFAULT_CHECKPOINT_REPO, DEFAULT_REPO, parse_spec, resolve_model
from .resolved import ResolvedModel

__all__ = [
    "BUILD_MODULES", "BuildExtrasMissingError", "CACHE_ENV", "DEFAULT_CHECKPOINT_REPO", "DEFAULT_PRECISION",
    "DEFAULT_REPO", "FOLDER_ALIASES", "ModelDownloadError", "PRECISIONS", "PRECISION_PROFILES",
    "ProgressCallback", "ProgressEvent", "ResolvedModel", "add_model_arguments", "backbone_folders",
    "choose_backbone_folder", "codec_base", "console_progress", "default_cache_dir", "env_offline",
    "extras_message", "hf_cache_dir", "missing_build_modules", "needed_files", "parse_spec",
    "precision_of_manifest", "precision_of_name", "resolve_from_args", "resolve_model",
]
