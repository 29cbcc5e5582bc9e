"""Audio bytes for the HTTP API: WAV, FLAC, MP3, Ogg/Opus and raw PCM, whole or streamed.

Every encoder is libsndfile's, through ``soundfile`` (no ffmpeg).  What each
format needs from the libsndfile that ``soundfile`` loads (``formats()`` says
what this machine has):

* ``wav``, ``pcm`` (16-bit little-endian, 24 kHz mono, no header): any libsndfile.
* ``flac``: libsndfile built with FLAC (every wheel of ``soundfile``).
* ``opus``: libsndfile >= 1.0.29 built with Opus (Ogg container, 24 kHz is one of Opus's rates).
* ``mp3``: libsndfile >= 1.1.0 built with LAME and mpg123 (the ``soundfile`` >= 0.12 wheels are).
* ``aac``: not available (libsndfile has no AAC encoder); a request for it is an error naming the others.

Streaming (``StreamEncoder``): one libsndfile encoder writes into a sink that
hands out the new bytes after each chunk.  Encoders that go back at the end
to fill in sizes cannot do so once the start was sent, so streams carry
"length unknown" headers, which decoders accept: WAV's sizes are set to
0xFFFFFFFF (as streaming servers send them), MP3 is written at a constant
bitrate (its first frame's VBR table is then not needed to find the length).
A request that does not ask for a stream gets a whole WAV, with its true sizes
(``WHOLE_UNLESS_ASKED``). FLAC is not streamed (``WHOLE_ONLY``): its "unknown" total sample count (0) is
legal, but libsndfile (``soundfile.read``) then takes the file for an endless
one and cannot read it, so a streamed FLAC request gets the whole file, with
its length, when the last chunk is done.
"""

from __future__ import annotations

import io
import struct
from typing import Optional

import numpy as np

from ..constants import SAMPLE_RATE
from ..studio.stream_audio import pcm16
from ..errors import InvalidInput, excerpt

#: response_format -> (libsndfile format, subtype, extra SoundFile arguments), media type
FORMATS: dict[str, tuple[Optional[str], Optional[str], dict, str]] = {
    "wav": ("WAV", "PCM_16", {}, "audio/wav"),
    "flac": ("FLAC", "PCM_16", {}, "audio/flac"),
    "mp3": ("MP3", "MPEG_LAYER_III", {"bitrate_mode": "CONSTANT", "compression_level": 0.5}, "audio/mpeg"),
    "opus": ("OGG", "OPUS", {}, "audio/ogg"),
    "pcm": (None, None, {}, "audio/pcm"),
}
NOT_AVAILABLE = {"aac": "libsndfile has no AAC encoder"}
#: formats a stream sends whole at the end (see the module docstring)
WHOLE_ONLY = frozenset({"flac"})
#: formats sent whole unless the client asks for a stream (``stream: true`` or a ``stream_format``): a streamed
#: WAV's sizes are "unknown" (0xFFFFFFFF), which a saved file keeps (``soxi`` reads 24.8 hours, Python's ``wave``
#: 2^31 frames), so OpenAI's default of streaming is not applied to it
WHOLE_UNLESS_ASKED = frozenset({"wav"})


def streamed_by_default(name: str) -> bool:
    """Whether a request for ``name`` that says nothing of streaming is streamed (OpenAI's default)."""
    return name not in WHOLE_UNLESS_ASKED


def formats() -> list[str]:
    """The response formats this machine's libsndfile can write."""
    import soundfile as sf

    available = sf.available_formats()
    names = []
    for name, (major, subtype, _, _) in FORMATS.items():
        if major is None or (major in available and subtype in sf.available_subtypes(major)):
            names.append(name)
    return names


def media_type(name: str) -> str:
    return FORMATS[name][3]


def check_format(name) -> str:
    """The format's name, or ``InvalidInput`` (param ``response_format``) listing the ones that work here."""
    name = str(name or "").strip().lower()
    usable = formats()
    if name in usable:
        return name
    why = NOT_AVAILABLE.get(name) or (f"this machine's libsndfile cannot write {name}" if name in FORMATS
                                      else f"{excerpt(name)} is not a response format")
    raise InvalidInput(f"response_format {excerpt(name)} is not available ({why}); use one of: {', '.join(usable)}.",
                       param="response_format")


def encode(audio: np.ndarray, name: str, sample_rate: int = SAMPLE_RATE) -> bytes:
    """The whole of ``audio`` (float32 mono) as a file of format ``name``."""
    import soundfile as sf

    major, subtype, extra, _ = FORMATS[name]
    if major is None:
        return pcm16(audio)
    buffer = io.BytesIO()
    with sf.SoundFile(buffer, "w", sample_rate, 1, format=major, subtype=subtype, **extra) as handle:
        handle.write(np.asarray(audio, dtype=np.float32))
    return buffer.getvalue()


class _ForwardSink:
    """A file object for libsndfile whose bytes go out as they are written.

    Bytes handed out by ``take()`` are gone: a later write over them (an
    encoder filling in sizes at the end) is dropped, which is why streams carry
    "length unknown" headers (see the module docstring)."""

    def __init__(self):
        self.data = bytearray()   # bytes not yet handed out
        self.sent = 0             # bytes handed out before ``data``
        self.position = 0

    def write(self, chunk) -> int:
        chunk = bytes(chunk)
        start = self.position - self.sent
        self.position += len(chunk)
        if start < 0:  # over bytes already sent: keep only the part after them
            chunk, start = chunk[-start:] if -start < len(chunk) else b"", 0
        if start > len(self.data):
            self.data.extend(b"\0" * (start - len(self.data)))
        self.data[start:start + len(chunk)] = chunk
        return len(chunk)

    def seek(self, offset: int, whence: int = 0) -> int:
        end = self.sent + len(self.data)
        self.position = offset if whence == 0 else (self.position + offset if whence == 1 else end + offset)
        return self.position

    def tell(self) -> int:
        return self.position

    def read(self, size: int = -1) -> bytes:  # libsndfile only reads back when appending; never here
        return b""

    def take(self) -> bytes:
        out = bytes(self.data)
        self.sent += len(out)
        self.data.clear()
        return out


class StreamEncoder:
    """``encoder.add(audio) -> bytes`` as each chunk is ready, ``encoder.finish() -> bytes`` at the end."""

    def __init__(self, name: str, sample_rate: int = SAMPLE_RATE):
        import soundfile as sf

        self.name, self.sample_rate = name, sample_rate
        major, subtype, extra, _ = FORMATS[name]
        self._held: Optional[list[np.ndarray]] = [] if name in WHOLE_ONLY else None
        streamed = major is not None and self._held is None
        self._sink = _ForwardSink() if streamed else None
        self._file = sf.SoundFile(self._sink, "w", sample_rate, 1, format=major, subtype=subtype, **extra) \
            if streamed else None
        self._started = False

    def add(self, audio: np.ndarray) -> bytes:
        if self._held is not None:
            self._held.append(np.asarray(audio, dtype=np.float32))
            return b""
        if self._file is None:
            return pcm16(audio)
        self._file.write(np.asarray(audio, dtype=np.float32))
        return self._take()

    def finish(self) -> bytes:
        if self._held is not None:
            return encode(np.concatenate(self._held or [np.zeros(0, np.float32)]), self.name, self.sample_rate)
        if self._file is None:
            return b""
        self._file.close()
        return self._take()

    def close(self) -> None:
        if self._file is not None and not self._file.closed:
            self._file.close()

    def _take(self) -> bytes:
        out = self._sink.take()
        if self.name == "wav" and not self._started and len(out) >= 44:
            # RIFF and data sizes unknown while streaming: 0xFFFFFFFF, as streaming WAV servers send
            out = out[:4] + struct.pack("<I", 0xFFFFFFFF) + out[8:40] + struct.pack("<I", 0xFFFFFFFF) + out[44:]
        self._started = self._started or bool(out)
        return out
