"""Command line: speak text, or round-trip audio through the codec.

    omnivoice synth --model DIR --text "Hello." [--language en] [--instruct "female"]
        [--ref-audio ref.wav --ref-text "what the reference says"] [--num-step 32] [--seed 1] [--output out.wav]
    omnivoice codec --model DIR --input in.wav --output rt.wav
    omnivoice batch --model DIR --input items.jsonl --output out/ [--workers N] [--ray auto] [--subtitles srt,vtt]

Every ``GenerationConfig`` setting is a flag of ``synth`` (``--help`` lists them).
Known errors print one ``error: ...`` line and exit with status 2; anything
else is an internal error (its traceback is logged, status 1).
"""

from __future__ import annotations

import argparse
import logging
import pathlib
import sys

from .config import add_config_arguments, config_from_arguments
from .constants import BITS_PER_CODE, FRAME_RATE
from .errors import OmniVoiceError, one_line


def add_model_arguments(parser: argparse.ArgumentParser) -> None:
    from .hub import add_model_arguments as add_hub_arguments

    add_hub_arguments(parser)  # --model, --precision, --offline
    parser.add_argument("--provider", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument("--threads", type=int, default=None, help="intra-op threads (default: all cores)")


def open_engine(args):
    from .engine import OmniVoiceEngine
    from .hub import console_progress, resolve_from_args

    resolved = resolve_from_args(args, progress=console_progress())
    # the resolver has just checked every file (sha256): the engine checks sizes only
    return OmniVoiceEngine(resolved.path, provider=args.provider, threads=args.threads, verify="size")


def synth(args) -> int:
    import soundfile
    from tqdm import tqdm

    engine = open_engine(args)
    voice = None
    if args.ref_audio:
        voice = engine.clone_voice(args.ref_audio, transcript=args.ref_text, preprocess=args.preprocess_prompt)
    elif args.voice:
        voice = args.voice
    stream = engine.stream(args.text, language=args.language, instruct=args.instruct, voice=voice,
                           config=config_from_arguments(args))
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
    soundfile.write(str(args.output), decoded, engine.codec.sample_rate)
    print(f"wrote {args.output}: {codes.shape[1]} frames x {codes.shape[0]} codebooks "
          f"({codes.shape[1] / FRAME_RATE:.2f} s, {codes.shape[0] * BITS_PER_CODE * FRAME_RATE / 1000:.1f} kbit/s)")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="omnivoice", description="OmniVoice on ONNX Runtime")
    commands = parser.add_subparsers(dest="command", required=True)

    speak = commands.add_parser("synth", help="text to speech")
    add_model_arguments(speak)
    speak.add_argument("--text", required=True)
    speak.add_argument("--language", default=None, help="language name or code (default: none)")
    speak.add_argument("--instruct", default=None, help='voice design, e.g. "female, low pitch, british accent"')
    speak.add_argument("--ref-audio", default=None, help="reference audio to clone")
    speak.add_argument("--ref-text", default=None, help="what the reference audio says")
    speak.add_argument("--voice", default=None, help="a saved voice (.npz)")
    speak.add_argument("--output", default="out.wav")
    add_config_arguments(speak)
    speak.set_defaults(run=synth)

    round_trip = commands.add_parser("codec", help="audio -> codes -> audio")
    add_model_arguments(round_trip)
    round_trip.add_argument("--input", required=True)
    round_trip.add_argument("--output", default="roundtrip.wav")
    round_trip.set_defaults(run=codec)

    from .batch.cli import add_batch_command

    add_batch_command(commands, add_model_arguments)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except OmniVoiceError as exc:
        print(f"error: {one_line(exc)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    except Exception:  # an internal error: the traceback goes to the log, the user gets one line
        logging.getLogger("omnivoice").exception("internal error")
        print("error: internal error (the log above has the details); please report it", file=sys.stderr)
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
