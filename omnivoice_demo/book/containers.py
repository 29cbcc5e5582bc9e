"""Audio files for phones: M4B (AAC in MP4) with chapter markers, title, author and cover; MP3 / Opus chapters.

Written with PyAV (``av``: its wheels carry FFmpeg's encoders and muxers; the ``book`` extra).  The M4B is
the ``mp4`` muxer (the ``ipod`` muxer refuses a cover), AAC at 64 kbit/s mono at the model's rate, the
cover an attached picture (a JPEG or PNG stream with the ``attached_pic`` disposition), each chapter an
MP4 chapter (start and end in samples).  The chapters are encoded one after the other from their FLAC
files, so a book of any length is written in the memory of one block.  Without PyAV, or without the
encoder, the error says what to install.
"""

from __future__ import annotations

import fractions
import pathlib
from typing import Optional, Sequence

import numpy as np

from ..errors import ModelNotAvailable
from .contents import BOOK_INSTALL

AAC_BIT_RATE = 64_000
MP3_BIT_RATE = 64_000
OPUS_BIT_RATE = 48_000
BLOCK = 1 << 16   # samples read, encoded and written at a time
ENCODERS = {"m4b": "aac", "m4a": "aac", "mp3": "libmp3lame", "opus": "libopus"}
MUXERS = {"m4a": "mp4", "mp3": "mp3", "opus": "ogg"}


def require_av(encoder: str):
    try:
        import av
    except ImportError:
        raise ModelNotAvailable(f"Writing M4B, MP3 or Opus needs PyAV, which is not installed: {BOOK_INSTALL}; "
                                "or choose --format flac.") from None
    if encoder not in av.codecs_available:
        raise ModelNotAvailable(f"This PyAV has no {encoder} encoder; install the PyAV wheel from PyPI (it carries "
                                "FFmpeg with it), or choose --format flac.")
    return av


def write_m4b(path, chapters: Sequence[tuple[str, pathlib.Path, int, int]], title: str, author: Optional[str],
              cover: Optional[bytes] = None, cover_type: Optional[str] = None) -> None:
    """``chapters``: (title, FLAC file, samples, rate) in order; one MP4 chapter each, covering the audio."""
    av = require_av("aac")
    rate = chapters[0][3]
    with av.open(str(path), "w", format="mp4") as container:
        container.metadata.update({"title": title, "album": title, "genre": "Audiobook",
                                   **({"artist": author, "album_artist": author} if author else {})})
        stream = container.add_stream("aac", rate=rate, layout="mono")
        stream.bit_rate = AAC_BIT_RATE
        if cover:
            _add_cover(av, container, cover, cover_type)
        marks, start = [], 0
        for number, (name, _, samples, _) in enumerate(chapters, 1):
            marks.append({"id": number, "start": start, "end": start + samples,
                          "time_base": fractions.Fraction(1, rate), "metadata": {"title": name}})
            start += samples
        container.set_chapters(marks)
        _encode(av, container, stream, [file for _, file, _, _ in chapters], rate)


def write_chapter_audio(path, source: pathlib.Path, audio_format: str, title: str, album: str,
                        author: Optional[str], track: int) -> None:
    """One chapter (its FLAC file) as MP3, Opus (Ogg) or AAC (``m4a``: the read-along's), with its tags."""
    import soundfile

    encoder = ENCODERS[audio_format]
    av = require_av(encoder)
    rate = soundfile.info(str(source)).samplerate
    out_rate = 48_000 if audio_format == "opus" else rate
    with av.open(str(path), "w", format=MUXERS[audio_format]) as container:
        container.metadata.update({"title": title, "album": album, "track": str(track),
                                   **({"artist": author} if author else {})})
        stream = container.add_stream(encoder, rate=out_rate, layout="mono")
        stream.bit_rate = {"opus": OPUS_BIT_RATE, "mp3": MP3_BIT_RATE}.get(audio_format, AAC_BIT_RATE)
        _encode(av, container, stream, [source], rate)


def _encode(av, container, stream, files: Sequence[pathlib.Path], rate: int) -> None:
    import soundfile

    resampler = av.AudioResampler(format=stream.codec_context.format.name, layout="mono", rate=stream.rate)
    pts = 0
    for file in files:
        with soundfile.SoundFile(str(file)) as source:
            for block in source.blocks(BLOCK, dtype="int16"):
                frame = av.AudioFrame.from_ndarray(np.ascontiguousarray(block.reshape(1, -1)), format="s16",
                                                   layout="mono")
                frame.sample_rate, frame.pts = rate, pts
                pts += len(block)
                for converted in resampler.resample(frame):
                    container.mux(stream.encode(converted))
    for converted in resampler.resample(None):
        container.mux(stream.encode(converted))
    container.mux(stream.encode(None))


def _add_cover(av, container, cover: bytes, cover_type: Optional[str]) -> None:
    import io

    from PIL import Image

    with Image.open(io.BytesIO(cover)) as image:   # the header only: checked when the book was read
        width, height = image.size
    picture = container.add_mux_stream("png" if cover_type == "image/png" else "mjpeg", width=width, height=height)
    picture.disposition = av.stream.Disposition.attached_pic
    packet = av.Packet(cover)
    packet.stream, packet.pts, packet.dts = picture, 0, 0
    container.mux(packet)


def read_chapters(path) -> list[dict]:
    """(title, start, end seconds) of a file's chapters, and its tags: what a player shows (tests, the app)."""
    av = require_av("aac")
    with av.open(str(path)) as container:
        return [{"title": c["metadata"].get("title"), "start": float(c["start"] * c["time_base"]),
                 "end": float(c["end"] * c["time_base"])} for c in container.chapters()]
