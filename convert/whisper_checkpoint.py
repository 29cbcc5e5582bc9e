"""A Whisper checkpoint with random weights and Whisper's real tokenizer, offline.

No model hub is reachable from the machines this project is tested on, so the
recogniser's tests and benchmarks run on ``WhisperForConditionalGeneration``
with random weights of the released architectures (tiny, base, small,
large-v3-turbo) or a smaller one for tests.  The tokenizer is Whisper's own: the
byte-level BPE ranks ``multilingual.tiktoken`` shipped inside the
``openai-whisper`` package, converted to a Hugging Face tokenizer with
``transformers``' ``TikTokenConverter``, plus the special tokens in the order
``openai-whisper``'s ``tokenizer.py`` defines them (end of text, start of
transcript, one token per language, tasks, no-timestamps, 1501 timestamps).
The ``generation_config.json`` has the fields of the released checkpoints
(language and task ids, suppressed tokens from ``openai-whisper``'s
``non_speech_tokens``, forced ``transcribe`` after a detected language).

    python -m convert.whisper_checkpoint --size tiny|base|small|large-v3-turbo|test --output CKPT

The folder loads with ``WhisperForConditionalGeneration.from_pretrained`` and
``pipeline("automatic-speech-recognition", CKPT)``.
"""

from __future__ import annotations

import argparse
import importlib.util
import pathlib

#: Released Whisper architectures (``openai/whisper-*`` config.json), and a small one for tests.
SIZES = {
    "test": dict(d_model=64, encoder_layers=2, decoder_layers=2, encoder_attention_heads=2,
                 decoder_attention_heads=2, encoder_ffn_dim=128, decoder_ffn_dim=128, num_mel_bins=80,
                 num_languages=99),
    "tiny": dict(d_model=384, encoder_layers=4, decoder_layers=4, encoder_attention_heads=6,
                 decoder_attention_heads=6, encoder_ffn_dim=1536, decoder_ffn_dim=1536, num_mel_bins=80,
                 num_languages=99),
    "base": dict(d_model=512, encoder_layers=6, decoder_layers=6, encoder_attention_heads=8,
                 decoder_attention_heads=8, encoder_ffn_dim=2048, decoder_ffn_dim=2048, num_mel_bins=80,
                 num_languages=99),
    "small": dict(d_model=768, encoder_layers=12, decoder_layers=12, encoder_attention_heads=12,
                  decoder_attention_heads=12, encoder_ffn_dim=3072, decoder_ffn_dim=3072, num_mel_bins=80,
                  num_languages=99),
    "large-v3-turbo": dict(d_model=1280, encoder_layers=32, decoder_layers=4, encoder_attention_heads=20,
                           decoder_attention_heads=20, encoder_ffn_dim=5120, decoder_ffn_dim=5120,
                           num_mel_bins=128, num_languages=100),
}

TIMESTAMPS = 1501  # <|0.00|> ... <|30.00|>


def _openai_whisper_tokenizer_module():
    """``whisper/tokenizer.py`` of the openai-whisper package, loaded alone (its package
    ``__init__`` imports torch and numba, which the tokenizer does not need)."""
    spec = importlib.util.find_spec("whisper")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("the openai-whisper package (Whisper's tokenizer files) is not installed: "
                                "pip install -r requirements-dev.txt")
    folder = pathlib.Path(list(spec.submodule_search_locations)[0])
    module_spec = importlib.util.spec_from_file_location("_openai_whisper_tokenizer", folder / "tokenizer.py")
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return module, folder / "assets" / "multilingual.tiktoken"


def special_tokens(num_languages: int) -> list[str]:
    """Whisper's special tokens in id order, after the 50257 BPE ranks (as openai-whisper's ``get_encoding``)."""
    module, _ = _openai_whisper_tokenizer_module()
    languages = list(module.LANGUAGES)[:num_languages]
    return ["<|endoftext|>", "<|startoftranscript|>", *[f"<|{code}|>" for code in languages],
            "<|translate|>", "<|transcribe|>", "<|startoflm|>", "<|startofprev|>", "<|nospeech|>",
            "<|notimestamps|>", *[f"<|{i * 0.02:.2f}|>" for i in range(TIMESTAMPS)]]


def write_tokenizer(folder: pathlib.Path, num_languages: int):
    """Whisper's tokenizer as a ``WhisperTokenizerFast`` saved into ``folder``; returns it."""
    from tokenizers import AddedToken, Tokenizer, decoders, pre_tokenizers
    from tokenizers.models import BPE
    from transformers import WhisperTokenizerFast
    from transformers.convert_slow_tokenizer import TikTokenConverter

    _, ranks_file = _openai_whisper_tokenizer_module()
    vocab, merges = TikTokenConverter(str(ranks_file)).extract_vocab_merges_from_model(str(ranks_file))
    tokenizer = Tokenizer(BPE(vocab, merges, fuse_unk=False))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    specials = special_tokens(num_languages)
    # the timestamps are ordinary added tokens in the released tokenizers, the rest are special
    tokenizer.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in specials[:-TIMESTAMPS]])
    tokenizer.add_tokens([AddedToken(t, special=False, normalized=False) for t in specials[-TIMESTAMPS:]])
    fast = WhisperTokenizerFast(tokenizer_object=tokenizer, bos_token="<|endoftext|>", eos_token="<|endoftext|>",
                                unk_token="<|endoftext|>", pad_token="<|endoftext|>")
    fast.save_pretrained(str(folder))
    return fast


def default_alignment_heads(layers: int, heads: int) -> list[list[int]]:
    """openai-whisper's alignment heads when a model names none: every head of the last half of the layers."""
    return [[layer, head] for layer in range(layers // 2, layers) for head in range(heads)]


def generation_config(tokenizer, num_languages: int, max_length: int = 448, alignment_heads=None):
    """The ``GenerationConfig`` fields of the released multilingual checkpoints (``alignment_heads``: the
    [layer, head] pairs word timing reads; None leaves them out, as a checkpoint without them)."""
    from transformers import GenerationConfig

    module, _ = _openai_whisper_tokenizer_module()
    ids = tokenizer.convert_tokens_to_ids
    languages = list(module.LANGUAGES)[:num_languages]
    lang_to_id = {f"<|{code}|>": ids(f"<|{code}|>") for code in languages}
    reference = module.get_tokenizer(multilingual=True, num_languages=num_languages)
    suppress = sorted({*reference.non_speech_tokens, reference.sot, reference.sot_prev, reference.sot_lm,
                       reference.no_speech})
    transcribe = ids("<|transcribe|>")
    return GenerationConfig(
        decoder_start_token_id=ids("<|startoftranscript|>"), bos_token_id=ids("<|endoftext|>"),
        eos_token_id=ids("<|endoftext|>"), pad_token_id=ids("<|endoftext|>"), max_length=max_length,
        begin_suppress_tokens=[220, ids("<|endoftext|>")], suppress_tokens=suppress,
        forced_decoder_ids=[[1, None], [2, transcribe]], is_multilingual=True, lang_to_id=lang_to_id,
        task_to_id={"translate": ids("<|translate|>"), "transcribe": transcribe},
        no_timestamps_token_id=ids("<|notimestamps|>"), prev_sot_token_id=ids("<|startofprev|>"),
        max_initial_timestamp_index=50, return_timestamps=False,
        **({"alignment_heads": [list(map(int, pair)) for pair in alignment_heads]} if alignment_heads else {}),
    )


def build_checkpoint(size: str, output: str | pathlib.Path, seed: int = 0, max_length: int = 448,
                     alignment_heads="default") -> pathlib.Path:
    """Write a random-weight Whisper checkpoint of ``size`` (see ``SIZES``) into ``output``; ``max_length``
    (tokens per 30 s window, prompt included) is the released 448 unless a test wants shorter runs.
    ``alignment_heads``: [layer, head] pairs, "default" for openai-whisper's default (the last half of the
    layers), None for none."""
    import torch
    from transformers import WhisperConfig, WhisperFeatureExtractor, WhisperForConditionalGeneration

    if size not in SIZES:
        raise ValueError(f"size must be one of {', '.join(SIZES)}, got {size!r}")
    dims = dict(SIZES[size])
    num_languages = dims.pop("num_languages")
    output = pathlib.Path(output)
    output.mkdir(parents=True, exist_ok=True)
    tokenizer = write_tokenizer(output, num_languages)
    vocab = len(tokenizer)
    eot = tokenizer.convert_tokens_to_ids("<|endoftext|>")
    config = WhisperConfig(vocab_size=vocab, max_source_positions=1500, max_target_positions=448,
                           decoder_start_token_id=tokenizer.convert_tokens_to_ids("<|startoftranscript|>"),
                           pad_token_id=eot, bos_token_id=eot, eos_token_id=eot, **dims)
    torch.manual_seed(seed)
    model = WhisperForConditionalGeneration(config).eval()
    if alignment_heads == "default":
        alignment_heads = default_alignment_heads(dims["decoder_layers"], dims["decoder_attention_heads"])
    model.generation_config = generation_config(tokenizer, num_languages, max_length, alignment_heads)
    model.save_pretrained(str(output))
    WhisperFeatureExtractor(feature_size=dims["num_mel_bins"]).save_pretrained(str(output))
    return output


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m convert.whisper_checkpoint", description=__doc__.split("\n")[0])
    parser.add_argument("--size", choices=list(SIZES), default="test")
    parser.add_argument("--output", required=True)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-length", type=int, default=448)
    args = parser.parse_args(argv)
    print(build_checkpoint(args.size, args.output, args.seed, args.max_length))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
