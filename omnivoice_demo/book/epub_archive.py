"""An EPUB's zip judged before anything of it is unpacked (``checked_zip``), for ``epub.read_epub``:

* the entries' count, each entry's and the total uncompressed size, and each entry's and the whole archive's
  compression ratio, from the zip's directory (a zip bomb is refused by its directory);
* DRM: ``META-INF/encryption.xml`` that encrypts more than fonts (font obfuscation is no DRM), or a
  ``META-INF/rights.xml``, refuses the book: it cannot be read without its key;
* only the entries the package and its spine need are read, each XML one through ``defusedxml`` (no entity
  declarations, no external references) and as UTF-8 (``_as_utf8``: a declared legacy encoding, or ``--encoding``).
"""

from __future__ import annotations

import dataclasses
import pathlib
import posixpath
import re
import zipfile
from typing import Optional
from urllib.parse import unquote

from ..errors import InvalidInput
from .limits import BookLimits

FONT_OBFUSCATION = {"http://www.idpf.org/2008/embedding", "http://ns.adobe.com/pdf/enc#RC"}

#: the whole archive's compression ratio is checked once it unpacks to more than this (a small book is harmless)
WHOLE_RATIO_FLOOR = 8 * 1024 * 1024
#: an entry's own ratio is checked once it unpacks to more than this
ENTRY_RATIO_FLOOR = 1024 * 1024
#: the suffixes of the XML files of a package (each one read is parsed by defusedxml first)
XML_SUFFIXES = (".xml", ".opf", ".ncx", ".xhtml", ".html", ".htm", ".smil")


@dataclasses.dataclass
class CheckedZip:
    """What ``checked_zip`` found: every entry's uncompressed size, the entries the package and the spine need
    (container, OPF, NCX, nav, spine documents, cover), those of them that are XML as checked UTF-8 bytes, and
    notes on how they were read."""

    sizes: dict[str, int]
    needed: set[str]
    xml: dict[str, bytes]
    notes: list[str]


def checked_zip(path: pathlib.Path, limits: BookLimits, encoding: Optional[str] = None) -> CheckedZip:
    """Bounds, DRM and XML safety, judged before anything is unpacked: the entries' count, each entry's size and
    ratio, and the whole archive's uncompressed size and ratio from the zip's directory; then only the entries
    the package and its spine need are read (each within its bound), every XML one through ``defusedxml``."""
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError):
        raise InvalidInput(f"{path.name} is not an EPUB (an EPUB is a zip file); it may be damaged.",
                           param="input") from None
    with archive:
        infos = archive.infolist()
        if len(infos) > limits.max_entries:
            raise InvalidInput(f"{path.name} holds {len(infos)} files; an EPUB may hold at most {limits.max_entries}.",
                               param="input")
        total = packed = 0
        for info in infos:
            total += info.file_size
            packed += info.compress_size
            ratio = info.file_size / max(info.compress_size, 1)
            if info.file_size > limits.max_entry_bytes or (info.file_size > ENTRY_RATIO_FLOOR
                                                           and ratio > limits.max_ratio):
                raise InvalidInput(f"{path.name}: {info.filename} unpacks to {info.file_size / 2**20:.0f} MiB "
                                   f"from {info.compress_size / 2**20:.2f} MiB; that is a zip bomb or a file too "
                                   f"large for a book (at most {limits.max_entry_bytes / 2**20:.0f} MiB each, "
                                   f"{limits.max_ratio:.0f}x compression).", param="input")
        if total > limits.max_uncompressed_bytes:
            raise InvalidInput(f"{path.name} unpacks to {total / 2**20:.0f} MiB; a book may unpack to at most "
                               f"{limits.max_uncompressed_bytes / 2**20:.0f} MiB.", param="input")
        if total > WHOLE_RATIO_FLOOR and total / max(packed, 1) > limits.max_ratio:
            raise InvalidInput(f"{path.name} unpacks to {total / 2**20:.0f} MiB from {packed / 2**20:.2f} MiB "
                               f"({total / max(packed, 1):.0f}x over its {len(infos)} files); that is a zip bomb "
                               f"(a book compresses at most {limits.max_ratio:.0f}x).", param="input")
        sizes = {info.filename: info.file_size for info in infos}
        if "META-INF/rights.xml" in sizes:
            raise _drm(path)
        xml: dict[str, bytes] = {}
        notes: list[str] = []

        def checked(name: str, required: bool):
            """The root of the XML entry ``name`` (its checked UTF-8 bytes kept in ``xml``); None when it is not
            well-formed and not ``required`` (a chapter, read leniently later)."""
            from defusedxml import DefusedXmlException
            from defusedxml.ElementTree import ParseError, fromstring

            data = _as_utf8(archive.read(name), f"{path.name}: {name}", encoding, notes)
            xml[name] = data
            try:
                return fromstring(data, forbid_dtd=False, forbid_entities=True, forbid_external=True)
            except DefusedXmlException:
                raise InvalidInput(f"{path.name}: {name} declares XML entities or external references, "
                                   "which a book never needs (an entity expansion attack); it is refused.",
                                   param="input") from None
            except (ParseError, ValueError) as exc:
                if required:
                    raise InvalidInput(f"{path.name}: {name} is not well-formed XML ({exc}); the "
                                       "package cannot be read.", param="input") from None
                return None

        if "META-INF/encryption.xml" in sizes:
            root = checked("META-INF/encryption.xml", True)
            if root is not None and _encrypts_content(root):
                raise _drm(path)
        needed = {"META-INF/container.xml"}
        if "META-INF/container.xml" in sizes:
            container = checked("META-INF/container.xml", True)
            rootfile = next((e.get("full-path") for e in container.iter() if _local(e.tag) == "rootfile"
                             and e.get("full-path")), None)
            opf = posixpath.normpath(unquote(rootfile)) if rootfile else None
            if opf in sizes:
                needed.add(opf)
                needed |= _package_needs(checked(opf, True), posixpath.dirname(opf))
        for name in sorted(needed & set(sizes)):
            if name.lower().endswith(XML_SUFFIXES) and name not in xml:
                checked(name, False)
        return CheckedZip(sizes=sizes, needed=needed, xml=xml, notes=notes)


def _local(tag) -> str:
    return tag.rsplit("}", 1)[-1] if isinstance(tag, str) else ""


def _package_needs(opf, folder: str) -> set[str]:
    """The entries an OPF's spine, table of contents (NCX, nav) and cover need, as zip names."""
    manifest: dict[str, tuple[str, str, str]] = {}
    spine: list[str] = []
    toc, cover = None, None
    for element in opf.iter():
        tag = _local(element.tag)
        if tag == "item" and element.get("id") and element.get("href"):
            manifest[element.get("id")] = (element.get("href"), element.get("media-type") or "",
                                           element.get("properties") or "")
        elif tag == "itemref" and element.get("idref"):
            spine.append(element.get("idref"))
        elif tag == "spine":
            toc = element.get("toc")
        elif tag == "meta" and element.get("name") == "cover":
            cover = element.get("content")
    wanted = set(spine) | {toc, cover}
    wanted |= {uid for uid, (_, kind, properties) in manifest.items()
               if kind == "application/x-dtbncx+xml" or {"nav", "cover-image"} & set(properties.split())}
    return {posixpath.normpath(posixpath.join(folder, unquote(manifest[uid][0]))) for uid in wanted
            if uid in manifest}


#: an XML declaration's encoding (its first bytes are ASCII in every encoding a book may declare but UTF-16)
_DECLARED = re.compile(rb"""^(?:\xef\xbb\xbf)?\s*<\?xml[^>]*?\bencoding\s*=\s*["']([A-Za-z0-9._:-]{1,40})["']""")


def known_encoding(encoding: str) -> str:
    import codecs

    try:
        return codecs.lookup(encoding).name
    except LookupError:
        raise InvalidInput(f"--encoding {encoding!r} is no encoding Python knows (try cp1252, latin-1, "
                           "shift_jis, gb18030).", param="encoding") from None


def _as_utf8(data: bytes, where: str, encoding: Optional[str], notes: list[str]) -> bytes:
    """An XML file's bytes as UTF-8 with its declaration saying so: read in the encoding it declares (a legacy
    one such as Shift_JIS, which the XML parsers' expat does not read), or, when it declares none and is not
    UTF-8, in ``encoding`` (``--encoding``).  A declared encoding that is unknown, or bytes that are not what is
    declared, are refused with the file named; undeclared bytes that are not UTF-8 are left to the lenient
    reading (and its U+FFFD are counted by ``contents.finished``); a declaration of UTF-8 that the bytes belie
    gives way to ``encoding``."""
    import codecs

    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return data
    match = _DECLARED.match(data[:400])
    declared = match.group(1).decode("ascii") if match else None
    if declared is not None:
        try:
            name = codecs.lookup(declared).name
        except LookupError:
            raise InvalidInput(f"{where} declares the encoding {declared!r}, which is not one this reader knows; "
                               "save it as UTF-8 (or in cp1252, Shift_JIS, GB18030, ...).", param="input") from None
        if name != "utf-8":
            try:
                text = data.decode(name)
            except UnicodeDecodeError as exc:
                raise InvalidInput(f"{where} declares {declared} but byte 0x{data[exc.start]:02x} at offset "
                                   f"{exc.start} is not {declared}; repair the book or save it as UTF-8.",
                                   param="input") from None
            notes.append(f"{where.split(': ', 1)[-1]} was read as {declared}, as it declares")
            return redeclared(text).encode("utf-8")
    try:
        data.decode("utf-8")
        return data
    except UnicodeDecodeError:
        if not encoding:   # read leniently later; its U+FFFD are counted (``garbled_chapters``)
            return data
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"{where} is not {encoding}: byte 0x{data[exc.start]:02x} at offset {exc.start} cannot "
                           "be read; name its encoding with --encoding.", param="encoding") from None
    notes.append(f"{where.split(': ', 1)[-1]} was read as {encoding} (--encoding)")
    return redeclared(text).encode("utf-8")


def redeclared(text: str) -> str:
    """``text`` with its XML declaration's encoding (if any) made UTF-8."""
    return re.sub(r"""^(\ufeff?\s*<\?xml[^>]*?\bencoding\s*=\s*)["'][^"']*["']""", r'\1"utf-8"', text, count=1)


def _encrypts_content(root) -> bool:
    """Whether ``encryption.xml`` encrypts more than fonts (font obfuscation by the IDPF or Adobe is no DRM)."""
    for element in root.iter():
        if element.tag.endswith("EncryptionMethod") and element.get("Algorithm") not in FONT_OBFUSCATION:
            return True
    return False


def _drm(path: pathlib.Path) -> InvalidInput:
    return InvalidInput(f"{path.name} is protected by DRM (its META-INF says its content is encrypted); it cannot "
                        "be read. Use a DRM-free copy of the book (many shops sell them).", param="input")

