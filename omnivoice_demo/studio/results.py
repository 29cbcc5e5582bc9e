"""What a finished generation was, in the same words for every front end (/speak's details, the HTTP headers)."""

from __future__ import annotations

import hashlib

import numpy as np


def codes_digest(codes: list[np.ndarray]) -> str:
    """SHA-256 of the generated codes (int64 [8, T] per chunk, joined): equal codes, equal digest."""
    joined = np.concatenate([np.asarray(c, dtype=np.int64) for c in codes], axis=-1)
    return hashlib.sha256(np.ascontiguousarray(joined).tobytes()).hexdigest()


def details(result, model_label: str) -> dict:
    """What a finished generation was: seed, settings, sizes, timings, codes digest (for headers and /speak)."""
    return {"seed": int(result.seed), "model": model_label, "duration_s": round(result.duration, 3),
            "frames": result.frames, "chunks": len(result.chunks), "rtf": round(result.rtf, 4),
            "timings": {k: round(v, 4) for k, v in result.timings.items()},
            "settings": {k: v for k, v in result.settings.items()}, "codes_sha256": codes_digest(result.codes)}
