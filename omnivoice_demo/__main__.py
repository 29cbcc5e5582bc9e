"""Command line: speak text, or round-trip audio through the codec.

    python -m omnivoice_demo synth --model DIR --text "Hello." [--language en] [--instruct "female"]
        [--ref-audio ref.wav --ref-text "what the reference says"] [--steps 32] [--seed 1] [--output out.wav]
    python -m omnivoice_demo codec --model DIR --input in.wav --output rt.wav
"""

from __future__ import annotations

import argparse
import pathlib
import sys

from .manifest import ModelFolderError


def add_model_arguments(parser: argparse.ArgumentParser) -> None:
    from .hub import add_model_arguments as add_hub_arguments

    add_hub_arguments(parser)  # --model, --precision, --offline
    parser.add_argument("--provider", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument("--threads", type=int, default=None, help="intra-op threads (default: all cores)")


def open_engine(args):
    from .engine import OmniVoiceEngine
    from .hub import console_progress, resolve_from_args

    folder = resolve_from_args(args, progress=console_progress())
    return OmniVoiceEngine(folder, provider=args.provider, threads=args.threads)


def synth(args) -> int:
    import soundfile
    from tqdm import tqdm

    engine = open_engine(args)
    voice = None
    if args.ref_audio:
        voice = engine.clone_voice(args.ref_audio, transcript=args.ref_text)
    elif args.voice:
        voice = args.voice
    stream = engine.stream(args.text, language=args.language, instruct=args.instruct, voice=voice,
                           duration=args.duration, speed=args.speed, num_step=args.steps, seed=args.seed,
                           guidance_scale=args.guidance_scale)
    bar = None
    result = None
    for event in stream:
        if event.kind == "step":
            if bar is None or bar.desc != f"chunk {event.chunk + 1}/{event.num_chunks}":
                if bar is not None:
                    bar.close()
                bar = tqdm(total=event.num_steps, desc=f"chunk {event.chunk + 1}/{event.num_chunks}",
                           unit="step", file=sys.stderr)
            bar.update(1)
        elif event.kind == "result":
            result = event
    if bar is not None:
        bar.close()
    output = pathlib.Path(args.output)
    soundfile.write(str(output), result.audio, result.sample_rate)
    print(f"wrote {output}: {result.duration:.2f} s of audio, {result.frames} frames, "
          f"{len(result.chunks)} chunk(s), seed {result.seed}, {result.timings['total']:.2f} s "
          f"(RTF {result.rtf:.2f})")
    return 0


def codec(args) -> int:
    import soundfile

    from .audio import load_audio_file

    engine = open_engine(args)
    audio, sample_rate = load_audio_file(args.input)
    codes = engine.encode(audio, sample_rate)
    decoded = engine.decode(codes)
    soundfile.write(str(args.output), decoded, 24000)
    print(f"wrote {args.output}: {codes.shape[1]} frames x {codes.shape[0]} codebooks "
          f"({codes.shape[1] / 25:.2f} s, {codes.shape[0] * 10 * 25 / 1000:.1f} kbit/s)")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m omnivoice_demo", description="OmniVoice on ONNX Runtime")
    commands = parser.add_subparsers(dest="command", required=True)

    speak = commands.add_parser("synth", help="text to speech")
    add_model_arguments(speak)
    speak.add_argument("--text", required=True)
    speak.add_argument("--language", default=None, help="language name or code (default: none)")
    speak.add_argument("--instruct", default=None, help='voice design, e.g. "female, low pitch, british accent"')
    speak.add_argument("--ref-audio", default=None, help="reference audio to clone")
    speak.add_argument("--ref-text", default=None, help="what the reference audio says")
    speak.add_argument("--voice", default=None, help="a saved voice (.npz)")
    speak.add_argument("--duration", type=float, default=None, help="seconds of speech (default: estimated)")
    speak.add_argument("--speed", type=float, default=1.0)
    speak.add_argument("--steps", type=int, default=32)
    speak.add_argument("--guidance-scale", type=float, default=2.0)
    speak.add_argument("--seed", type=int, default=None)
    speak.add_argument("--output", default="out.wav")
    speak.set_defaults(run=synth)

    round_trip = commands.add_parser("codec", help="audio -> codes -> audio")
    add_model_arguments(round_trip)
    round_trip.add_argument("--input", required=True)
    round_trip.add_argument("--output", default="roundtrip.wav")
    round_trip.set_defaults(run=codec)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except (ValueError, ModelFolderError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
