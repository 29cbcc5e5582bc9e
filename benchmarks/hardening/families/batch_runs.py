"""Family 7 of the hardening probe:
batch: replaced weights, limit flags, a bad row."""

from __future__ import annotations

import json
import pathlib
import re
import shutil
import subprocess

import numpy as np

from ..probe import Probe
from ..server import environment
from ..visitor import sha256_of, tail

FAMILY = 7
WHAT = "batch: replaced weights, limit flags, a bad row"
#: starts its own servers (``run(probe)``)
SHARED = False


def other_weights(graph: pathlib.Path) -> None:
    """Other weights at the same path: every float initializer of ``graph``'s external data negated, and the
    folder's manifest updated with the new file's size and sha256 (as a real replacement would come)."""
    import onnx

    model = onnx.load(str(graph), load_external_data=False)
    with open(graph.parent / f"{graph.name}.data", "r+b") as handle:
        for tensor in model.graph.initializer:
            if tensor.data_type != onnx.TensorProto.FLOAT or tensor.data_location != onnx.TensorProto.EXTERNAL:
                continue
            info = {entry.key: entry.value for entry in tensor.external_data}
            offset, length = int(info.get("offset", 0)), int(info["length"])
            handle.seek(offset)
            values = -np.frombuffer(handle.read(length), dtype=np.float32)
            handle.seek(offset)
            handle.write(values.tobytes())
    manifest_path = graph.parent / "omnivoice_manifest.json"
    manifest = json.loads(manifest_path.read_text())
    data = graph.parent / f"{graph.name}.data"
    entry = manifest.get("files", {}).get(data.name)
    if entry is not None:
        entry.update(size=data.stat().st_size, sha256=sha256_of(data))
    manifest_path.write_text(json.dumps(manifest, indent=2))


def run(probe: Probe) -> None:
    root = probe.work / "batch"
    model = root / "model"
    shutil.copytree(probe.model, model)

    def replaced() -> tuple[str, str]:
        rows = ['{"id": "good", "text": "Hello there."}']
        code, out = batch(probe, root / "replaced", rows, model)
        first = sha256_of(root / "replaced" / "out" / "good.wav")
        other_weights(model / "audio_heads_decoder.onnx")
        code2, out2 = batch(probe, root / "replaced", rows, model)
        second = sha256_of(root / "replaced" / "out" / "good.wav")
        if code or code2 or first is None:
            return "broke", f"exit {code}/{code2}: {tail(out2 or out)}"
        return ("held" if second != first else "broke"), \
            ("synthesised again: new audio" if second != first else "skipped: the old audio kept") + \
            f" ({tail(out2, 100)})"
    probe.guarded(None, 7, "the model folder's weights replaced at the same path, batch rerun",
                 "the item is synthesised again with the new weights (the old audio is not kept)", replaced)

    good = '{"id": "good", "text": "Hello there."}'
    bad_rows = {  # name: (the row's id, the row as a line of JSONL, flags, what the message names)
        "--max-text-chars 20 and a 26-character row": ("long", '{"id": "long", "text": "Hello there, a longer row."}',
                                                      ["--max-text-chars", "20"], r"max_text_chars|limit"),
        "a row with a lone surrogate": ("bad", '{"id": "bad", "text": "Hi \\ud800 there."}', [],
                                        r"unicode|surrogate"),
        'a row with voice "/proc/probe/mem"': ("mem", '{"id": "mem", "text": "Hello.", "voice": "/proc/probe/mem"}',
                                              [], r"voice|/proc/probe/mem|regular file"),
    }
    for index, (name, (bad_id, row, flags, words)) in enumerate(bad_rows.items()):
        def check(bad_id=bad_id, row=row, flags=flags, words=words, index=index) -> tuple[str, str]:
            folder = root / f"row{index}"
            code, out = batch(probe, folder, [row, good], model, *flags)
            clear = "internal error" not in out.lower() and "traceback" not in out.lower() and \
                re.search(words, out, re.I) is not None
            bad_audio = list((folder / "out").glob(f"{bad_id}.*")) if (folder / "out").exists() else []
            bad_audio = [p for p in bad_audio if p.suffix in (".wav", ".flac")]
            good_done = (folder / "out" / "good.wav").is_file()
            held = clear and not bad_audio
            how = "the good row done" if good_done else "the good row not done"
            return ("held" if held else "broke"), f"exit {code}, {how}: {tail(out)}"
        probe.guarded(None, 7, name, "the bad row is named with a clear message (no internal error), no audio for "
                     "it; it fails alone or the run is refused before any work", check)


def batch(probe: Probe, folder: pathlib.Path, rows: list[str], model: pathlib.Path, *flags: str) -> tuple[int, str]:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "items.jsonl").write_text("\n".join(rows) + "\n")
    done = subprocess.run(["nice", "-n", "19", probe.python, "-m", "omnivoice_demo", "batch", "--model", str(model),
                           "--precision", "fp32", "--input", "items.jsonl", "--output", "out", "--num-step", "1",
                           "--no-progress", *flags], capture_output=True, text=True, cwd=folder,
                          env=environment(probe.repo, probe.work / "batch"), timeout=300)
    return done.returncode, done.stdout + done.stderr
