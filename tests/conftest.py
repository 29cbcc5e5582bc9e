"""Shared fixtures: random-weight OmniVoice checkpoints and the folders built from them.

Everything is built offline from random weights in a per-session temporary
folder; nothing is downloaded.
"""

from __future__ import annotations

import os
import pathlib

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

ARTIFACTS = pathlib.Path(__file__).resolve().parent.parent / "test-artifacts"


@pytest.fixture(scope="session")
def tiny_checkpoint(tmp_path_factory) -> pathlib.Path:
    """A tiny random OmniVoice checkpoint (PyTorch), loadable by omnivoice.OmniVoice.from_pretrained."""
    from convert.random_checkpoint import build

    return build("tiny", tmp_path_factory.mktemp("ckpt") / "tiny", seed=0)


@pytest.fixture(scope="session")
def reference_model(tiny_checkpoint):
    """The PyTorch reference on the tiny checkpoint (SDPA attention, eval mode)."""
    import torch
    from omnivoice import OmniVoice

    torch.set_num_threads(2)
    return OmniVoice.from_pretrained(str(tiny_checkpoint), attn_implementation="sdpa").eval()


@pytest.fixture(scope="session")
def artifacts_dir() -> pathlib.Path:
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS
