"""Family 62 of the hardening probe (issue 49's faults under a book):
book faults: a full and a read-only disk, takes with no audio, a sentence file that is not audio.

A full disk is real where this process may mount (a 2 MB tmpfs, as root) and is otherwise skipped and said;
ENOSPC is also injected where the atomic write fsyncs (``storage.atomic._sync_file``, the write layer every
kept file passes), and a take with no audio where the post-processing removes silence
(``audio.processing.remove_silence``): the CLI runs in a subprocess whose ``-c`` wrapper sets the fault, then
calls the checkout's ``omnivoice_demo.cli.main.main``.  Held: a clear line that says what to do (no traceback,
no "internal error"), no file that is not audio left, and the rerun after the fault completes reusing every
sentence made (else "data lost")."""

from __future__ import annotations

import contextlib
import json
import pathlib
import subprocess
import time

from ..probe import Probe
from ..server import environment
from ..visitor import tail
from .books import clean

FAMILY = 62
WHAT = "book faults: a full and a read-only disk, takes with no audio, a sentence file that is not audio"
#: starts its own processes (``run(probe)``)
SHARED = False

WRAPPER = """
import errno, sys
FAULT = sys.argv.pop(1)
if FAULT.startswith("enospc:"):
    from omnivoice_demo.storage import atomic
    real, left = atomic._sync_file, [int(FAULT.split(":")[1])]
    def full(name):
        if left[0] <= 0:
            raise OSError(errno.ENOSPC, "No space left on device", name)
        left[0] -= 1
        real(name)
    atomic._sync_file = full
elif FAULT == "silent":
    from omnivoice_demo.audio import processing
    processing.remove_silence = lambda audio, *args, **kwargs: audio[:, :0]
from omnivoice_demo.cli.main import main
sys.exit(main(sys.argv[1:]))
"""
TEXT = "Chapter 1\n\nOne is here. Two is here. Three is here. Four is here.\n"


def book(probe: Probe, fault: str, source: pathlib.Path, output: pathlib.Path, *extra: str) -> tuple[int, str]:
    done = subprocess.run(["nice", "-n", "19", probe.python, "-c", WRAPPER, fault, "book", str(source), "--output",
                           str(output), "--model", str(probe.model), "--precision", "fp32", "--num-step", "1",
                           "--no-guard", "--no-progress", *extra], capture_output=True, text=True, cwd=probe.work,
                          env=environment(probe.repo, probe.work / "faults"), timeout=600)
    return done.returncode, done.stdout + done.stderr


def last_line(out: str) -> dict:
    for line in reversed(out.strip().splitlines()):
        with contextlib.suppress(ValueError):
            found = json.loads(line)
            if isinstance(found, dict):
                return found
    return {}


def made(output: pathlib.Path) -> set[str]:
    """The sentences whose sidecar says done."""
    done = set()
    for sidecar in (output / "sentences").glob("*.json"):
        with contextlib.suppress(ValueError, OSError):
            if json.loads(sidecar.read_text()).get("status") == "done":
                done.add(sidecar.stem)
    return done


def not_audio(output: pathlib.Path) -> list[str]:
    """Audio files of the project that are empty, and temporary files left behind."""
    found = [p.name for p in output.rglob("*.flac") if p.stat().st_size == 0]
    return found + [p.name for p in output.rglob("*.part")]


@contextlib.contextmanager
def small_disk(folder: pathlib.Path, size: str):
    """A tmpfs of ``size`` at ``folder`` (None when this process may not mount), unmounted afterwards."""
    folder.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)],
                             capture_output=True, text=True).returncode == 0
    try:
        yield folder if mounted else None
    finally:
        if mounted:
            subprocess.run(["umount", "-l", str(folder)], capture_output=True)


def run(probe: Probe) -> None:
    root = probe.work / "faults"
    root.mkdir(parents=True, exist_ok=True)
    source = root / "book.txt"
    source.write_text(TEXT)
    long_source = root / "long.txt"
    long_source.write_text("Chapter 1\n\n" + " ".join(f"Sentence number {n} is here with a few words to say."
                                                       for n in range(40)) + "\n")

    def judged(code: int, out: str, words: str, output: pathlib.Path, before: set[str], rerun) -> tuple[str, str]:
        clear = code == 2 and words in out and clean(out)
        left = not_audio(output)
        code2, out2 = rerun()
        line = last_line(out2)
        lost = before - made(output)
        if lost:
            return "data lost", f"{len(lost)} sentences made before the fault are gone after the rerun"
        done = code2 == 0 and line.get("made", 0) + line.get("reused", 0) > 0 and not not_audio(output)
        held = clear and not left and done
        return ("held" if held else "broke"), (f"fault: exit {code}, {tail(out, 150)}; left {left or 'nothing'}; "
                                               f"rerun: exit {code2}, made {line.get('made')}, reused "
                                               f"{line.get('reused')}")

    def real_full_disk() -> tuple[str, str]:
        with small_disk(root / "tmpfs", "2m") as disk:
            if disk is None:
                probe.notes.append("family 62: mount is not allowed here; the real full disk case was skipped")
                return "held", "skipped: this process may not mount a tmpfs (the injected case below stands in)"
            output = disk / "out"
            started = time.monotonic()
            code, out = book(probe, "none", long_source, output)
            before = made(output)
            subprocess.run(["mount", "-o", "remount,size=64m", str(disk)], capture_output=True)
            outcome, detail = judged(code, out, "is full (ENOSPC)", output, before,
                                     lambda: book(probe, "none", long_source, output))
            return outcome, f"{len(before)} sentences fit in 2 MB; {detail} ({time.monotonic() - started:.0f} s)"
    probe.guarded(None, 62, "omnivoice book onto a 2 MB tmpfs (a real full disk), then the disk grown and rerun",
                  "exit 2 naming the full disk and what to do, no traceback, nothing half-written; the rerun "
                  "completes reusing every sentence made", real_full_disk)

    def injected_full_disk() -> tuple[str, str]:
        output = root / "enospc-out"
        code, out = book(probe, "enospc:3", source, output, "--format", "flac", "--no-readalong")
        before = made(output)
        return judged(code, out, "is full (ENOSPC)", output, before,
                      lambda: book(probe, "none", source, output, "--format", "flac", "--no-readalong"))
    probe.guarded(None, 62, "ENOSPC from the fourth file's fsync, then the same command again",
                  "exit 2 naming the full disk, no traceback; the rerun completes", injected_full_disk)

    def read_only_disk() -> tuple[str, str]:
        with small_disk(root / "rofs", "16m") as disk:
            if disk is None:
                return "held", "skipped: this process may not mount a tmpfs"
            output = disk / "out"
            code0, out0 = book(probe, "none", source, output, "--format", "flac", "--no-readalong")
            (source.parent / "book2.txt").write_text(TEXT.replace("Four", "Five"))
            subprocess.run(["mount", "-o", "remount,ro", str(disk)], capture_output=True)
            before = made(output)
            code, out = book(probe, "none", source.parent / "book2.txt", output, "--format", "flac",
                             "--no-readalong")
            subprocess.run(["mount", "-o", "remount,rw", str(disk)], capture_output=True)
            outcome, detail = judged(code, out, "read-only (EROFS)", output, before,
                                     lambda: book(probe, "none", source.parent / "book2.txt", output, "--format",
                                                  "flac", "--no-readalong"))
            return outcome, f"first run exit {code0}; {detail}"
    probe.guarded(None, 62, "a book's folder on a disk remounted read-only, a changed sentence, then rw and rerun",
                  "exit 2 naming the read-only disk, no traceback; the rerun completes", read_only_disk)

    def silent_takes() -> tuple[str, str]:
        output = root / "silent-out"
        code, out = book(probe, "silent", source, output, "--format", "flac", "--no-readalong")
        report = {}
        with contextlib.suppress(OSError, ValueError):
            report = json.loads((output / "report.json").read_text())
        named = len(report.get("silent", [])) == 5 and "kept as silence" in out
        left = not_audio(output)
        held = code == 0 and named and not left and clean(out) and (output / "chapters" / "01.flac").is_file()
        return ("held" if held else "broke"), (f"exit {code}; report names {len(report.get('silent', []))} silent "
                                               f"sentences; not audio: {left or 'none'}; {tail(out, 120)}")
    probe.guarded(None, 62, "every take comes out all silence (removed by the post-processing)",
                  "the book finishes (exit 0) with each such sentence kept as a short silence and named; no 0-byte "
                  "file", silent_takes)

    def zero_byte_leftover() -> tuple[str, str]:
        import hashlib

        output = root / "leftover-out"
        code0, out0 = book(probe, "none", source, output, "--format", "flac", "--no-readalong")
        flacs = sorted((output / "sentences").glob("*.flac"))
        if code0 != 0 or not flacs:
            return "broke", f"the first run: exit {code0}: {tail(out0)}"
        flacs[0].write_bytes(b"")   # what an older version left for a take with no audio, its sidecar saying so
        sidecar = flacs[0].with_suffix(".json")
        record = json.loads(sidecar.read_text())
        sidecar.write_text(json.dumps(dict(record, sha256=hashlib.sha256(b"").hexdigest(), samples=0)))
        code, out = book(probe, "none", source, output, "--format", "flac", "--no-readalong")
        gone = not flacs[0].exists()
        code2, out2 = book(probe, "none", source, output, "--format", "flac", "--no-readalong")
        held = code == 2 and "not audio" in out and clean(out) and gone and code2 == 0 and not not_audio(output)
        return ("held" if held else "broke"), (f"exit {code} ({tail(out, 140)}), the file removed: {gone}; "
                                               f"rerun exit {code2}")
    probe.guarded(None, 62, "a 0-byte sentence FLAC with a sidecar that vouches for it (an older version's)",
                  "exit 2 saying it was not audio and was removed; the rerun makes it", zero_byte_leftover)
