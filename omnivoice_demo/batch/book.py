"""When the items of a batch are the parts of one book: the whole in one audio file with its subtitles.

``book.<format>`` is every item's audio end to end in the input's order
(each item already starts and ends with its padding), and ``book.srt`` /
``book.vtt`` are the items' cues shifted by where each item starts, counted
in samples so the times do not drift over hours.
"""

from __future__ import annotations

import numpy as np

from .items import BatchItem
from .store import OutputFolder
from .subtitles import cues_for_chunks, render
from .worker import SUBTYPE, Job

BOOK_NAME = "book"


def write_book(folder: OutputFolder, items: list[BatchItem], job: Job) -> str:
    import soundfile

    pieces, cues, parts, offset = [], [], [], 0
    rate = None
    for item in items:
        sidecar = folder.read_sidecar(item.id)
        audio, rate = soundfile.read(str(folder.audio_path(item.id, job.audio_format)), dtype="int16")
        cues += [cue.shifted(offset / rate) for cue in cues_for_chunks(sidecar.get("chunks", []), item.language)]
        parts.append({"id": item.id, "start": offset / rate, "end": (offset + len(audio)) / rate})
        pieces.append(audio)
        offset += len(audio)
    audio_path = folder.path / f"{BOOK_NAME}.{job.audio_format}"
    folder.write_audio(audio_path, np.concatenate(pieces), rate, job.audio_format, SUBTYPE)
    for kind in job.subtitles:
        folder.write_bytes(folder.path / f"{BOOK_NAME}.{kind}", render(cues, kind).encode("utf-8"))
    folder.write_json(folder.path / f"{BOOK_NAME}.json", {"audio": audio_path.name, "seconds": offset / rate,
                                                          "parts": parts})
    return audio_path.name
