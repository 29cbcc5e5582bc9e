"""Command line: speak text, or round-trip audio through the codec.

    omnivoice synth --model DIR --text "Hello." [--language en] [--instruct "female"]
        [--ref-audio ref.wav [--ref-text "what the reference says"]] [--num-step 32] [--seed 1] [--output out.wav]
    omnivoice codec --model DIR --input in.wav --output rt.wav
    omnivoice batch --model DIR --input items.jsonl --output out/ [--workers N] [--ray auto] [--subtitles srt,vtt]
    omnivoice serve --model DIR [--port 8880] [--api-key KEY] [--wyoming-uri tcp://0.0.0.0:10200]
        (the OpenAI-compatible HTTP API, no UI; with --wyoming-uri the Wyoming server too, one queue)
    omnivoice wyoming --model DIR [--uri tcp://127.0.0.1:10200] [--zeroconf]   (Home Assistant's Wyoming server)
    omnivoice eval --model DIR --output out/ --candidate preset=fast [--candidate backbone=int4 ...]
        (quality of the fast paths against the exact model: omnivoice_demo.eval)
    omnivoice voices list|delete NAME|rename NAME NEW|export NAME DIR|import FILE.npz   (the app's saved voices)
    omnivoice voices variant add NAME TAG CLIP|list NAME|delete NAME TAG   (a saved voice's style variants)
    omnivoice languages

``--voice`` (synth) and a batch row's ``voice`` are read as everywhere (``studio.vocabulary``): a
voice saved in the app (or one of its style variants, ``"Anna (cheerful)"``; a word of ``--instruct`` that
is one of its tags picks that clip too), then a named design (``alloy``, ``whisper``, ...), then a ``.npz`` path;
``--text -`` reads the text from standard input.

Every ``GenerationConfig`` setting is a flag of ``synth`` (``--help`` lists them).
The per-request limits are those of the user's own machine (``--limits local``)
for every command but the servers (``serve``, ``wyoming``: a public server's);
``--limits public`` or one ``--max-...`` flag per limit sets others.  The output
path and format, and every check and limit the request decides, are made before
the model is loaded (``engine.planner``).  Known errors (a wrong flag too) print
one ``error: ...`` line and exit with status 2 (``refusals``); anything else is
an internal error (its traceback is logged, status 1).
"""

from __future__ import annotations

import argparse
import functools
import os
import pathlib
import sys
from typing import Optional

from ..text.lexicon import lexicon_argument
from ..text.ssml import looks_like_ssml, parse as parse_ssml
from ..settings.generation import add_config_arguments, config_from_arguments
from ..settings.limits import add_limit_arguments, limits_from_arguments
from ..constants import BITS_PER_CODE, FRAME_RATE
from ..backbones.choice import add_backbone_argument, backbone_settings
from ..errors import InvalidInput, check_control_tokens
from .outputs import check_output, check_side_output, write_audio
from .refusals import OneLineParser, flagged, run_command
from ..studio.variants import read_voice_description

MAX_THREADS = 1024
#: the largest --script file (its text is then held to the text limit)
MAX_SCRIPT_BYTES = 1024 * 1024


def _speaker(text: str) -> tuple[str, str]:
    name, equals, voice = text.partition("=")
    if not equals or not name.strip() or not voice.strip():
        raise argparse.ArgumentTypeError(f"--speaker takes NAME=VOICE (e.g. Anna=alloy), got {text!r}")
    return name.strip(), voice.strip()


def _threads(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--threads must be a whole number, got {text!r}") from None
    if not 1 <= value <= MAX_THREADS:
        raise argparse.ArgumentTypeError(f"--threads must be between 1 and {MAX_THREADS}, got {value}")
    return value


def add_model_arguments(parser: argparse.ArgumentParser, limits: str = "local") -> None:
    """The model's flags and the limits' (``limits``: their preset, the user's own machine's but for servers)."""
    from ..hub import add_model_arguments as add_hub_arguments

    add_hub_arguments(parser)  # --model, --precision, --offline
    parser.add_argument("--provider", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument("--threads", type=_threads, default=None,
                        help=f"intra-op threads, 1..{MAX_THREADS} (default: all cores)")
    add_limit_arguments(parser, default=limits)
    add_backbone_argument(parser)


def open_engine(args, check=None):
    """The engine of the command's model flags; ``check(planner)`` first, with the folder's ``TextPlanner``
    (every check and limit of a request, before the graphs are loaded)."""
    from ..engine.loop import OmniVoiceEngine
    from ..hub import console_progress, resolve_from_args

    from ..asr import LazyRecognizer

    resolved = resolve_from_args(args, progress=console_progress())
    if check is not None:
        from ..engine.planner import TextPlanner

        check(TextPlanner(resolved.path, limits=limits_from_arguments(args)))
    recognizer = LazyRecognizer(getattr(args, "asr_model", None), getattr(args, "asr_precision", None),
                                provider=args.provider, threads=args.threads, progress=console_progress(),
                                offline=True if getattr(args, "offline", False) else None,
                                wording=recognizer_wording(args))
    # the resolver has just checked every file (sha256): the engine checks sizes only
    return OmniVoiceEngine(resolved.path, provider=args.provider, threads=args.threads, verify="size",
                           limits=limits_from_arguments(args), recognizer=recognizer,
                           **backbone_settings(args, resolved))


def recognizer_wording(args) -> dict:
    """How a recogniser that cannot be had is said by this command (``RecognizerMissing.worded``): what to type
    instead of a recognised transcript, and the command's way to give a recogniser folder."""
    from ..asr.source import RECOGNIZER_ENV

    folder = "--asr-model DIR" if hasattr(args, "asr_model") else f"${RECOGNIZER_ENV}=DIR"
    if getattr(args, "clip", None):   # voices variant add
        return dict(instead="give --transcript (what the clip says)", folder=folder)
    if getattr(args, "ref_audio", None) and not getattr(args, "ref_text", None):
        return dict(instead="give --ref-text (what --ref-audio says)", folder=folder)
    return dict(instead=None, folder=folder)   # word timings, the sentence check: their own words say what to do


def synth(args) -> int:
    output = check_output(args.output)
    config = config_from_arguments(args)
    args.words_path = check_side_output(args.words, (".json",), "--words", "JSON: give a file name ending in .json")
    args.subtitles_path = check_side_output(args.subtitles, (".srt", ".vtt"), "--subtitles",
                                            ".srt (cues of a few words) or .vtt (the same, each word's start "
                                            "marked: karaoke)")
    if args.words_path is not None or args.subtitles_path is not None:
        config = config.replace(word_timestamps=True)
    if args.script is not None:
        return synth_script(args, output, config)
    if args.speaker:
        raise InvalidInput("--speaker gives the voices of a --script's names; give --script too.", param="speaker")
    text, reference = checked_inputs(args)  # before the model is loaded
    lookup = voice_lookup(args)
    voice, design = lookup(args.voice) if args.voice and not args.ref_audio else (None, None)
    voice, description = read_voice_description(voice, args.instruct, strict=args.strict_instruct,
                                                limits=limits_from_arguments(args), param="--instruct")
    if description.text is not None:
        print(description.note(), file=sys.stderr)
    ssml = args.ssml or looks_like_ssml(text)
    if ssml:   # checked (line, column) before the model is loaded; what is read otherwise than written is said
        for note in flagged("--text", parse_ssml, text, limits_from_arguments(args)).notes:
            print(f"SSML: {note}", file=sys.stderr)
    request = dict(instruct=description.instruct or design, config=config, pronunciations=args.lexicon, ssml=ssml,
                   voices=lookup)
    # every check and limit the request decides without the model (a cloned voice's are made when it is known)
    engine = open_engine(args, check=lambda planner: planner.prepare(text, language=args.language, voice=voice,
                                                                     **request))
    if reference is not None:
        voice = engine.clone_voice(*reference, transcript=args.ref_text, preprocess=config.preprocess_prompt)
        if voice.transcript_source == "recognised":
            print(f"recognised transcript ({voice.language or 'language unknown'}): {voice.transcript}",
                  file=sys.stderr)
    language = args.language
    if language is None and voice is not None and getattr(voice, "language", None):
        language = offered_language(voice.language)
    stream = engine.stream(text, language=language, voice=voice, **request)
    return report(output, stream, args.words_path, args.subtitles_path)


def synth_script(args, output: pathlib.Path, config) -> int:
    """``synth --script``: every turn in its speaker's voice, in one file; who speaks when on standard output."""
    from ..text.languages import resolve_language
    from ..text.script import read_script

    if args.ref_audio or args.voice or args.instruct:
        raise InvalidInput("--script gives each name its voice (in the script or with --speaker); leave out "
                           "--voice, --instruct and --ref-audio.", param="script")
    script = flagged("--script", read_script_file, args.script)
    limits_from_arguments(args).check("The script", len(script), "max_text_chars", " characters")
    flagged("--language", resolve_language, args.language)
    turns = flagged("--script", read_script, script, voice_lookup(args), dict(args.speaker))  # before the model
    request = dict(language=args.language, config=config, pronunciations=args.lexicon)
    engine = open_engine(args, check=lambda planner: flagged("--script", planner.prepare_turns, turns, **request))
    plan = flagged("--script", engine.prepare_turns, turns, **request)
    return report(output, engine.run(plan), args.words_path, args.subtitles_path)


def read_script_file(path: str) -> str:
    """The text of ``--script FILE`` (``-``: standard input), at most 1 MB of UTF-8 text."""
    if path == "-":
        return read_text("-")
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_SCRIPT_BYTES + 1)
    except OSError as exc:
        raise InvalidInput(f"{path} cannot be read ({exc.strerror or exc}).", param="script") from None
    if len(data) > MAX_SCRIPT_BYTES:
        raise InvalidInput(f"{path} is over {MAX_SCRIPT_BYTES // 1024} KB; split the script.", param="script")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise InvalidInput(f"{path} is not UTF-8 text.", param="script") from None


def report(output: pathlib.Path, stream, words: Optional[pathlib.Path] = None,
           subtitles: Optional[pathlib.Path] = None) -> int:
    """Run a generation's events with a progress bar, write its audio (and with ``words`` its words' times, JSON;
    with ``subtitles`` word-level cues, SRT or karaoke WebVTT), print what was made."""
    from tqdm import tqdm

    bar = None
    result = first_audio = None
    for event in stream:
        if event.kind in ("chunk", "segment") and first_audio is None:
            first_audio = event.elapsed
        if event.kind == "step":
            desc = f"chunk {event.chunk + 1}/{event.num_chunks}" + (f" take {event.take}" if event.take > 1 else "")
            if bar is None or bar.desc != desc:
                if bar is not None:
                    bar.close()
                bar = tqdm(total=event.num_steps, desc=desc, unit="step", file=sys.stderr)
            bar.update(1)
        elif event.kind == "result":
            result = event
    if bar is not None:
        bar.close()
    write_audio(output, result.audio, result.sample_rate)
    if words is not None:
        from ..storage.atomic import atomic_write_json

        atomic_write_json(words, {"audio": output.name, "duration": round(result.duration, 3),
                                  "words": [word.to_dict() for word in result.words]})
        print(f"wrote {words}: {len(result.words)} words with their times", file=sys.stderr)
    if subtitles is not None:
        from ..batch.subtitles import word_subtitles
        from ..storage.atomic import write_atomically

        text = word_subtitles(result.words, "srt" if subtitles.suffix.lower() == ".srt" else "vtt")
        write_atomically(subtitles, text.encode("utf-8"))
        print(f"wrote {subtitles}: subtitles of {len(result.words)} words", file=sys.stderr)
    print(f"wrote {output}: {result.duration:.2f} s of audio, {result.frames} frames, "
          f"{len(result.chunks)} chunk(s), seed {result.seed}, {result.timings['total']:.2f} s "
          f"(RTF {result.rtf:.2f}), first audio after {first_audio:.2f} s")
    print(f"numbers: {result.settings.get('normalized', 'off')} ({result.settings.get('normalized_note', '')})")
    for check in result.checks:  # --guard: how each chunk fared
        print(check.line())
    for turn in result.turns:  # --script: who speaks when
        print(f"{turn['start']:8.2f} s - {turn['end']:8.2f} s  {turn['speaker']}: {turn['text']}")
    return 0


def checked_inputs(args) -> tuple[str, tuple | None]:
    """(the text, the reference audio and its rate or None) of ``synth``, checked before any model is loaded,
    each refusal naming its flag."""
    from ..audio.processing import load_audio_file
    from ..text.languages import resolve_language
    from ..text.prompt import validate_text

    text = flagged("--text", validate_text, read_text(args.text))
    limits = limits_from_arguments(args)
    if not (args.ssml or looks_like_ssml(text)):   # SSML's markup and text have their own limits (parse_ssml)
        flagged("--text", limits.check, "The text", len(text), "max_text_chars", " characters")
        flagged("--text", check_control_tokens, text, "The text")
    if args.ref_text:
        flagged("--ref-text", limits.check, "The transcript", len(args.ref_text), "max_text_chars", " characters")
    flagged("--language", resolve_language, args.language)
    reference = None
    if args.ref_audio:
        reference = flagged("--ref-audio", load_audio_file, args.ref_audio, max_seconds=limits.max_reference_seconds,
                            max_bytes=limits.max_upload_bytes, what="reference audio")
    return text, reference


def read_text(value: str) -> str:
    """``--text``: the text, or ``-`` for standard input (a pipe or a file: ``< story.txt``)."""
    if value != "-":
        return value
    text = sys.stdin.read()
    if not text.strip():
        raise InvalidInput("--text - read no text from standard input; pipe the text in, or give it as --text.",
                           param="text")
    return text


def cli_voice(name: str, store=None, listed_by: str = "omnivoice voices list"):
    """(voice, design) of ``--voice``: a voice saved in the app, a named design, or a .npz path.  ``store`` opens
    the saved voices' store (``voice_lookup``; None: $OMNIVOICE_VOICE_STORE, else the app's folder), asked only
    for a name that is not a design (one query for the name, one for the voice)."""
    from ..studio.vocabulary import resolve_voice
    from ..studio.voice_store import open_voice_store

    opened = store or functools.cache(open_voice_store)
    return resolve_voice(name, lambda wanted: opened().find(wanted), lambda found: opened().load(found),
                         listed_by=listed_by, path_base=pathlib.Path.cwd())


def voice_lookup(args):
    """``cli_voice`` on the store of ``synth --voice-store`` (else $OMNIVOICE_VOICE_STORE, else the app's folder)
    with its ``--voice-store-*-timeout`` flags, opened once, when a name that is not a design is first looked up;
    the command to list its voices names it without its password."""
    from ..settings.store import store_timeouts_from_arguments
    from ..studio.store_url import redact_store_url
    from ..studio.voice_store import open_voice_store

    url = getattr(args, "voice_store", None)
    listed_by = f"omnivoice voices --store {redact_store_url(url)} list" if url else "omnivoice voices list"
    opened = functools.cache(functools.partial(open_voice_store, url, timeouts=store_timeouts_from_arguments(args)))
    return functools.partial(cli_voice, store=opened, listed_by=listed_by)


def offered_language(whisper_code: str):
    """The recogniser's language as the speech's language, when the model knows it (else none)."""
    from ..errors import InvalidInput
    from ..text.languages import resolve_language

    try:
        return resolve_language(whisper_code)
    except InvalidInput:
        return None


def codec(args) -> int:
    output = check_output(args.output)
    engine = open_engine(args)
    audio, sample_rate = engine.load_audio(args.input, purpose="codec")
    codes = engine.encode(audio, sample_rate)
    decoded = engine.decode(codes)
    write_audio(output, decoded, engine.codec.sample_rate)
    print(f"wrote {args.output}: {codes.shape[1]} frames x {codes.shape[0]} codebooks "
          f"({codes.shape[1] / FRAME_RATE:.2f} s, {codes.shape[0] * BITS_PER_CODE * FRAME_RATE / 1000:.1f} kbit/s)")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="omnivoice", description="OmniVoice on ONNX Runtime")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=OneLineParser)

    speak = commands.add_parser("synth", help="text to speech")
    add_model_arguments(speak)
    source = speak.add_mutually_exclusive_group(required=True)
    source.add_argument("--text", help="the text to speak; - reads it from standard input")
    source.add_argument("--script", metavar="FILE",
                        help="a dialogue script to speak: 'Name: text' (or '[Name] text') lines, each name a saved "
                             "voice, a design or an OpenAI voice name, or given one with --speaker; - reads it "
                             "from standard input (docs/text.md)")
    speak.add_argument("--speaker", action="append", default=[], metavar="NAME=VOICE", type=_speaker,
                       help="with --script: the voice of a name (repeat for each), e.g. --speaker Anna=alloy")
    speak.add_argument("--ssml", action="store_true",
                       help="the text is SSML (also without this flag when it starts with <speak): pauses, "
                            "pace, voices by name, pronunciations (docs/ssml.md)")
    speak.add_argument("--lexicon", default=None, metavar="FILE", type=lexicon_argument,
                       help="pronunciations: a TSV (word<TAB>say[<TAB>match_case]) or JSON file; say is a CMU "
                            "override [B EY1 S], pinyin with tones or a respelling (docs/text.md)")
    speak.add_argument("--language", default=None,
                       help="language name or code (default: none, or the language recognised in --ref-audio)")
    speak.add_argument("--instruct", default=None,
                       help='the voice in your own words or as items, e.g. "a deep, calm British man" or "female, low '
                            'pitch"; one line on stderr says what was applied and what was ignored')
    speak.add_argument("--strict-instruct", action="store_true",
                       help="refuse an --instruct with any word that is not understood (and list the known items)")
    speak.add_argument("--ref-audio", default=None, help="reference audio to clone")
    speak.add_argument("--ref-text", default=None,
                       help="what the reference audio says (default: recognised by the speech recogniser)")
    speak.add_argument("--asr-model", default=None,
                       help="speech recogniser: a folder (python -m convert.whisper) or a Hub repo "
                            "(default: $OMNIVOICE_ASR_MODEL or onnx-community/whisper-base)")
    speak.add_argument("--asr-precision", default=None, choices=["fp32", "int8", "q8", "fp16"],
                       help="precision of the recogniser's graphs (default int8)")
    speak.add_argument("--voice", default=None,
                       help="a voice saved in the app (omnivoice voices list), a named design (alloy, echo, ..., "
                            "whisper) or a voice file (.npz)")
    from ..studio.voice_store import add_voice_store_argument

    add_voice_store_argument(speak)   # where --voice's saved voices are (docs/deploy.md)
    speak.add_argument("--output", default="out.wav")
    speak.add_argument("--words", default=None, metavar="FILE.json",
                       help="also write every word's start and end (s) in the output, aligned by the speech "
                            "recogniser (turns word_timestamps on; docs/timestamps.md)")
    speak.add_argument("--subtitles", default=None, metavar="FILE.srt|FILE.vtt",
                       help="also write word-level subtitles: cues of a few words (.srt), or the same with each "
                            "word's start marked for karaoke highlighting (.vtt); turns word_timestamps on")
    add_config_arguments(speak)
    speak.set_defaults(run=synth)

    round_trip = commands.add_parser("codec", help="audio -> codes -> audio")
    add_model_arguments(round_trip)
    round_trip.add_argument("--input", required=True)
    round_trip.add_argument("--output", default="roundtrip.wav")
    round_trip.set_defaults(run=codec)

    from ..batch.cli import add_batch_command

    add_batch_command(commands, add_model_arguments)
    from ..book.cli import add_book_command

    add_book_command(commands, add_model_arguments)
    from ..eval.cli import add_eval_command

    add_eval_command(commands, add_model_arguments)
    from ..api.server import add_serve_command

    from ..wyoming.server import add_wyoming_command, start_beside, wyoming_arguments

    servers = functools.partial(add_model_arguments, limits="public")   # a server keeps a public server's limits
    serve = add_serve_command(commands, servers)
    wyoming_arguments(serve)  # --wyoming-uri: Home Assistant's server on the HTTP API's queue
    serve.set_defaults(start_beside=start_beside)
    add_wyoming_command(commands, servers)
    from .library import add_library_commands

    add_library_commands(commands, servers, open_engine)   # the saved voices the servers read: their limits
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    for position, arg in enumerate(argv, start=1):
        try:
            arg.encode("utf-8")
        except UnicodeEncodeError:  # a byte that is not UTF-8 (Python keeps it as a lone surrogate)
            shown = os.fsencode(arg).decode("ascii", "backslashreplace")
            print(f"error: argument {position} ({shown}) is not valid UTF-8 text; pass text and paths as UTF-8",
                  file=sys.stderr)
            return 2
    args = build_parser().parse_args(argv)
    from ..runtime.memory import bound_heap

    bound_heap()  # our own process: its large buffers go back to the system when freed (runtime/memory.py)
    return run_command(args.run, args)   # one error line and status (refusals: the mapping every front end shares)


if __name__ == "__main__":
    raise SystemExit(main())
