"""Family 11 of the hardening probe:
the rebuilt 8-bit backbone in our cache: changed files, a remembered choice outside the gate, two first starts."""

from __future__ import annotations

import json
import pathlib
import re
import shutil
import subprocess
from typing import Callable, Optional

from ..probe import Probe
from ..server import build_model, environment
from ..visitor import sha256_of, tail

FAMILY = 11
WHAT = "the rebuilt 8-bit backbone in our cache: changed files, a remembered choice outside the gate, two first starts"
#: starts its own servers (``run(probe)``)
SHARED = False


def run(probe: Probe) -> None:
    root = probe.work / "backbone-cache"
    root.mkdir(parents=True, exist_ok=True)
    code, out, expected = synth(probe, root, probe.model, "first.wav", "--backbone", "int8-row")
    if code or expected is None:
        probe.add(11, "a first synth with --backbone int8-row", "it runs", "broke", f"exit {code}: {tail(out)}")
        return
    builds = root / "cache" / "backbones"

    def changed(change: Callable[[pathlib.Path], None]) -> Callable[[], tuple[str, str]]:
        def check() -> tuple[str, str]:
            (build,) = builds.glob("*-int8-row")
            change(build)
            code, out, audio = synth(probe, root, probe.model, "again.wav", "--backbone", "int8-row")
            blamed = re.search(r"attends causally|download the model|model folder again", out, re.I)
            if code == 0 and audio == expected:
                return "held", "the same audio as before the change (the build failed its check: built again)"
            if code and "cache" in out and not blamed:
                return "held", f"refused naming the cache: {tail(out)}"
            return "broke", f"exit {code}, {'other audio' if code == 0 else tail(out)}"
        return check

    def flip(build: pathlib.Path) -> None:
        data = build / "llm_decoder.onnx.data"
        raw = bytearray(data.read_bytes())
        raw[len(raw) // 2] ^= 0x5A
        data.write_bytes(bytes(raw))

    def another_graph(build: pathlib.Path) -> None:
        synth(probe, root, probe.model, "int8.wav", "--backbone", "int8")
        (other,) = builds.glob("*-int8")
        for name in ("llm_decoder.onnx", "llm_decoder.onnx.data"):
            (build / name).write_bytes((other / name).read_bytes())

    def zero(build: pathlib.Path) -> None:
        for path in build.glob("llm_decoder.onnx*"):
            path.write_bytes(bytes(path.stat().st_size))

    criterion = ("the same audio as before (the build is checked and built again), or a refusal naming the cache, "
                 "never the model folder")
    for name, change in (("a cached 8-bit build's weights with one byte flipped, the same size", flip),
                         ("another valid 8-bit graph copied over the cached build", another_graph),
                         ("a cached 8-bit build's files zeroed", zero)):
        probe.guarded(None, 11, name, criterion, changed(change))
    auto(probe, root)


def auto(probe: Probe, root: pathlib.Path) -> None:
    """``auto`` needs an int4 folder: one built from the tiny checkpoint (the convert extras, as ``build_model``)."""
    try:
        int4 = build_model(root, probe.python, profile="cpu")
    except (subprocess.SubprocessError, OSError) as exc:
        probe.notes.append(f"family 11: no int4 folder could be built ({type(exc).__name__}); the auto cases were "
                          "not run")
        return
    remembered = root / "cache" / "backbone-choice.json"

    def outside_the_gate() -> tuple[str, str]:
        code, out, _ = synth(probe, root, int4, "auto.wav")
        choices = json.loads(remembered.read_text())
        remembered.write_text(json.dumps({key: dict(entry, choice="int8-tensor") for key, entry in choices.items()}))
        code2, out2, _ = synth(probe, root, int4, "auto2.wav")
        after = {entry["choice"] for entry in json.loads(remembered.read_text()).values()}
        if code or code2:
            return "broke", f"exit {code}/{code2}: {tail(out2 or out)}"
        return ("held" if "int8-tensor" not in after else "broke"), f"remembered afterwards: {sorted(after)}"
    probe.guarded(None, 11, "backbone-choice.json naming int8-tensor (outside the fidelity gate)",
                 "auto probes again and remembers a gated choice", outside_the_gate)

    def two_first_starts() -> tuple[str, str]:
        shutil.rmtree(root / "cache", ignore_errors=True)
        starts = [synth(probe, root, int4, f"first-{n}.wav", start=True) for n in range(2)]
        outs = [process.communicate(timeout=900)[0] for process in starts]
        audio = [sha256_of(root / f"first-{n}.wav") for n in range(2)]
        entries = json.loads(remembered.read_text()) if remembered.is_file() else {}
        if any(process.returncode for process in starts) or None in audio:
            return "broke", f"exits {[p.returncode for p in starts]}: {tail(outs[0] + outs[1])}"
        same = audio[0] == audio[1]
        return ("held" if same and len(entries) == 1 else "broke"), \
            f"{'the same' if same else 'different'} audio, {len(entries)} remembered choice(s)"
    probe.guarded(None, 11, "two first starts with auto at the same moment on an empty cache",
                 "one choice: the same audio from both (a probe whose timings tie may hold on old code too)",
                 two_first_starts)


def synth(probe: Probe, folder: pathlib.Path, model: pathlib.Path, output: str, *flags: str,
          start: bool = False) -> subprocess.Popen | tuple[int, str, Optional[str]]:
    """``omnivoice synth`` (1 step, seed 1) with our cache in ``folder/cache``: ``(exit, output, sha256 of the
    audio)``, or the running process when ``start``."""
    env = dict(environment(probe.repo, folder), OMNIVOICE_CACHE=str(folder / "cache"))
    command = ["nice", "-n", "19", probe.python, "-m", "omnivoice_demo", "synth", "--model", str(model), "--text",
               "Hello there.", "--output", output, "--num-step", "1", "--seed", "1", *flags]
    (folder / output).unlink(missing_ok=True)
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=folder,
                               env=env)
    if start:
        return process
    try:
        out = process.communicate(timeout=600)[0]
    except subprocess.TimeoutExpired:
        process.kill()  # not left running after the case
        process.communicate()
        raise
    return process.returncode, out, sha256_of(folder / output)
