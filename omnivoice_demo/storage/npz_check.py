"""Reading ``.npz`` files from strangers with bounded memory.

``numpy.load`` decompresses a member before anything can look at its size,
and a few kilobytes of compressed zeros can hold gigabytes.  ``read_npz``
looks first: the file's size, then for each member the zip directory's
``file_size`` (the uncompressed size) and the ``.npy`` header (shape, dtype;
read with ``numpy.lib.format``, without reading the data), and only then
loads the members asked for, with ``allow_pickle=False``.
"""

from __future__ import annotations

import dataclasses
import math
import os
import pathlib
import stat
import zipfile
from typing import Optional

import numpy as np

from ..errors import InvalidInput, ResourceLimitExceeded, excerpt

__all__ = ["Member", "read_npz"]

#: Room for a member's ``.npy`` header in its uncompressed size.
HEADER_BYTES = 65536


@dataclasses.dataclass(frozen=True)
class Member:
    """What one member may be: its dtype kinds (``"iu"`` integers, ``"U"`` text, ...) and its size."""

    kinds: str
    max_elements: int           # values; for text (``"U"``), characters in all
    ndim: Optional[int] = None
    required: bool = True
    limit_note: str = ""        # the limit behind max_elements, named in the message


def read_npz(path, members: dict[str, Member], what: str, max_bytes: int) -> dict[str, np.ndarray]:
    """The named members of an ``.npz`` file, each checked before it is decompressed.

    Raises ``InvalidInput`` naming the file's base name (not its folder) and the
    problem: too large a file, not an npz, a missing member, a member of the
    wrong type or shape, or one larger than allowed.  Members not named are
    never read.
    """
    name = os.path.basename(os.fspath(path))
    path = pathlib.Path(path)
    if not path.is_file():
        raise InvalidInput(f"The {what} {excerpt(name)} does not exist.")
    size = path.stat().st_size
    if not stat.S_ISREG(path.stat().st_mode) or (size == 0 and str(path.resolve()).startswith("/proc/")):
        raise InvalidInput(f"The {what} {excerpt(name)} is not a regular file.")
    if size > max_bytes:
        raise ResourceLimitExceeded(f"The {what} {excerpt(name)} is {size / 2**20:.1f} MB; the limit is {max_bytes / 2**20:.0f} MB.",
                           param="max_upload_bytes")
    try:
        with zipfile.ZipFile(path) as archive:
            entries = {info.filename: info for info in archive.infolist()}
            headers = {}
            for key, spec in members.items():
                entry = entries.get(key + ".npy")
                if entry is None:
                    if spec.required:
                        raise InvalidInput(f"{excerpt(name)} is not a {what}: it has no {excerpt(key)} array (it holds "
                                           f"{', '.join(sorted(k[:-4] for k in entries if k.endswith('.npy'))) or 'nothing'}).")
                    continue
                headers[key] = _check_member(archive, entry, key, spec, what, name)
    except zipfile.BadZipFile as exc:
        raise InvalidInput(f"{excerpt(name)} is not a {what} (not an .npz archive: {exc}).") from None
    except OSError as exc:  # a file that cannot be read (a device, /proc, an I/O error)
        raise InvalidInput(f"The {what} {excerpt(name)} cannot be read ({exc.strerror or type(exc).__name__}).") from None
    except (RuntimeError, NotImplementedError) as exc:  # an encrypted member, a compression zipfile lacks
        raise InvalidInput(f"The {what} {excerpt(name)} cannot be read: {' '.join(str(exc).split())[:160]} (save it again "
                           "with numpy, unencrypted).") from None
    try:
        with np.load(path, allow_pickle=False) as data:
            return {key: np.asarray(data[key]) for key in headers}
    except (OSError, ValueError, EOFError, RuntimeError, NotImplementedError, zipfile.BadZipFile) as exc:
        raise InvalidInput(f"The {what} {excerpt(name)} cannot be read ({' '.join(str(exc).split())[:160]}).") from None


def _check_member(archive: zipfile.ZipFile, entry: zipfile.ZipInfo, key: str, spec: Member, what: str,
                  name: str) -> tuple:
    with archive.open(entry) as stream:
        try:
            version = np.lib.format.read_magic(stream)
            if version == (1, 0):
                shape, fortran, dtype = np.lib.format.read_array_header_1_0(stream)
            elif version == (2, 0):
                shape, fortran, dtype = np.lib.format.read_array_header_2_0(stream)
            else:
                raise ValueError(f".npy format version {version} is not read here")
        except (ValueError, EOFError) as exc:
            raise InvalidInput(f"The {what} {excerpt(name)} has a corrupt {excerpt(key)} array ({exc}).") from None
    if dtype.hasobject or dtype.kind not in spec.kinds:
        raise InvalidInput(f"{excerpt(name)} is not a {what}: its {excerpt(key)} array is of type {dtype}, which is not "
                           "allowed here.")
    if spec.ndim is not None and len(shape) != spec.ndim:
        raise InvalidInput(f"The {what} {excerpt(name)} has a {excerpt(key)} array of shape {list(shape)}; "
                           f"expected {spec.ndim} dimension(s).")
    # a text array's values are its characters: a 0-d string array of a million characters is not one value
    per_element = dtype.itemsize // 4 if dtype.kind == "U" else 1
    elements = math.prod(shape) * per_element
    value_bytes = 4 if dtype.kind == "U" else max(dtype.itemsize, 1)
    if elements > spec.max_elements or entry.file_size > spec.max_elements * value_bytes + HEADER_BYTES:
        note = f" ({spec.limit_note})" if spec.limit_note else ""
        raise InvalidInput(f"The {what} {excerpt(name)} has a {excerpt(key)} array of shape {list(shape)} ({elements} values); "
                           f"this server's limit is {spec.max_elements} values{note}.")
    return shape, fortran, dtype
