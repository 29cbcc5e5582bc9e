"""Giving freed memory back to the system after a request.

glibc's malloc keeps the pages of freed heap blocks for reuse: after one long request the
engine's numpy buffers (logits, audio) and ONNX Runtime's allocations outside its arena stay
in the process's RSS as a plateau (issue 21 item 10: +67 MB after one long request on the tiny
folder even with the arena shrinking, 110 MB less after ``malloc_trim``;
``benchmarks/memory_plateau.py``).  ``release_free_memory`` asks glibc to return them; elsewhere
(macOS, musl) it does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import logging

log = logging.getLogger(__name__)


@functools.lru_cache(maxsize=1)
def _malloc_trim():
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        trim = libc.malloc_trim
    except (OSError, AttributeError):  # no glibc: nothing to trim
        return None
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    return trim


def release_free_memory() -> bool:
    """Return the heap's free pages to the system; False where the C library cannot."""
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True
