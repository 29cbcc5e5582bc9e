"""Make PyPI's torchaudio importable beside the CPU build of torch.

PyPI's torchaudio 2.11.x wheel is built against CUDA torch: its compiled
extension (``torchaudio/lib/*.so``) fails to load next to ``torch==2.13.0+cpu``
with ``OSError: libc10_cuda.so``.  ``import omnivoice`` imports torchaudio, and
the reference only uses its pure-Python ``functional.resample``, which works
without the extension.  This script removes the extension files when, and only
when, they fail to load, so that ``import torchaudio`` succeeds.  It is run by
``scripts/setup_dev.sh`` after ``pip install`` and is idempotent; it prints nothing unless ``-v``.
"""

from __future__ import annotations

import ctypes
import importlib.util
import pathlib
import sys


def broken_extension_files() -> list[pathlib.Path]:
    spec = importlib.util.find_spec("torchaudio")
    if spec is None or not spec.submodule_search_locations:
        return []
    lib_dir = pathlib.Path(list(spec.submodule_search_locations)[0]) / "lib"
    import torch  # noqa: F401  (loads libc10 etc. the way torchaudio would)

    broken = []
    for so in sorted(lib_dir.glob("*.so")):
        try:
            ctypes.CDLL(str(so))
        except OSError:
            broken.append(so)
    # the extension is all or nothing: if one part fails, drop them all
    return sorted(lib_dir.glob("*.so")) if broken else []


def main(argv: list[str] | None = None) -> int:
    """Quiet when it works (removing the CUDA extension is the expected case on a fresh set-up, not an alarm);
    ``-v`` says what it did. A torchaudio that still cannot be imported is an error, with its traceback."""
    verbose = "-v" in (sys.argv[1:] if argv is None else argv)
    files = broken_extension_files()
    for so in files:
        so.unlink()
        if verbose:
            print(f"fix_torchaudio: removed {so.name} (CUDA build, cannot load beside CPU torch)")
    import torchaudio.functional  # noqa: F401  -- must import now

    if verbose and not files:
        print("fix_torchaudio: torchaudio imports; nothing to do")
    return 0


if __name__ == "__main__":
    sys.exit(main())
