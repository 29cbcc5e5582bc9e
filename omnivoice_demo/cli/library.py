"""``omnivoice voices list|delete|rename|export|import|variant`` and ``omnivoice languages``: the app's saved
voices (the store the app and ``serve`` use: a folder, or a database with ``--store postgresql://...``;
``export --all`` and ``import`` of several files carry every voice from one store to another), their style variants
(``studio.variants``) and the model's languages, from the command line."""

from __future__ import annotations

import argparse
import pathlib

from ..errors import InvalidInput


def add_library_commands(commands, add_model_arguments, open_engine) -> None:
    """The ``voices`` and ``languages`` commands; ``variant add`` takes the model's flags and opens the engine
    with ``open_engine(args)`` (the command line's) to clone a clip."""
    voices = commands.add_parser("voices", help="the app's saved voices: list, delete, rename, export, import",
                                 description="The voices saved in the app (the folder $OMNIVOICE_DATA/voices, else "
                                             "~/.local/share/omnivoice-onnx-studio/voices; --folder: another).")
    voices.add_argument("--store", "--voice-store", "--folder", default=None, dest="folder", metavar="DIR|URL",
                        help="the voices' store: a folder or postgresql://USER:PASSWORD@HOST:PORT/DATABASE (default: "
                             "$OMNIVOICE_VOICE_STORE, else the app's folder)")
    actions = voices.add_subparsers(dest="action", required=True, parser_class=type(voices))
    actions.add_parser("list", help="the saved voices, one a line: name, seconds, transcript")
    delete = actions.add_parser("delete", help="remove a saved voice")
    delete.add_argument("name")
    rename = actions.add_parser("rename", help="give a saved voice another name")
    rename.add_argument("name")
    rename.add_argument("new_name")
    export = actions.add_parser("export", help="copy a saved voice (or --all) to a folder (NAME.npz and NAME.json)")
    export.add_argument("name", nargs="?", default=None, help="the voice (leave out with --all)")
    export.add_argument("destination", help="the folder to write into (created when missing)")
    export.add_argument("--all", action="store_true", help="every saved voice (to move them to another store: "
                                                           "then omnivoice voices --store OTHER import FOLDER)")
    imported = actions.add_parser("import", help="save voice files (.npz, or a folder of them) in the store")
    imported.add_argument("file", nargs="+", help="voice files, or folders whose .npz files are imported")
    imported.add_argument("--name", default=None, help="the name to save it under (default: the voice's own; one "
                                                       "file only)")
    variant = actions.add_parser("variant", help="a saved voice's style variants (clips tagged cheerful, sad, ...): "
                                                 "add, list, delete")
    styles = variant.add_subparsers(dest="variant_action", required=True, parser_class=type(voices))
    add = styles.add_parser("add", help="add a clip of the voice's speaker in a style, tagged with a word")
    add.add_argument("name", help="the saved voice")
    add.add_argument("tag", help="one word: cheerful, sad, angry, calm, excited, serious, whisper or your own")
    add.add_argument("clip", help="an audio clip of the speaker in that style (cloned with the model: needs "
                                  "--consent), or a voice file (.npz) whose clip it takes")
    add.add_argument("--transcript", default=None, help="what the clip says (default: recognised)")
    add.add_argument("--consent", action="store_true",
                     help="you have the right to use this voice (your own, or one you have permission to use)")
    add_model_arguments(add)
    add.set_defaults(open_engine=open_engine)
    styles.add_parser("list", help="the voice's style variants, one a line: tag, seconds, transcript"
                      ).add_argument("name")
    remove = styles.add_parser("delete", help="remove one of the voice's style variants")
    remove.add_argument("name")
    remove.add_argument("tag")
    voices.set_defaults(run=run_voices)

    languages = commands.add_parser("languages", help="the languages the model speaks: code and name, one a line")
    languages.set_defaults(run=run_languages)


def run_voices(args: argparse.Namespace) -> int:
    from ..studio.voice_store import open_voice_store

    library = open_voice_store(args.folder)
    try:
        return _run_voices(args, library)
    finally:
        library.close()


def _run_voices(args: argparse.Namespace, library) -> int:
    if args.action == "list":
        names = library.names()
        if not names:
            print(f"no saved voices in {library.describe()} (save one in the app's Clone tab, or: omnivoice voices import "
                  "FILE.npz)")
        for name in names:
            try:
                voice = library.load(name)
            except InvalidInput as exc:
                print(f"{name}\t(unreadable: {exc})")
                continue
            styles = f"\tstyles: {', '.join(voice.variants)}" if voice.variants else ""
            print(f"{name}\t{voice.seconds:.1f} s\t{voice.transcript}{styles}")
    elif args.action == "variant":
        return run_variant(args, library)
    elif args.action == "delete":
        library.delete(args.name)
        print(f"deleted the voice {args.name!r}")
    elif args.action == "rename":
        print(f"renamed {args.name!r} to {library.rename(args.name, args.new_name)!r}")
    elif args.action == "export":
        if args.all == (args.name is not None):
            raise InvalidInput("Give a voice's name, or --all for every voice (not both).", param="name")
        for name in (library.names() if args.all else [args.name]):
            print("wrote " + " and ".join(str(path) for path in library.export(name, args.destination)))
    else:
        files = [path for given in args.file for path in voice_files(pathlib.Path(given))]
        if args.name is not None and len(files) != 1:
            raise InvalidInput(f"--name names one voice; {len(files)} files were given.", param="name")
        for path in files:
            try:
                name = library.import_file(path, args.name)
            except InvalidInput as exc:
                if exc.param != "name":  # the name is taken (a bad file is said as it is)
                    raise
                raise InvalidInput(f"{exc} Import it under another name: omnivoice voices import {path} --name "
                                   "NEW.", param="name") from exc
            print(f"saved the voice as {name!r} in {library.describe()}")
    return 0


def voice_files(given: pathlib.Path) -> list[pathlib.Path]:
    """``given``, or the ``.npz`` files of the folder ``given`` (sorted; ``InvalidInput`` when it has none)."""
    if not given.is_dir():
        return [given]
    found = sorted(given.glob("*.npz"))
    if not found:
        raise InvalidInput(f"The folder {given} holds no voice files (.npz).", param="file")
    return found


def run_variant(args: argparse.Namespace, library) -> int:
    """``omnivoice voices variant add|list|delete``."""
    from ..studio.variants import add_variant, check_room, remove_variant, variant_listing, variant_name

    if args.variant_action == "list":
        voice = library.load(args.name)
        if not voice.variants:
            print(f"the voice {voice.name!r} has no style variants (add one: omnivoice voices variant add "
                  f"{voice.name!r} TAG CLIP)")
        for item in variant_listing(voice, details=True):
            print(f"{item['tag']}\t{item['seconds']:.1f} s\t{item['transcript']}")
    elif args.variant_action == "delete":
        voice = library.change(args.name, lambda saved: remove_variant(saved, args.tag))
        print(f"deleted the style {args.tag!r} of the voice {voice.name!r}")
    else:
        from ..settings.limits import limits_from_arguments

        limits = limits_from_arguments(args)
        library.max_variants = limits.max_voice_variants
        tag = check_room(library.load(args.name), args.tag, library.max_variants)  # before the clip is cloned
        clip = variant_clip(args, tag, limits)
        voice = library.change(args.name, lambda saved: add_variant(saved, tag, clip, library.max_variants))
        print(f"added the style {tag!r} ({clip.seconds:.1f} s) to the voice {voice.name!r}: speak with it as "
              f"--voice {variant_name(voice.name, tag)!r}, or --voice {voice.name!r} --instruct {tag!r}")
    return 0


def variant_clip(args: argparse.Namespace, tag: str, limits):
    """The clip of ``variant add``: a voice file's own, or an audio clip cloned (consent first, then the clip is
    checked, then the model loaded)."""
    from ..storage.voice_file import Voice

    if pathlib.Path(args.clip).suffix.lower() == ".npz":
        return Voice.load(args.clip, max_frames=limits.max_reference_frames, max_bytes=limits.max_upload_bytes)
    if not args.consent:
        raise InvalidInput("Add --consent to confirm you have the right to use this voice (your own, or one you have "
                           "permission to use).", param="consent")
    from ..audio.processing import load_audio_file

    audio, rate = load_audio_file(args.clip, max_seconds=limits.max_reference_seconds,
                                  max_bytes=limits.max_upload_bytes, what="clip")
    return args.open_engine(args).clone_voice(audio, rate, transcript=args.transcript, name=tag)


def run_languages(args: argparse.Namespace) -> int:
    from ..studio.vocabulary import language_choices

    for name, code in language_choices():
        print(f"{code}\t{name}")
    return 0
