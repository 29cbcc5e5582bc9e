"""Family 61 of the hardening probe (issue 49's books):
books: legacy encodings, zip bombs of small entries, a hostile language and text in the read-along.

Every case runs ``omnivoice book`` as a subprocess on an EPUB written here (``tests.support.books.write_epub2``:
zipfile only); a case holds when the CLI answers as documented (a clear line, no traceback, no "internal
error"), within its bounds of time and memory."""

from __future__ import annotations

import pathlib
import re
import subprocess
import time
import zipfile

from ..probe import Probe
from ..server import MB, environment
from ..visitor import tail

FAMILY = 61
WHAT = "books: legacy encodings, zip bombs of small entries, a hostile language and text in the read-along"
#: starts its own processes (``run(probe)``)
SHARED = False

#: runs ``omnivoice book`` and then prints the process's peak RSS (kB) on stderr as ``maxrss=N``: /proc's VmHWM,
#: the peak of this process image (getrusage's ru_maxrss keeps the parent's peak across fork and exec)
MEASURED = ("import re, sys\nfrom omnivoice_demo.cli.main import main\ncode = main(sys.argv[1:])\n"
            "peak = re.search(r'VmHWM:\\s*(\\d+)', open('/proc/self/status').read()).group(1)\n"
            "print(f'maxrss={peak}', file=sys.stderr)\nsys.exit(code)")


def chapter(text: str, declared: str | None) -> str:
    declaration = f'<?xml version="1.0" encoding="{declared}"?>' if declared else ""
    return (f'{declaration}<html xmlns="http://www.w3.org/1999/xhtml"><head><title>x</title></head>'
            f"<body><p>{text}</p></body></html>")


def book_run(probe: Probe, *args: str, timeout: float = 300) -> tuple[int, str, float, float]:
    """(exit code, stdout + stderr, seconds, peak RSS in MB) of ``omnivoice book ARGS`` in a process of its own."""
    started = time.monotonic()
    done = subprocess.run(["nice", "-n", "19", probe.python, "-c", MEASURED, "book", *args], capture_output=True,
                          text=True, cwd=probe.work, env=environment(probe.repo, probe.work / "books"),
                          timeout=timeout)
    seconds = time.monotonic() - started
    found = re.search(r"maxrss=(\d+)\n?", done.stderr)
    said = done.stdout + (done.stderr.replace(found.group(0), "") if found else done.stderr)
    return done.returncode, said, seconds, (int(found.group(1)) / 1024 if found else -1.0)


def clean(out: str) -> bool:
    return "Traceback" not in out and "internal error" not in out.lower()


def run(probe: Probe) -> None:
    from tests.support.books import write_epub2

    root = probe.work / "books"
    root.mkdir(parents=True, exist_ok=True)
    model = ["--model", str(probe.model), "--precision", "fp32"]

    def listed(path: pathlib.Path, *extra: str) -> tuple[int, str, float, float]:
        return book_run(probe, str(path), "--output", str(root / f"{path.stem}-out"), *model, "--list", *extra)

    def declared_shift_jis() -> tuple[str, str]:
        text = "吾輩は猫である。名前はまだ無い。"
        path = write_epub2(root / "sjis.epub", [("Un", []), ("Deux", ["Plain."])],
                           raw={0: chapter(text, "Shift_JIS").encode("shift_jis")})
        code, out, _, _ = listed(path)
        return ("held" if code == 0 and clean(out) and "warning" not in out else "broke"), f"exit {code}: {tail(out)}"
    probe.guarded(None, 61, "an EPUB chapter that declares encoding=\"Shift_JIS\", --list",
                  "listed (read in its declared encoding): exit 0, no traceback, no warning", declared_shift_jis)

    def unknown_encoding() -> tuple[str, str]:
        path = write_epub2(root / "klingon.epub", [("Un", [])], raw={0: chapter("Hello.", "x-klingon").encode()})
        code, out, _, _ = listed(path)
        named = "c0.xhtml" in out and "x-klingon" in out
        return ("held" if code == 2 and named and clean(out) else "broke"), f"exit {code}: {tail(out)}"
    probe.guarded(None, 61, "a chapter that declares an encoding no one knows (x-klingon)",
                  "refused (exit 2) naming the chapter and the encoding, no traceback", unknown_encoding)

    for name, text, encoding in (("cp1252", "Café crème, s’il vous plaît — très “bien”.", "cp1252"),
                                 ("shift_jis", "吾輩は猫である。名前はまだ無い。", "shift_jis")):
        def undeclared(name=name, text=text, encoding=encoding) -> tuple[str, str]:
            path = write_epub2(root / f"undeclared-{name}.epub", [("Un", []), ("Deux", ["Fine text here."])],
                               raw={0: chapter(text, None).encode(encoding)})
            code, out, _, _ = listed(path)
            warned = "warning: chapter 1" in out and "--encoding" in out
            code2, out2, _, _ = listed(path, "--encoding", encoding)
            fixed = code2 == 0 and "warning" not in out2
            held = code == 0 and warned and fixed and clean(out + out2)
            return ("held" if held else "broke"), (f"--list warns: {warned}; with --encoding {encoding}: exit "
                                                   f"{code2}, {'no warning' if fixed else tail(out2)}")
        probe.guarded(None, 61, f"an undeclared {name} chapter, --list then --list --encoding {encoding}",
                      "--list names the chapter and offers --encoding; with it the chapter reads clean", undeclared)

    def many_small_entries() -> tuple[str, str]:
        path = write_epub2(root / "bomb.epub", [("Un", ["Bonjour."])])
        with zipfile.ZipFile(path, "a") as archive:   # 1000 x 1 MiB: each under the per-entry floor
            for index in range(1000):
                archive.writestr(f"OEBPS/pad{index}.xhtml", b"\0" * MB, compress_type=zipfile.ZIP_DEFLATED)
        size = path.stat().st_size / MB
        code, out, seconds, rss = listed(path)
        held = code == 2 and "zip bomb" in out and clean(out) and seconds < 60 and 0 < rss < 600
        return ("held" if held else "broke"), (f"{size:.1f} MB file: exit {code} after {seconds:.1f} s, peak RSS "
                                               f"{rss:.0f} MB: {tail(out, 160)}")
    probe.guarded(None, 61, "1000 entries of 1 MiB zeros (about 1 GB from 1 MB), --list",
                  "refused from the zip's directory (exit 2, 'zip bomb') in seconds, under 600 MB", many_small_entries)

    def unlisted_entries() -> tuple[str, str]:
        import os

        path = write_epub2(root / "unlisted.epub", [("Un", ["Bonjour."])])
        with zipfile.ZipFile(path, "a") as archive:   # 900 MiB nobody lists, under the whole archive's ratio
            archive.writestr("OEBPS/photo.bin", os.urandom(48 * MB))   # stored: incompressible
            for index in range(900):
                archive.writestr(f"OEBPS/unlisted{index}.xhtml", b"\0" * MB, compress_type=zipfile.ZIP_DEFLATED)
        code, out, seconds, rss = listed(path)
        held = code == 0 and clean(out) and seconds < 60 and 0 < rss < 600
        return ("held" if held else "broke"), f"exit {code} after {seconds:.1f} s, peak RSS {rss:.0f} MB: {tail(out)}"
    probe.guarded(None, 61, "900 MiB of zeros in files the package never lists, beside 48 MB of photo (the whole "
                  "archive about 20x), --list", "read without unpacking them: exit 0 in under a minute and 600 MB",
                  unlisted_entries)

    def hostile_language_and_text() -> tuple[str, str]:
        odd = 'A <b>"quote"</b> & ]]> end.'   # escaped into the EPUB by write_epub2, read back as written
        path = write_epub2(root / "lang.epub", [("One & <two>", [odd]), ("Deux", ["Fine."])],
                           language="en&quot; onload=&quot;alert(1)")
        output = root / "lang-out"
        code, out, seconds, _ = book_run(probe, str(path), "--output", str(output), *model, "--num-step", "1",
                                         "--no-guard", "--no-progress", timeout=600)
        epubs = list(output.glob("*.readalong.epub"))
        if code != 0 or not epubs:
            return "broke", f"exit {code} after {seconds:.0f} s: {tail(out)}"
        from xml.dom import minidom   # the standard library's parser: a file that is not XML raises

        bad = []
        with zipfile.ZipFile(epubs[0]) as archive:
            for name in archive.namelist():
                if name.endswith((".xhtml", ".smil", ".opf", ".xml")):
                    try:
                        document = minidom.parseString(archive.read(name))
                    except Exception as exc:  # noqa: BLE001 - any parse error is the finding
                        bad.append(f"{name}: {exc}")
                        continue
                    if any(e.hasAttribute("onload") for e in document.getElementsByTagName("*")):
                        bad.append(f"{name}: an onload attribute")
            page = archive.read("OEBPS/ch01.xhtml").decode()
        lang = re.search(r'\blang="([^"]*)"', page)
        return ("held" if not bad and clean(out) else "broke"), \
            f"exit {code}; lang={lang.group(1) if lang else None}; {'; '.join(bad) or 'every file is XML'}"
    probe.guarded(None, 61, "dc:language 'en\" onload=\"alert(1)', a title and text with markup, made to the end",
                  "every file of the read-along is XML with no onload; the page's lang is a language tag",
                  hostile_language_and_text)
