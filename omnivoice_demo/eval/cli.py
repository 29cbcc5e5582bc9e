"""``omnivoice eval``: the command line of a quality evaluation."""

from __future__ import annotations

import argparse
import sys

from ..settings.generation import add_config_arguments, config_from_arguments
from ..settings.limits import limits_from_arguments
from ..errors import InvalidInput, ModelNotAvailable, one_line, reworded

ASR_OFF = "none"
#: how eval is given a recogniser folder
ASR_FOLDER = "--asr-model DIR"


def add_eval_command(commands, add_model_arguments) -> None:
    command = commands.add_parser(
        "eval", help="measure candidates (precisions, presets, streaming) against the exact model (resumable)",
        description="Speak the same items at the same seeds with the exact configuration (--model, fp32 backbone, "
                    "the settings below: Reference by default) and each --candidate, then compare: codes "
                    "agreement, log-mel distance, duration ratio, WER/CER of the speech recogniser, speaker "
                    "similarity of cloned items, time and RTF. Writes report.md, report.json and the WAVs side by "
                    "side into --output; running the same command again redoes nothing finished.")
    add_model_arguments(command)
    command.set_defaults(backbone="fp32")  # the exact configuration's; candidates say their own
    command.add_argument("--output", required=True, help="the output folder")
    command.add_argument("--candidate", action="append", default=[], metavar="SPEC",
                         help="a configuration to compare, key=value,...: name, model, precision, backbone, preset, "
                              "streaming (on/off) or any generation setting, e.g. 'preset=fast', 'backbone=int4', "
                              "'prompt_refresh=4', 'name=fast-int4,preset=fast,precision=int4'; repeat for more")
    command.add_argument("--items", default="builtin",
                         help="builtin (20 sentences in 7 languages), a .txt, .jsonl, or a Seed-TTS / LibriSpeech-PC "
                              ".lst list (see docs/quality.md)")
    command.add_argument("--audio-root", default=None,
                         help="where a LibriSpeech-PC list's clips are (LibriSpeech/test-clean)")
    command.add_argument("--limit", type=int, default=None, help="only the first N items")
    command.add_argument("--seeds", type=int, default=1, help="seeds per item (1..10)")
    command.add_argument("--ref-audio", default=None,
                         help="a clip to clone: the built-in items marked for cloning are also spoken in this voice")
    command.add_argument("--ref-text", default=None, help="what --ref-audio says (default: recognised)")
    command.add_argument("--asr-model", default=None,
                         help=f"speech recogniser for WER/CER: a folder or Hub repo (default: $OMNIVOICE_ASR_MODEL "
                              f"or onnx-community/whisper-base); '{ASR_OFF}' skips intelligibility")
    command.add_argument("--asr-precision", default=None, choices=["fp32", "int8", "q8", "fp16"])
    command.add_argument("--speaker-model", default=None,
                         help="ONNX speaker-verification model for speaker similarity of cloned items: an .onnx "
                              "file, a folder or a Hub repo[:file.onnx] (loaded only when given)")
    command.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_config_arguments(command)
    command.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from ..asr import LazyRecognizer
    from ..asr.source import RecognizerMissing
    from ..hub import console_progress
    from .candidates import EngineCache, exact_candidate, parse_candidate
    from .items import read_eval_items
    from .runner import Scorers, run_eval

    if not args.candidate:
        raise InvalidInput("Give at least one --candidate to compare, e.g. --candidate preset=fast.",
                           param="candidate")
    candidates = [parse_candidate(spec) for spec in args.candidate]
    if args.ref_audio:   # read and checked now, before any model is loaded
        from ..audio.processing import load_audio_file

        limits = limits_from_arguments(args)
        try:
            load_audio_file(args.ref_audio, max_seconds=limits.max_reference_seconds,
                            max_bytes=limits.max_upload_bytes, what="reference audio")
        except InvalidInput as exc:
            raise reworded(exc, f"--ref-audio: {exc}") from exc
    exact = exact_candidate(args.model, args.precision, args.backbone, config_from_arguments(args),
                            backbone_weights=args.backbone_weights)
    items = read_eval_items(args.items, clone_clip=args.ref_audio, clone_text=args.ref_text,
                            audio_root=args.audio_root, limit=args.limit)
    progress = console_progress()
    offline = True if args.offline else None
    # it also transcribes --ref-audio when --ref-text is not given
    recognizer = LazyRecognizer(None if args.asr_model == ASR_OFF else args.asr_model, args.asr_precision,
                                provider=args.provider, threads=args.threads, progress=progress, offline=offline,
                                wording=dict(instead="give --ref-text (what --ref-audio says)", folder=ASR_FOLDER))
    scorers = Scorers()
    if args.asr_model != ASR_OFF:
        try:  # resolved and loaded now, so a missing recogniser stops the run before any work
            recognizer.get()
        except RecognizerMissing as exc:   # said for eval: what needs it, and --asr-model none first
            raise exc.worded(needs="WER/CER (how intelligible the speech is) need a speech recogniser",
                             instead=f"give --asr-model {ASR_OFF} to skip them", folder=ASR_FOLDER) from exc
        except ModelNotAvailable as exc:
            raise ModelNotAvailable(f"{one_line(exc).rstrip('.')}. For WER/CER give --asr-model DIR (a recogniser folder), or "
                                    f"--asr-model {ASR_OFF} to skip them.") from exc
        scorers.recognizer = recognizer
        scorers.recognizer_id = f"{recognizer.spec or 'default'}|{recognizer.precision or 'default'}"
    else:
        scorers.notes.append(f"WER/CER skipped: --asr-model {ASR_OFF}.")
    scorers.speaker, note = open_speaker_model(args.speaker_model, items, args.provider, args.threads, offline,
                                               progress)
    if note:
        scorers.notes.append(note)
    engines = EngineCache(provider=args.provider, threads=args.threads, offline=offline, cache_dir=args.model_cache,
                          recognizer=recognizer, progress=progress, limits=limits_from_arguments(args))
    report = run_eval(items, candidates, args.output, exact=exact, engines=engines, scorers=scorers,
                      seeds=args.seeds, progress=not args.no_progress)
    sys.stdout.write(report.markdown)
    print(f"wrote {args.output}/report.md, report.json and the WAVs (one folder per item and seed)")
    return 0


def open_speaker_model(spec, items, provider: str, threads, offline, progress):
    """(the speaker model or None, a one-line note when speaker similarity is skipped)."""
    cloned = any(item.cloned for item in items)
    if not spec:
        return None, ("speaker similarity skipped: no --speaker-model given (an ONNX speaker-verification model, "
                      "e.g. a WeSpeaker ResNet34 export)." if cloned else None)
    if not cloned:
        return None, "speaker similarity skipped: no item clones a voice (give --ref-audio)."
    from .speaker import SpeakerEmbedder, resolve_speaker_model

    path, identity = resolve_speaker_model(spec, offline=offline, progress=progress)
    return SpeakerEmbedder(path, provider=provider, threads=threads, identity=identity), None
