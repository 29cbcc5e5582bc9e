"""Family 22 of the hardening probe:
a voice file that cannot be read: deep meta, a lone surrogate in its transcript."""

from __future__ import annotations

import json
import shutil
import subprocess

from ..probe import Probe
from ..server import Server
from ..visitor import tail, voice_npz

FAMILY = 22
WHAT = "a voice file that cannot be read: deep meta, a lone surrogate in its transcript"
#: starts its own servers (``run(probe)``)
SHARED = False


def run(probe: Probe) -> None:
    deep = probe.work / "deep" / "Deep.npz"
    voice_npz(deep, "[" * 30000 + "]" * 30000)
    lone = probe.work / "lone" / "Lone.npz"
    voice_npz(lone, json.dumps({"format_version": 1, "transcript": "Hi \ud800 there.", "rms": 0.1,
                                "name": "Lone"}))
    folder = probe.work / "cli-unreadable"

    def cli_clean(done: subprocess.CompletedProcess, codes=(0, 2)) -> bool:
        err = (done.stderr + done.stdout).lower()
        return done.returncode in codes and "internal error" not in err and "traceback" not in err

    def import_deep() -> tuple[str, str]:
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        done = probe.cli("voices", "--folder", str(folder), "import", str(deep), cwd=probe.work)
        held = cli_clean(done, (2,)) and not list(folder.glob("*.npz"))
        return ("held" if held else "broke"), f"exit {done.returncode}: {tail(done.stderr + done.stdout)}"
    probe.guarded(None, 22, "CLI voices import: meta nested 30,000 deep",
                 "exit 2 with a clear error (no internal error); nothing saved", import_deep)

    def synth_deep() -> tuple[str, str]:
        done = probe.cli("synth", "--model", str(probe.model), "--precision", "fp32", "--voice", str(deep),
                        "--text", "Hello.", "--num-step", "1", "--output", str(probe.work / "deep.wav"),
                        cwd=probe.work)
        return ("held" if cli_clean(done, (2,)) else "broke"), f"exit {done.returncode}: " \
            f"{tail(done.stderr + done.stdout)}"
    probe.guarded(None, 22, "CLI synth --voice: meta nested 30,000 deep",
                 "exit 2 with a clear error (no internal error)", synth_deep)

    def import_lone() -> tuple[str, str]:
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        out = probe.work / "exported"
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir()
        runs = [probe.cli("voices", "--folder", str(folder), "import", str(lone), cwd=probe.work),
                probe.cli("voices", "--folder", str(folder), "list", cwd=probe.work),
                probe.cli("voices", "--folder", str(folder), "export", "Lone", str(out), cwd=probe.work)]
        written = sorted(p.suffix for p in out.iterdir())
        held = all(cli_clean(r) for r in runs) and runs[1].returncode == 0 and written in ([], [".json", ".npz"])
        return ("held" if held else "broke"), "; ".join(f"exit {r.returncode}: {tail(r.stderr + r.stdout, 90)}"
                                                       for r in runs) + f"; exported {written}"
    probe.guarded(None, 22, "CLI: import a transcript with a lone surrogate, then list and export it",
                 "list exits 0; no internal error; export writes both files or neither", import_lone)

    def bad_beside_good() -> tuple[str, str]:
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        shutil.copy(lone, folder / "Lone.npz")  # as a version that accepted it left it
        source = probe.work / "name-source.npz"
        if source.is_file():
            shutil.copy(source, folder / "Good.npz")
        out = probe.work / "exported"
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir()
        listed = probe.cli("voices", "--folder", str(folder), "list", cwd=probe.work)
        exported = probe.cli("voices", "--folder", str(folder), "export", "Lone", str(out), cwd=probe.work)
        written = sorted(p.suffix for p in out.iterdir())
        held = listed.returncode == 0 and (not source.is_file() or "Good" in listed.stdout) and \
            cli_clean(exported) and written in ([], [".json", ".npz"])
        return ("held" if held else "broke"), f"list exit {listed.returncode}: {tail(listed.stderr, 90)}; " \
            f"export exit {exported.returncode}: {tail(exported.stderr + exported.stdout, 90)}; " \
            f"exported {written}"
    probe.guarded(None, 22, "CLI: a stored voice whose transcript holds a lone surrogate, beside a good one",
                 "list exits 0 and shows the good one; export writes both files or neither", bad_beside_good)

    def startup() -> tuple[str, str]:
        server = Server(probe.repo, probe.python, probe.work / "startup", probe.shared_args, "startup")
        voices = server.work / "data" / "voices"
        voices.mkdir(parents=True, exist_ok=True)
        shutil.copy(deep, voices / "Deep.npz")
        shutil.copy(lone, voices / "Lone.npz")
        try:
            seconds = server.start()
            with server.http() as client:
                listing = client.get("v1/audio/voices")
        except (RuntimeError, TimeoutError) as exc:
            return "broke", tail(str(exc))
        finally:
            server.stop()
        left = sorted(p.name for p in voices.glob("*.npz"))
        return ("held" if listing.status_code == 200 and "Deep.npz" not in left else "broke"), \
            f"started in {seconds:.0f} s; listing {listing.status_code}; left in the folder {left}"
    probe.guarded(None, 22, "start-up with a voice whose meta nests 30,000 deep (and a lone-surrogate one)",
                 "the app starts; the deep one is moved aside", startup)
