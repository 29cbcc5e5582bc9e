"""python -m convert --model CKPT_DIR --output DIR --device cpu|cpu_fp16|gpu|cpu_fp32 ..."""

from __future__ import annotations

import argparse
import sys
import time

from omnivoice_demo.extras import missing_extras_error


def main(argv: list[str] | None = None) -> int:
    # in an installation of the runtime only, one line that says what to install (not a traceback
    # from deep inside the pipeline): checked before the pipeline is imported
    problem = missing_extras_error("python -m convert")
    if problem:
        print(problem, file=sys.stderr)
        return 2
    from convert.pipeline import PROFILES, convert_checkpoint

    parser = argparse.ArgumentParser(
        prog="python -m convert",
        description="Build an OmniVoice ONNX model folder (bidirectional backbone) from a PyTorch checkpoint.",
    )
    parser.add_argument("--model", required=True, help="OmniVoice PyTorch checkpoint folder")
    parser.add_argument("--output", required=True, help="folder to write")
    parser.add_argument("--device", choices=list(PROFILES), default="cpu",
                        help="precision profile: cpu = int4 backbone + int4 embeddings; cpu_int8 = 8-bit backbone (see "
                             "--int8-form) + int4 embeddings; cpu_fp16 = fp16 audio graphs + int4 backbone; gpu = "
                             "fp16 for the CUDA provider; cpu_fp32 = reference-exact")
    codec = parser.add_mutually_exclusive_group()
    codec.add_argument("--include-higgs", action="store_true", default=True,
                       help="include the audio codec graphs in audio_tokenizer/ (default)")
    codec.add_argument("--no-higgs", dest="include_higgs", action="store_false",
                       help="build the backbone graphs only")
    codec.add_argument("--higgs-only", action="store_true", help="build only the audio codec graphs")
    parser.add_argument("--higgs-precision", choices=["fp16", "fp32"], default=None,
                        help="codec precision (default: the profile's)")
    parser.add_argument("--int4-accuracy-level", type=int, choices=[1, 2, 3, 4], default=None,
                        help="MatMulNBits accuracy level of the int4 backbone: 1 = fp32 activations, 4 = int8 (the CPU default)")
    parser.add_argument("--int4-block-size", type=int, choices=[16, 32, 64, 128], default=32,
                        help="int4 block size (default 32; 128 is smaller and loses quality)")
    parser.add_argument("--int8-form", choices=["int8", "int8-row", "int8-block", "int8-tensor"], default="int8",
                        help="the cpu_int8 profile's backbone: int8 = dense int8, outlier channels in fp32 (default); "
                             "int8-row = the same with one activation scale per row; int8-block = 8-bit MatMulNBits; "
                             "int8-tensor = dense int8, nothing kept apart (fastest; outlier channels break it)")
    parser.add_argument("--causal", action="store_true",
                        help="keep genai's causal attention (the published export's mistake; for tests only)")
    args = parser.parse_args(argv)
    from omnivoice_demo.runtime.memory import bound_heap

    bound_heap()  # our own process: the 8-bit rebuild's buffers go back to the system when freed
    return run_build(lambda: convert_checkpoint(
        args.model, args.output, profile=args.device, include_codec=args.include_higgs,
        codec_only=args.higgs_only, codec_precision=args.higgs_precision,
        bidirectional=not args.causal, int4_accuracy_level=args.int4_accuracy_level,
        int4_block_size=args.int4_block_size, int8_form=args.int8_form,
    ))


def run_build(build) -> int:
    """Run ``build()`` (returns the folder written) for a command: "done: FOLDER (N s)", or one error line, 2."""
    started = time.perf_counter()
    try:
        folder = build()
    except (FileNotFoundError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"done: {folder} ({time.perf_counter() - started:.1f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
