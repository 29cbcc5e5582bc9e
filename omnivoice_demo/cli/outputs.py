"""The command line's output files: checked before any work (a format soundfile writes, a folder that exists
and is writable, no device or pipe at the path), then written whole or not at all."""

from __future__ import annotations

import os
import pathlib
from typing import Optional

from ..errors import InvalidInput


def check_output(path: str) -> pathlib.Path:
    """The output file, checked before any synthesis: a format soundfile writes with its default encoding,
    a writable folder (tried, not only asked), and no device, pipe or read-only file at the path (links
    followed).  Returns the path to write (the link's target when it is a link)."""
    import soundfile

    output = pathlib.Path(path)
    formats = soundfile.available_formats()
    kind = output.suffix.lstrip(".").upper()
    if kind not in formats or soundfile.default_subtype(kind) is None:  # RAW has no default encoding
        writable = sorted(f for f in formats if soundfile.default_subtype(f) is not None)
        raise InvalidInput(f"Cannot write {output.name!r}: the ending {output.suffix or '(none)'!r} is not an audio "
                           f"format soundfile writes; use one of {', '.join('.' + f.lower() for f in writable)}.",
                           param="output")
    if output.is_dir():
        raise InvalidInput(f"{output} is a folder; give a file name such as {output / 'out.wav'}.", param="output")
    if output.is_symlink():
        output = output.resolve()
    folder = output.parent if str(output.parent) else pathlib.Path(".")
    if output.exists() and not output.is_file():
        raise InvalidInput(f"{output} is not a regular file (a device or a pipe); choose a file name.",
                           param="output")
    if not folder.is_dir():
        raise InvalidInput(f"The folder {folder} of --output does not exist; create it or choose another.",
                           param="output")
    if (output.exists() and not os.access(output, os.W_OK)) or not _can_create_in(folder):
        raise InvalidInput(f"{output if output.exists() else 'The folder ' + str(folder)} of --output is not "
                           "writable; choose another.", param="output")
    return output


def _can_create_in(folder: pathlib.Path) -> bool:
    import tempfile

    try:
        with tempfile.TemporaryFile(dir=folder):
            return True
    except OSError:
        return False


def write_audio(output: pathlib.Path, audio, sample_rate: int) -> None:
    """``audio`` into ``output`` (checked by ``check_output``) whole or not at all."""
    import soundfile

    from ..storage.atomic import atomic_output

    with atomic_output(output, "audio") as handle:
        soundfile.write(handle, audio, sample_rate, format=output.suffix.lstrip(".").upper())


def check_side_output(path: Optional[str], suffixes: tuple[str, ...], flag: str, what: str) -> Optional[pathlib.Path]:
    """A file written beside the audio (``--words``, ``--subtitles``), checked before any synthesis: a name
    ending in one of ``suffixes`` in a folder that exists and is writable."""
    if path is None:
        return None
    target = pathlib.Path(path)
    folder = target.parent if str(target.parent) else pathlib.Path(".")
    if target.suffix.lower() not in suffixes or target.is_dir():
        raise InvalidInput(f"{flag} writes {what}, got {path!r}.", param=flag.lstrip("-"))
    if not folder.is_dir() or not _can_create_in(folder):
        raise InvalidInput(f"The folder {folder} of {flag} does not exist or is not writable; choose another.",
                           param=flag.lstrip("-"))
    return target
