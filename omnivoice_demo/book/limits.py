"""A book's bounds (``BookLimits``): the sizes, counts and ratios every reader of ``book/`` checks before it spends
the memory; ``shared()`` gives the smaller ones of a public server."""

from __future__ import annotations

import dataclasses

@dataclasses.dataclass(frozen=True)
class BookLimits:
    """The bounds of one book; ``shared()``: those of a public server (smaller)."""

    max_file_bytes: int = 200 * 1024 * 1024
    max_entries: int = 10_000
    max_uncompressed_bytes: int = 1024 * 1024 * 1024
    max_entry_bytes: int = 64 * 1024 * 1024
    max_ratio: float = 200.0                 # uncompressed / compressed of one entry (text compresses ~5-10x)
    max_chapters: int = 1000
    max_image_bytes: int = 20 * 1024 * 1024
    max_image_pixels: int = 40_000_000       # width x height of the cover
    max_paragraph_chars: int = 50_000

    @classmethod
    def shared(cls) -> "BookLimits":
        return cls(max_file_bytes=20 * 1024 * 1024, max_entries=2000, max_uncompressed_bytes=128 * 1024 * 1024,
                   max_entry_bytes=16 * 1024 * 1024, max_chapters=300, max_image_bytes=5 * 1024 * 1024,
                   max_image_pixels=16_000_000)
