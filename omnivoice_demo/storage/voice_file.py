"""A cloned voice: the reference's codes, its transcript and its loudness.

Saved as one ``.npz`` holding the codes and a JSON string (no pickle), so a
voice file from anywhere can be loaded safely.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import math
import pathlib
from typing import Optional

import numpy as np

from .atomic import atomic_output
from ..constants import CODEBOOK_SIZE, FRAME_RATE, NUM_CODEBOOKS
from ..errors import InvalidInput, excerpt
from .npz_check import Member, read_npz
from ..errors import check_unicode

VOICE_FORMAT_VERSION = 1
#: The public limits' longest reference (``Limits().max_reference_frames``) and upload size.
DEFAULT_MAX_FRAMES = 60 * FRAME_RATE
DEFAULT_MAX_BYTES = 25 * 1024 * 1024
#: The JSON string of a voice's meta: a transcript is at most a few thousand characters.
MAX_META_CHARS = 65536
#: A voice's meta is one flat object; JSON nested deeper than this is no voice (and could exhaust the parser's stack)
MAX_META_DEPTH = 4
#: style variants one voice file may hold (each a clip of its own; ``Limits.max_voice_variants`` is what a server
#: lets a voice keep, at most this), and the characters of a variant's tag (a style word: ``cheerful``)
MAX_VARIANTS = 64
MAX_TAG_CHARS = 32
#: the ``.npz`` member holding a clip's meta (a JSON string)
_META = Member("U", MAX_META_CHARS, ndim=0, limit_note="characters of its meta")


@dataclasses.dataclass
class Voice:
    """What ``OmniVoice.create_voice_clone_prompt`` returns, without torch."""

    codes: np.ndarray      # int64 [8, T_ref]
    transcript: str        # with end punctuation added, as the reference does
    rms: float             # RMS of the reference before it was normalised
    name: str = ""
    transcript_source: str = "typed"   # "typed" by a person, or "recognised" by the speech recogniser
    language: Optional[str] = None     # the language the recogniser heard (a Whisper code), if recognised
    #: style variants: tag (a style word, ``studio.variants``) -> a clip of the same speaker in that style
    variants: dict[str, "Voice"] = dataclasses.field(default_factory=dict, repr=False)

    @property
    def frames(self) -> int:
        return int(self.codes.shape[-1])

    @property
    def seconds(self) -> float:
        return self.frames / FRAME_RATE

    def _meta(self) -> dict:
        return {"format_version": VOICE_FORMAT_VERSION, "transcript": self.transcript,
                "rms": float(self.rms), "name": self.name, "transcript_source": self.transcript_source,
                "language": self.language}

    def save(self, path: str | pathlib.Path) -> pathlib.Path:
        """The voice as one ``.npz``: ``codes`` and ``meta``; each style variant ``i`` as ``variant_i_codes`` and
        ``variant_i_meta`` (its tag listed, in order, in the meta's ``variants``)."""
        path = pathlib.Path(path)
        if path.suffix != ".npz":
            path = path.with_suffix(".npz")
        if len(self.variants) > MAX_VARIANTS:
            raise InvalidInput(f"The voice {excerpt(self.name)} has {len(self.variants)} style variants; a voice file "
                               f"holds at most {MAX_VARIANTS}.", param="max_voice_variants")
        meta = self._meta()
        arrays = {}
        if self.variants:
            meta["variants"] = list(self.variants)
            for index, variant in enumerate(self.variants.values()):
                arrays[f"variant_{index}_codes"] = np.asarray(variant.codes, dtype=np.int64)
                arrays[f"variant_{index}_meta"] = np.array(json.dumps(variant._meta(), ensure_ascii=False))
        # whole or not at all: a kill or a full disk mid-write must not leave a broken voice under its name
        with atomic_output(path, "voice") as handle:
            np.savez(handle, codes=np.asarray(self.codes, dtype=np.int64),
                     meta=np.array(json.dumps(meta, ensure_ascii=False)), **arrays)
        return path

    @classmethod
    def load(cls, path: str | pathlib.Path, max_frames: int = DEFAULT_MAX_FRAMES,
             max_bytes: int = DEFAULT_MAX_BYTES) -> "Voice":
        """A saved voice, every field checked (sizes before anything is decompressed).

        Codes: integers (not floats or booleans) of shape ``[8, T]``, ``1 <= T
        <= max_frames``, values ``0..1023``.  Meta: a JSON object of format
        ``VOICE_FORMAT_VERSION`` with a non-empty ``transcript`` string and a
        finite positive ``rms``; ``name`` a string when given; ``variants``, when
        given, at most ``MAX_VARIANTS`` distinct tags, each clip checked as the
        voice's own.  Anything else is an ``InvalidInput`` naming the file (its
        base name) and the field.
        """
        path = pathlib.Path(path)
        shown = path.name
        arrays = read_npz(path, _members("", max_frames), "saved voice", max_bytes)
        meta = read_meta(str(arrays["meta"]), shown)
        voice = cls.from_fields(arrays["codes"], meta, shown, max_frames, default_name=path.stem)
        tags = variant_tags(meta, shown)
        if tags:  # every variant's members checked (sizes, types) before any is decompressed, as the voice's own
            members = {k: v for i in range(len(tags)) for k, v in _members(f"variant_{i}_", max_frames).items()}
            found = read_npz(path, members, "saved voice", max_bytes)
            voice.variants = {tag: cls.from_fields(found[f"variant_{i}_codes"],
                                                   read_meta(str(found[f"variant_{i}_meta"]), _shown(shown, tag)),
                                                   _shown(shown, tag), max_frames, default_name=tag)
                              for i, tag in enumerate(tags)}
        return voice

    @classmethod
    def from_fields(cls, codes: np.ndarray, meta, shown: str, max_frames: int = DEFAULT_MAX_FRAMES,
                    default_name: str = "") -> "Voice":
        """A voice from its codes and meta (from a file or a browser's storage), every field checked."""
        if not isinstance(meta, dict):
            raise InvalidInput(f"{shown} is not a saved voice (its meta is a {type(meta).__name__}, not an object).")
        if meta.get("format_version") != VOICE_FORMAT_VERSION:
            raise InvalidInput(f"{shown} has voice format {excerpt(meta.get('format_version'))}; "
                               f"this program reads format {VOICE_FORMAT_VERSION}.")
        codes = np.asarray(codes)
        if codes.dtype.kind not in "iu" or codes.ndim != 2:
            raise InvalidInput(f"{shown} holds codes of type {codes.dtype} and {codes.ndim} dimension(s); a voice "
                               f"has integer codes [{NUM_CODEBOOKS}, frames].")
        if codes.shape[0] != NUM_CODEBOOKS or codes.shape[1] == 0:
            raise InvalidInput(f"{shown} holds codes of shape {list(codes.shape)}; a voice has "
                               f"[{NUM_CODEBOOKS}, frames].")
        if codes.shape[1] > max_frames:
            raise InvalidInput(f"{shown} holds {codes.shape[1]} frames of reference; the limit is {max_frames} "
                               f"({max_frames / FRAME_RATE:g} s).", param="max_reference_seconds")
        if int(codes.min()) < 0 or int(codes.max()) >= CODEBOOK_SIZE:
            raise InvalidInput(f"{shown} holds codes outside 0..{CODEBOOK_SIZE - 1}: not a voice file.")
        transcript = meta.get("transcript")
        if not isinstance(transcript, str) or not transcript.strip():
            raise InvalidInput(f"{shown} has no transcript (a voice needs the text its reference says).")
        check_unicode(transcript, f"{shown}'s transcript")
        rms = meta.get("rms")
        if isinstance(rms, bool) or not isinstance(rms, (int, float)) or not math.isfinite(rms) or rms <= 0:
            raise InvalidInput(f"{shown} has rms {excerpt(rms)}; it must be a finite number above 0.")
        name: Optional[str] = meta.get("name")
        if name is not None and not isinstance(name, str):
            raise InvalidInput(f"{shown} has a name of type {type(name).__name__}; it must be text.")
        check_unicode(name or "", f"{shown}'s name")
        source, language = meta.get("transcript_source") or "typed", meta.get("language")
        if source not in ("typed", "recognised"):
            raise InvalidInput(f"{shown} has transcript_source {excerpt(source)}; it must be 'typed' or 'recognised'.")
        if language is not None and (not isinstance(language, str) or len(language) > 16):
            raise InvalidInput(f"{shown} has a language {excerpt(language)}; it must be a short language code.")
        check_unicode(language or "", f"{shown}'s language")
        return cls(codes=codes.astype(np.int64), transcript=transcript, rms=float(rms), name=name or default_name,
                   transcript_source=source, language=language)

    def to_dict(self) -> dict:
        """The voice as JSON-ready values (codes as base64 of little-endian int16), for a browser's storage; its
        style variants under ``variants`` (tag -> the same)."""
        codes = np.ascontiguousarray(np.asarray(self.codes, dtype="<i2"))
        data = dict(self._meta(), frames=int(codes.shape[1]), codes=base64.b64encode(codes.tobytes()).decode())
        if self.variants:
            data["variants"] = {tag: variant.to_dict() for tag, variant in self.variants.items()}
        return data

    @classmethod
    def from_dict(cls, data, max_frames: int = DEFAULT_MAX_FRAMES, shown: str = "the stored voice",
                  with_variants: bool = True) -> "Voice":
        """``to_dict``'s output back, checked as a file is (sizes before decoding); a variant holds none."""
        if not isinstance(data, dict):
            raise InvalidInput(f"{shown} is not a voice (a {type(data).__name__}, not an object).")
        frames, text = data.get("frames"), data.get("codes")
        if isinstance(frames, bool) or not isinstance(frames, int) or not 0 < frames <= max_frames:
            raise InvalidInput(f"{shown} has {excerpt(frames)} frames; a voice has 1 to {max_frames}.")
        if not isinstance(text, str) or len(text) != 4 * math.ceil(NUM_CODEBOOKS * frames * 2 / 3):
            raise InvalidInput(f"{shown} has codes of the wrong length for {frames} frames.")
        try:
            raw = base64.b64decode(text, validate=True)
        except ValueError:
            raise InvalidInput(f"{shown} has codes that are not base64.") from None
        codes = np.frombuffer(raw, dtype="<i2").reshape(NUM_CODEBOOKS, frames)
        voice = cls.from_fields(codes, data, shown, max_frames, default_name=str(data.get("name") or ""))
        stored = data.get("variants") if with_variants else None
        if stored is not None:
            if not isinstance(stored, dict):
                raise InvalidInput(f"{shown} has variants of type {type(stored).__name__}; they are an object.")
            voice.variants = {tag: cls.from_dict(stored[tag], max_frames, _shown(shown, tag), with_variants=False)
                              for tag in variant_tags({"variants": list(stored)}, shown)}
        return voice


def stored_tags(path: str | pathlib.Path, max_bytes: int = DEFAULT_MAX_BYTES) -> list[str]:
    """The style tags a voice file lists, in order (only its meta is read: for lists of many voices)."""
    shown = pathlib.Path(path).name
    meta = read_meta(str(read_npz(path, {"meta": _META}, "saved voice", max_bytes)["meta"]), shown)
    if not isinstance(meta, dict):
        raise InvalidInput(f"{shown} is not a saved voice (its meta is a {type(meta).__name__}, not an object).")
    return variant_tags(meta, shown)


def _members(prefix: str, max_frames: int) -> dict[str, Member]:
    """The ``.npz`` members of one clip (the voice's own: ``prefix`` empty; a variant's: ``variant_i_``)."""
    return {f"{prefix}codes": Member("iu", NUM_CODEBOOKS * max_frames, ndim=2,
                                     limit_note=f"max_reference_seconds: {max_frames} frames"),
            f"{prefix}meta": _META}


def _shown(shown: str, tag: str) -> str:
    return f"{shown}'s style {excerpt(tag)}"


def variant_tags(meta: dict, shown: str) -> list[str]:
    """The tags a voice's meta lists under ``variants`` (none when absent): at most ``MAX_VARIANTS`` distinct
    texts of 1 to ``MAX_TAG_CHARS`` characters.  Whether a tag is a usable style word is the studio's rule
    (``studio.variants.clean_tag``), applied where voices are saved."""
    tags = meta.get("variants")
    if tags is None:
        return []
    if not isinstance(tags, list) or len(tags) > MAX_VARIANTS:
        raise InvalidInput(f"{shown} lists its style variants as {excerpt(tags)}; a voice has a list of at most "
                           f"{MAX_VARIANTS} tags.")
    for tag in tags:
        if not isinstance(tag, str) or not 0 < len(tag) <= MAX_TAG_CHARS:
            raise InvalidInput(f"{shown} has a style variant tagged {excerpt(tag)}; a tag is a word of 1 to "
                               f"{MAX_TAG_CHARS} characters.")
        check_unicode(tag, f"{shown}'s style tag")
    if len(set(tags)) != len(tags):
        raise InvalidInput(f"{shown} lists a style variant twice ({excerpt(tags)}).")
    return tags


def read_meta(text: str, shown: str):
    """A voice's meta (a JSON string of at most ``MAX_META_CHARS``), its nesting bounded before it is parsed."""
    depth = deepest = 0
    in_string = escaped = False
    brackets = text.count("[") + text.count("{")
    for char in text if brackets > MAX_META_DEPTH else "":  # brackets outside strings: the parser's recursion
        if in_string:
            escaped, in_string = (False, True) if escaped else (char == "\\", char != '"')
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    if deepest > MAX_META_DEPTH:
        raise InvalidInput(f"{shown} is not a saved voice (its meta nests {deepest} deep; a voice's is a flat object).")
    try:
        return json.loads(text)
    except ValueError as exc:
        raise InvalidInput(f"{shown} is not a saved voice (its meta is not JSON: {exc}).") from None
