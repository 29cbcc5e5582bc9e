"""The PyTorch codec made ready to trace: loaded in fp32 with its weight norm folded into plain weights (and,
for export, Snake's reciprocal folded into a buffer), cut into the four graphs' modules (``graph_modules``:
the acoustic encoder with ``encode``'s padding rule computed from the input's shape, the semantic encoder, the
quantizer, the decoder), and each module's traced example inputs (``trace_inputs``).  ``codec.py`` exports them.

torch and transformers are imported inside the functions, so importing this file needs neither.
"""

from __future__ import annotations

import math
import pathlib

#: Traced example: batch 2, 10 frames (shapes unlike batch 1 so nothing is specialised to it).
TRACE_BATCH, TRACE_FRAMES = 2, 10


def graph_modules():
    """The four graph modules (defined lazily so importing this file needs no torch)."""
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    def conv_length(length, convs, rounding_mode):
        for conv in convs:
            numerator = length + 2 * conv.padding[0] - conv.dilation[0] * (conv.kernel_size[0] - 1) - 1
            length = torch.div(numerator, conv.stride[0], rounding_mode=rounding_mode) + 1
        return length

    class AcousticEncoder(nn.Module):
        """waveform_24k [B,1,N] -> acoustic_features [B,A,T], with encode()'s padding rule."""

        def __init__(self, codec):
            super().__init__()
            cfg = codec.config
            self.encoder = codec.acoustic_encoder
            self.pad = int(codec.pad)
            # the reference's _get_conv1d_output_lengths: every Conv1d, int() truncation
            self.acoustic_convs = list(codec._get_conv1d_layers(codec.acoustic_encoder))
            g = math.gcd(int(cfg.sample_rate), int(cfg.semantic_sample_rate))
            self.resample_orig = int(cfg.sample_rate) // g
            self.resample_new = int(cfg.semantic_sample_rate) // g
            sem = cfg.semantic_model_config
            self.hubert_convs = list(zip(sem.conv_kernel, sem.conv_stride))
            self.downsample = int(cfg.semantic_downsample_factor)
            self.semantic_convs = [m for m in codec.encoder_semantic.modules() if isinstance(m, nn.Conv1d)]

        def forward(self, waveform_24k):
            n = torch._shape_as_tensor(waveform_24k)[2]
            acoustic_len = conv_length(n, self.acoustic_convs, "trunc")
            # semantic frame count: torchaudio resample length, F.pad(160,160), HuBERT convs,
            # [::downsample], the semantic encoder convs
            sem = torch.div(n * self.resample_new + self.resample_orig - 1, self.resample_orig,
                            rounding_mode="floor") + 320
            for kernel, stride in self.hubert_convs:
                sem = torch.div(sem - kernel, stride, rounding_mode="floor") + 1
            sem = torch.div(sem + self.downsample - 1, self.downsample, rounding_mode="floor")
            sem = conv_length(sem, self.semantic_convs, "floor")
            pad = torch.where(acoustic_len != sem, self.pad, 0)
            padded = F.pad(waveform_24k, (self.pad, self.pad))
            index = torch.arange(self.pad - pad, self.pad + n + pad)
            return self.encoder(padded.index_select(2, index))

    class SemanticEncoder(nn.Module):
        """waveform_16k [B,N'] -> semantic_features [B,S,T]."""

        def __init__(self, codec):
            super().__init__()
            self.semantic_model = codec.semantic_model
            self.encoder_semantic = codec.encoder_semantic
            self.downsample = int(codec.config.semantic_downsample_factor)

        def forward(self, waveform_16k):
            values = F.pad(waveform_16k, (160, 160))
            outputs = self.semantic_model(values, output_hidden_states=True)
            features = torch.stack(list(outputs.hidden_states), dim=1).mean(dim=1)
            if self.downsample > 1:
                features = features[:, :: self.downsample, :]
            return self.encoder_semantic(features.transpose(1, 2))

    class QuantizerEncoder(nn.Module):
        """acoustic [B,A,T], semantic [B,S,T] -> audio_codes int64 [Q,B,T]."""

        def __init__(self, codec):
            super().__init__()
            self.fc = codec.fc
            self.quantizer = codec.quantizer
            self.bandwidth = codec.config.target_bandwidths[-1]  # encode(bandwidth=None)

        def forward(self, acoustic_features, semantic_features):
            embeddings = torch.cat([acoustic_features, semantic_features], dim=1)
            embeddings = self.fc(embeddings.transpose(1, 2)).transpose(1, 2)
            return self.quantizer.encode(embeddings, self.bandwidth)

    class Decoder(nn.Module):
        """audio_codes int64 [Q,B,T] -> waveform_24k [B,1,hop*T]."""

        def __init__(self, codec):
            super().__init__()
            self.quantizer = codec.quantizer
            self.fc2 = codec.fc2
            self.acoustic_decoder = codec.acoustic_decoder

        def forward(self, audio_codes):
            quantized = self.quantizer.decode(audio_codes)
            quantized = self.fc2(quantized.transpose(1, 2)).transpose(1, 2)
            return self.acoustic_decoder(quantized)

    return {
        "acoustic_encoder": AcousticEncoder,
        "semantic_encoder": SemanticEncoder,
        "quantizer_encoder": QuantizerEncoder,
        "higgs_decoder": Decoder,
    }


def fold_snake_activations(codec) -> int:
    """Replace every DAC ``Snake1d`` by one holding ``1 / (alpha + 1e-9)`` as a buffer; return the count.

    ``Snake1d`` recomputes that reciprocal of a parameter on every call; the
    legacy exporter leaves it in the graph, where the fp16 build cannot fold it
    (onnxruntime warns on every session).  The buffer is the same float32 value
    torch computes, so the function is unchanged.  The no-op reshape to
    ``[B, C, -1]`` of a 3-D input is dropped too.
    """
    import torch
    import torch.nn as nn

    class FoldedSnake(nn.Module):
        def __init__(self, alpha):
            super().__init__()
            self.register_buffer("alpha", alpha.detach().clone())
            self.register_buffer("inv_alpha", (alpha.detach() + 1e-9).reciprocal())

        def forward(self, hidden_states):
            return hidden_states + self.inv_alpha * torch.sin(self.alpha * hidden_states).pow(2)

    count = 0
    for parent in list(codec.modules()):
        for child_name, child in list(parent.named_children()):
            if type(child).__name__ == "Snake1d":
                setattr(parent, child_name, FoldedSnake(child.alpha))
                count += 1
    return count


def load_torch_codec(codec_dir: str | pathlib.Path, fold_snake: bool = False):
    """The PyTorch codec in eval mode, fp32, weight-norm parametrisations folded into plain weights.

    Folding computes the same ``g * v / ||v||`` once, so the graph holds one
    weight per conv instead of the norm arithmetic.  ``fold_snake`` applies
    ``fold_snake_activations`` (export only).
    """
    from torch.nn.utils import parametrize
    from transformers import HiggsAudioV2TokenizerModel

    codec = HiggsAudioV2TokenizerModel.from_pretrained(str(codec_dir)).float().eval()
    for module in codec.modules():
        if parametrize.is_parametrized(module):
            for name in list(module.parametrizations.keys()):
                parametrize.remove_parametrizations(module, name, leave_parametrized=True)
    if fold_snake:
        fold_snake_activations(codec)
    return codec


def trace_inputs(name: str, codec) -> tuple:
    import torch

    cfg = codec.config
    hop = int(cfg.hop_length)
    n24 = TRACE_FRAMES * hop
    generator = torch.Generator().manual_seed(0)
    if name == "acoustic_encoder":
        return (0.1 * torch.randn(TRACE_BATCH, 1, n24, generator=generator),)
    if name == "semantic_encoder":
        n16 = math.ceil(n24 * cfg.semantic_sample_rate / cfg.sample_rate)
        return (0.1 * torch.randn(TRACE_BATCH, n16, generator=generator),)
    if name == "quantizer_encoder":
        a = cfg.acoustic_model_config.hidden_size
        s = cfg.semantic_model_config.hidden_size
        return (torch.randn(TRACE_BATCH, a, TRACE_FRAMES, generator=generator),
                torch.randn(TRACE_BATCH, s, TRACE_FRAMES, generator=generator))
    if name == "higgs_decoder":
        q = codec.quantizer.get_num_quantizers_for_bandwidth(cfg.target_bandwidths[-1])
        return (torch.randint(0, cfg.codebook_size, (q, TRACE_BATCH, TRACE_FRAMES), generator=generator),)
    raise KeyError(name)
