"""``omnivoice voices list|delete|rename|export|import`` and ``omnivoice languages``: the app's saved voices
(``studio.VoiceLibrary``, the folder the app and ``serve`` use) and the model's languages, from the command line."""

from __future__ import annotations

import argparse

from ..errors import InvalidInput


def add_library_commands(commands) -> None:
    voices = commands.add_parser("voices", help="the app's saved voices: list, delete, rename, export, import",
                                 description="The voices saved in the app (the folder $OMNIVOICE_DATA/voices, else "
                                             "~/.local/share/omnivoice-onnx-studio/voices; --folder: another).")
    voices.add_argument("--folder", default=None, help="the voices folder (default: the app's)")
    actions = voices.add_subparsers(dest="action", required=True, parser_class=type(voices))
    actions.add_parser("list", help="the saved voices, one a line: name, seconds, transcript")
    delete = actions.add_parser("delete", help="remove a saved voice")
    delete.add_argument("name")
    rename = actions.add_parser("rename", help="give a saved voice another name")
    rename.add_argument("name")
    rename.add_argument("new_name")
    export = actions.add_parser("export", help="copy a saved voice to a folder (NAME.npz and NAME.json)")
    export.add_argument("name")
    export.add_argument("destination", help="the folder to write into (created when missing)")
    imported = actions.add_parser("import", help="save a voice file (.npz) in the app's voices")
    imported.add_argument("file")
    imported.add_argument("--name", default=None, help="the name to save it under (default: the voice's own)")
    voices.set_defaults(run=run_voices)

    languages = commands.add_parser("languages", help="the languages the model speaks: code and name, one a line")
    languages.set_defaults(run=run_languages)


def run_voices(args: argparse.Namespace) -> int:
    from ..studio import VoiceLibrary

    library = VoiceLibrary(args.folder)
    if args.action == "list":
        names = library.names()
        if not names:
            print(f"no saved voices in {library.root} (save one in the app's Clone tab, or: omnivoice voices import "
                  "FILE.npz)")
        for name in names:
            try:
                voice = library.load(name)
            except InvalidInput as exc:
                print(f"{name}\t(unreadable: {exc})")
                continue
            print(f"{name}\t{voice.seconds:.1f} s\t{voice.transcript}")
    elif args.action == "delete":
        library.delete(args.name)
        print(f"deleted the voice {args.name!r}")
    elif args.action == "rename":
        print(f"renamed {args.name!r} to {library.rename(args.name, args.new_name)!r}")
    elif args.action == "export":
        print("wrote " + " and ".join(str(path) for path in library.export(args.name, args.destination)))
    else:
        try:
            name = library.import_file(args.file, args.name)
        except InvalidInput as exc:
            if exc.param != "name":  # the name is taken (a bad file is said as it is)
                raise
            raise InvalidInput(f"{exc} Import it under another name: omnivoice voices import {args.file} --name NEW.",
                               param="name") from exc
        print(f"saved the voice as {name!r} in {library.root}")
    return 0


def run_languages(args: argparse.Namespace) -> int:
    from ..studio.vocabulary import language_choices

    for name, code in language_choices():
        print(f"{code}\t{name}")
    return 0
