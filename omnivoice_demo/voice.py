"""A cloned voice: the reference's codes, its transcript and its loudness.

Saved as one ``.npz`` holding the codes and a JSON string (no pickle), so a
voice file from anywhere can be loaded safely.
"""

from __future__ import annotations

import dataclasses
import json
import pathlib

import numpy as np

from .errors import InvalidInput

VOICE_FORMAT_VERSION = 1


@dataclasses.dataclass
class Voice:
    """What ``OmniVoice.create_voice_clone_prompt`` returns, without torch."""

    codes: np.ndarray      # int64 [8, T_ref]
    transcript: str        # with end punctuation added, as the reference does
    rms: float             # RMS of the reference before it was normalised
    name: str = ""

    @property
    def frames(self) -> int:
        return int(self.codes.shape[-1])

    @property
    def seconds(self) -> float:
        return self.frames / 25.0

    def save(self, path: str | pathlib.Path) -> pathlib.Path:
        path = pathlib.Path(path)
        if path.suffix != ".npz":
            path = path.with_suffix(".npz")
        path.parent.mkdir(parents=True, exist_ok=True)
        meta = {"format_version": VOICE_FORMAT_VERSION, "transcript": self.transcript,
                "rms": float(self.rms), "name": self.name}
        with open(path, "wb") as handle:
            np.savez(handle, codes=np.asarray(self.codes, dtype=np.int64),
                     meta=np.array(json.dumps(meta, ensure_ascii=False)))
        return path

    @classmethod
    def load(cls, path: str | pathlib.Path) -> "Voice":
        path = pathlib.Path(path)
        try:
            with np.load(path, allow_pickle=False) as data:
                codes = np.asarray(data["codes"], dtype=np.int64)
                meta = json.loads(str(data["meta"]))
        except (OSError, KeyError, ValueError) as exc:
            raise InvalidInput(f"{path} is not a saved voice ({exc}); save voices from the Clone tab "
                             "or with Voice.save().") from exc
        if meta.get("format_version") != VOICE_FORMAT_VERSION:
            raise InvalidInput(f"{path} has voice format {meta.get('format_version')!r}; "
                             f"this program reads format {VOICE_FORMAT_VERSION}.")
        if codes.ndim != 2 or codes.shape[0] != 8 or codes.size == 0 or codes.min() < 0 or codes.max() > 1023:
            raise InvalidInput(f"{path} holds codes of shape {codes.shape} outside 0..1023: not a voice file.")
        return cls(codes=codes, transcript=meta["transcript"], rms=float(meta["rms"]),
                   name=meta.get("name") or path.stem)
