"""The model options of the command line and the app: --model, --precision, --offline, --build, ..."""

from __future__ import annotations

import argparse

from ..storage.cache import CACHE_ENV
from .choose import DEFAULT_PRECISION, PRECISIONS
from .progress import ProgressCallback, console_progress
from .resolve import DEFAULT_CHECKPOINT_REPO, DEFAULT_REPO, resolve_model
from .resolved import ResolvedModel


def add_model_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """--model, --precision, --offline (and --build, --force-download, --model-cache), shared by
    the CLI and the app."""
    group = parser.add_argument_group("model")
    group.add_argument("--model", default=None, metavar="DIR|REPO",
                       help=f"a model folder, or a Hub repo id[@revision] (default {DEFAULT_REPO}; "
                            f"with --build: the PyTorch checkpoint, default {DEFAULT_CHECKPOINT_REPO})")
    group.add_argument("--precision", default=None, choices=PRECISIONS,
                       help=f"which model folder to use (default: a model folder's own, else {DEFAULT_PRECISION})")
    group.add_argument("--offline", action="store_const", const=True, default=None,
                       help="use only what is cached (default: HF_HUB_OFFLINE)")
    group.add_argument("--build", action="store_true",
                       help="build the ONNX folder from the PyTorch checkpoint (needs the convert extra)")
    group.add_argument("--force-download", action="store_true",
                       help="download the model files again, even when cached")
    group.add_argument("--model-cache", default=None, metavar="DIR",
                       help=f"where ready model folders are kept (default ${CACHE_ENV} or "
                            "~/.cache/omnivoice-onnx-studio)")
    return parser


def resolve_from_args(args: argparse.Namespace, progress: ProgressCallback | None = None) -> ResolvedModel:
    """``resolve_model`` with the values of ``add_model_arguments``; progress goes to stderr by default."""
    return resolve_model(
        getattr(args, "model", None), precision=getattr(args, "precision", None),
        cache_dir=getattr(args, "model_cache", None), offline=getattr(args, "offline", None),
        build=getattr(args, "build", False), progress=progress or console_progress(),
        force_download=getattr(args, "force_download", False),
    )
