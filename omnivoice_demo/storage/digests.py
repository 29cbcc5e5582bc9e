"""The project's two content digests, each written once: a file's SHA-256 and the generated codes' SHA-256.

``codes_sha256`` is what every front end reports for a generation (the HTTP header
``X-OmniVoice-Codes-SHA256``, ``/speak``'s ``codes_sha256``, a batch sidecar's ``codes_sha256``): equal codes in
equal chunks give equal digests, and the same codes cut into other chunks do not (each chunk's shape is hashed
before its values), so a header can be compared with a sidecar.
"""

from __future__ import annotations

import hashlib
import pathlib
from typing import Iterable, Union

import numpy as np

#: bytes read at a time when hashing a file
BLOCK = 1 << 20


def file_sha256(path: Union[str, pathlib.Path]) -> str:
    """SHA-256 of a file's bytes (hex), read in blocks so a large model file is never held whole."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(BLOCK):
            digest.update(block)
    return digest.hexdigest()


def codes_sha256(codes: Iterable[np.ndarray]) -> str:
    """SHA-256 of a generation's codes: each chunk's shape, then its values as int64, chunk by chunk in order."""
    digest = hashlib.sha256()
    for chunk in codes:
        chunk = np.ascontiguousarray(chunk, dtype=np.int64)
        digest.update(repr(chunk.shape).encode())
        digest.update(chunk.tobytes())
    return digest.hexdigest()
