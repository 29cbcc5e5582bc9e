"""The codes file: a generation's or a round trip's codes as one ``.npz`` (no pickle).

    save_codes(path, codes, meta)   codes [8, T] or a list of chunks [8, T_i]
    load_codes(path) -> [8, T] int64

The file holds ``codes`` (int16 ``[8, T]``, the chunks joined), ``chunk_frames``
(frames per chunk) and ``meta`` (a JSON string: the seed, the text, the
settings, ``format``/``version``).  It is read with ``allow_pickle=False``, so a
codes file from anywhere is safe to open; anything that is not one is an
``InvalidInput`` saying what to upload instead.  Beside ``Voice`` (voice.py),
the other ``.npz`` this program writes.
"""

from __future__ import annotations

import json
import pathlib
from typing import Optional, Sequence, Union

import numpy as np

from ..constants import CODEBOOK_SIZE, NUM_CODEBOOKS
from ..errors import InvalidInput
from .atomic import atomic_output
from .npz_check import Member, read_npz

CODES_FORMAT = "omnivoice-codes"
CODES_FORMAT_VERSION = 1
#: The public limits' ``max_decode_frames`` and ``max_upload_bytes``.
DEFAULT_MAX_FRAMES = 180 * 25
DEFAULT_MAX_BYTES = 25 * 1024 * 1024


def save_codes(path: Union[str, pathlib.Path], codes: Union[np.ndarray, Sequence[np.ndarray]],
               meta: Optional[dict] = None) -> pathlib.Path:
    """Write codes (one ``[8, T]`` array or the chunks' arrays) and ``meta`` (JSON-able; str() otherwise)."""
    parts = [np.asarray(codes)] if isinstance(codes, np.ndarray) else [np.asarray(c) for c in codes]
    joined = np.concatenate(parts, axis=-1).astype(np.int16)
    document = dict(meta or {}, format=CODES_FORMAT, version=CODES_FORMAT_VERSION)
    with atomic_output(path, "codes file") as handle:
        np.savez_compressed(handle, codes=joined, chunk_frames=np.array([p.shape[-1] for p in parts]),
                            meta=np.array(json.dumps(document, default=str, ensure_ascii=False)))
    return pathlib.Path(path)


def load_codes(path: Union[str, pathlib.Path], max_frames: int = DEFAULT_MAX_FRAMES,
               max_bytes: int = DEFAULT_MAX_BYTES) -> np.ndarray:
    """Codes ``[8, T]`` (int64) from a codes file (or any ``.npz`` with a ``codes`` array of that shape).

    The member's size and type are checked from the zip directory and the
    ``.npy`` header before it is decompressed (``npz_check``): at most
    ``max_frames`` frames, a file of at most ``max_bytes``.
    """
    # any numeric type passes the header check (bounded in size either way); the shape, then the values, are
    # checked below with messages that say what a codes file holds
    member = Member("iufb", NUM_CODEBOOKS * max_frames, limit_note=f"max_decode_frames: {max_frames} frames")
    arrays = read_npz(path, {"codes": member}, "codes file", max_bytes)
    codes = arrays["codes"]
    if codes.ndim == 3 and codes.shape[0] == 1:
        codes = codes[0]
    if codes.ndim != 2 or codes.shape[0] != NUM_CODEBOOKS or codes.shape[1] == 0:
        raise InvalidInput(f"The codes have shape {codes.shape}; expected [{NUM_CODEBOOKS}, frames].", param="codes")
    if not np.issubdtype(codes.dtype, np.integer) or codes.min() < 0 or codes.max() > CODEBOOK_SIZE - 1:
        raise InvalidInput(f"The codes must be whole numbers from 0 to {CODEBOOK_SIZE - 1}.", param="codes")
    return codes.astype(np.int64)
