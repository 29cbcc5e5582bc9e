"""The PyTorch modules exported around the genai-built backbone, and their Olive loaders.

OmniVoice = audio/text embeddings -> Qwen3 backbone (bidirectional) -> audio heads.
The backbone graph comes from onnxruntime-genai's builder; the two small ends
are exported from these wrappers, which call the reference model's own code so
that the graphs compute exactly what ``OmniVoice.forward`` computes.

This file is also Olive's ``model_script``: the ``load_*`` functions are its
``model_loader`` entries and ``*_dummy_inputs`` its ``dummy_inputs_func``.
"""

from __future__ import annotations

import torch
from torch import nn


def load_omnivoice(checkpoint_dir: str):
    """The reference model in float32 with SDPA attention (eager attention mishandles
    boolean masks); ``train=True`` skips loading the text and audio tokenizers."""
    from omnivoice import OmniVoice

    model = OmniVoice.from_pretrained(
        str(checkpoint_dir), train=True, attn_implementation="sdpa", dtype=torch.float32
    )
    return model.eval()


class AudioEmbeddings(nn.Module):
    """input_ids [B, 8, S] int64 + audio_mask [B, S] bool -> inputs_embeds [B, S, H]."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids: torch.Tensor, audio_mask: torch.Tensor) -> torch.Tensor:
        return self.model._prepare_embed_inputs(input_ids, audio_mask)


class AudioHeads(nn.Module):
    """hidden_states [B, S, H] -> logits [B, 8, S, 1025], as at the end of ``OmniVoice.forward``."""

    def __init__(self, model):
        super().__init__()
        self.heads = model.audio_heads
        self.num_codebooks = model.config.num_audio_codebook
        self.vocab = model.config.audio_vocab_size

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        batch, seq, _ = hidden_states.shape
        logits = self.heads(hidden_states)
        return logits.view(batch, seq, self.num_codebooks, self.vocab).permute(0, 2, 1, 3)


# --- Olive model_script entries -------------------------------------------------

def load_audio_embeddings(model_path: str) -> nn.Module:
    return AudioEmbeddings(load_omnivoice(model_path)).eval()


def load_audio_heads(model_path: str) -> nn.Module:
    return AudioHeads(load_omnivoice(model_path)).eval()


def audio_embeddings_dummy_inputs(handler=None):
    # trace with batch 2 and a length > 1 so nothing specialises on 1
    batch, seq = 2, 7
    input_ids = torch.randint(0, 1024, (batch, 8, seq), dtype=torch.int64)
    audio_mask = torch.zeros(batch, seq, dtype=torch.bool)
    audio_mask[:, 3:] = True
    return (input_ids, audio_mask)


def audio_heads_dummy_inputs(handler):
    """``handler`` is Olive's PyTorchModelHandler: read the hidden size from its checkpoint."""
    import json
    import pathlib

    config = json.loads((pathlib.Path(handler.model_path) / "config.json").read_text())
    return (torch.randn(2, 7, config["llm_config"]["hidden_size"]),)


AUDIO_EMBEDDINGS_IO = {
    "input_names": ["input_ids", "audio_mask"],
    "input_shapes": [[2, 8, 7], [2, 7]],
    "input_types": ["int64", "bool"],
    "output_names": ["inputs_embeds"],
    "dynamic_axes": {
        "input_ids": {"0": "batch_size", "2": "sequence_length"},
        "audio_mask": {"0": "batch_size", "1": "sequence_length"},
        "inputs_embeds": {"0": "batch_size", "1": "sequence_length"},
    },
}

AUDIO_HEADS_IO = {
    "input_names": ["hidden_states"],
    "output_names": ["logits"],
    "dynamic_axes": {
        "hidden_states": {"0": "batch_size", "1": "sequence_length"},
        "logits": {"0": "batch_size", "2": "sequence_length"},
    },
}
