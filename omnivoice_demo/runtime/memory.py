"""Giving freed memory back to the system after a request.

glibc's malloc keeps the pages of freed heap blocks for reuse: after one long request the
engine's numpy buffers (logits, audio) and ONNX Runtime's allocations outside its arena stay
in the process's RSS as a plateau (issue 21 item 10: on the tiny folder one long request left
+72 MB, +22 MB with the arena shrinking and these two; ``benchmarks/memory_plateau.py``).  ``release_free_memory``
asks glibc to return them (``malloc_trim``).  That reaches the main thread's heap; a queue worker's
blocks live in a thread arena it trims only in part (+65 MB left there), so ``bound_heap`` also
fixes glibc's mmap threshold at 1 MiB (its dynamic threshold climbs to 32 MiB after the first large
free): every buffer of a MiB or more is then its own mapping, returned when it is freed.
Elsewhere (macOS, musl) both do nothing.

``bound_heap`` is called only where the process is ours: the entry points of the app
(``omnivoice_demo.app.main``), the command line (``omnivoice``: serve, wyoming, synth, batch, ...)
and the converter (``python -m convert``).  ``mallopt`` sets the allocator of the whole process,
which a host program that imports the package owns, so no library code (the engine, the queue, the
backbone builds) and no import calls it (tests/test_memory.py checks both).  ``release_free_memory``
changes no setting (it returns pages that are free already), so the queue calls it when it is idle.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools

M_MMAP_THRESHOLD = -3  # glibc's mallopt parameter
MMAP_THRESHOLD_BYTES = 1 << 20


@functools.lru_cache(maxsize=None)
def _glibc(name: str):
    try:
        function = getattr(ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6"), name)
    except (OSError, AttributeError):  # no glibc
        return None
    function.restype = ctypes.c_int
    return function


@functools.lru_cache(maxsize=1)
def bound_heap() -> bool:
    """Large buffers as their own mappings (once per process); False where the C library has no ``mallopt``.
    For our own processes' entry points only (see the module's docstring)."""
    mallopt = _glibc("mallopt")
    if mallopt is None:
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES))


def release_free_memory() -> bool:
    """Return the heap's free pages to the system; False where the C library cannot."""
    trim = _glibc("malloc_trim")
    if trim is None:
        return False
    trim.argtypes = [ctypes.c_size_t]
    trim(0)
    return True
