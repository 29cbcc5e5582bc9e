"""Family 9 of the hardening probe:
malformed inputs (HTTP, Gradio, .npz, CLI outputs)."""

from __future__ import annotations

import json
import os
import pathlib
import re
import shutil
import subprocess
from typing import Callable

import numpy as np

from ..probe import Probe
from ..server import Server
from ..visitor import clear_4xx, create_voice, gradio_call, message_of, names_of, short, tail, wav_bytes

FAMILY = 9
WHAT = "malformed inputs (HTTP, Gradio, .npz, CLI outputs)"
#: run on the shared server (``run(probe, server)``)
SHARED = True


def encrypted(data: bytearray, local: int, central: int) -> None:
    data[local + 6] |= 1      # general purpose flag, bit 0: encrypted
    data[central + 8] |= 1


def method_99(data: bytearray, local: int, central: int) -> None:
    data[local + 8:local + 10] = (99).to_bytes(2, "little")    # compression method 99 (AES)
    data[central + 10:central + 12] = (99).to_bytes(2, "little")


def run(probe: Probe, server: Server) -> None:
    def raw_speech(body: str, words: str = "", status: int = 400) -> Callable[[], tuple[str, str]]:
        def check() -> tuple[str, str]:
            with server.http() as client:
                response = client.post("v1/audio/speech", content=body.encode("utf-8", "surrogatepass"),
                                       headers={"Content-Type": "application/json"})
            try:
                message_of(response).encode("utf-8")  # the message itself can be sent on
                sendable = True
            except UnicodeEncodeError:
                sendable = False
            held = clear_4xx(response, words) and sendable
            return ("held" if held else "broke"), short(response)
        return check

    base = {"model": "omnivoice", "input": "Hello.", "voice": "auto", "stream": False, "steps": 1}
    cases = [
        ("a lone surrogate in input", json.dumps(dict(base, input="Hi \ud800 there.")), "unicode|surrogate"),
        ("a lone surrogate in instructions", json.dumps(dict(base, instructions="Hi \ud800 there.")),
         "unicode|surrogate"),
        ("a lone surrogate as the voice", json.dumps(dict(base, voice="\ud800")), ""),
        ("JSON nested 100,000 deep", "[" * 100_000 + "]" * 100_000, ""),
        ("preset as a list", json.dumps(dict(base, preset=["fast"])), "preset"),
        ("preset as an object", json.dumps(dict(base, preset={"name": "fast"})), "preset"),
        ("steps as a string of digits and letters", json.dumps(dict(base, steps="8x")), "step"),
        ("input as an object", json.dumps(dict(base, input={"text": "Hello."})), "input"),
    ]
    for name, body, words in cases:
        probe.guarded(server, 9, f"/v1/audio/speech: {name}", "a 4xx with a clear message (no 500)",
                     raw_speech(body, words))

    def form(body: bytes, content_type: str, name: str) -> None:
        def check() -> tuple[str, str]:
            with server.http() as client:
                response = client.post("v1/audio/voices", content=body, headers={"Content-Type": content_type})
            return ("held" if clear_4xx(response) else "broke"), short(response)
        probe.guarded(server, 9, f"/v1/audio/voices: {name}", "a 4xx with a clear message (no 500)", check)
    form(b"--xyz\r\nContent-Disposition: form-da\r\n\r\n\x00garbage", "multipart/form-data; boundary=xyz",
         "malformed multipart")
    form(b"garbage", "multipart/form-data", "multipart without a boundary")

    def long_name() -> tuple[str, str]:
        with server.http() as client:
            response = create_voice(client, "LongFileName", probe.wav, filename="x" * 5000 + ".wav")
            client.delete("v1/audio/voices/LongFileName")
        held = response.status_code == 201 or clear_4xx(response)
        return ("held" if held else "broke"), short(response)
    probe.guarded(server, 9, "/v1/audio/voices: a 5,000-character upload file name",
                 "created, or a 4xx with a clear message (no 500)", long_name)

    def loud() -> tuple[str, str]:
        audio = np.full(72000, 1e30, dtype=np.float32)
        audio[::2] = -1e30
        with server.http() as client:
            response = create_voice(client, "Loud", wav_bytes(audio, "FLOAT"))
            listed = names_of(client.get("v1/audio/voices"))
            client.delete("v1/audio/voices/Loud")
        held = clear_4xx(response) and "Loud" not in listed
        return ("held" if held else "broke"), short(response) + ("; saved and listed" if "Loud" in listed else "")
    probe.guarded(server, 9, "/v1/audio/voices: a float WAV of amplitude 1e30",
                 "refused with a 4xx, not saved (before: saved with rms=inf)", loud)

    def gradio_surrogate() -> tuple[str, str]:
        event, data = gradio_call(server, "speak", text="Hi \ud800 there.", num_step=1)
        if event == "complete":
            return "broke", "answered with audio"
        held = event == "error" and "internal" not in data.lower() and "traceback" not in data.lower()
        return ("held" if held else "broke"), f"{event}: {data[:200]}"
    probe.guarded(server, 9, "Gradio /speak: a lone surrogate in the text",
                 "refused with a clear message (no internal error)", gradio_surrogate)
    with server.http() as client:  # a voice file for the .npz cases (family9_files)
        create_voice(client, "NpzSource", probe.wav)
    found = list((probe.work / "shared" / "data").rglob("NpzSource.npz"))
    if found:
        shutil.copy(found[0], probe.npz_source)


def files(probe: Probe) -> None:
    folder = probe.work / "cli"
    folder.mkdir(exist_ok=True)
    missing_model = str(folder / "no-model")
    criterion = ("exit 2 with an error naming the output, before any model work (run with a model folder that "
                 "does not exist: an output checked first is the error)")

    def output_case(target: pathlib.Path, words: str) -> Callable[[], tuple[str, str]]:
        def check() -> tuple[str, str]:
            done = probe.cli("synth", "--model", missing_model, "--text", "Hello.", "--output", str(target),
                            cwd=folder)
            err = done.stderr + done.stdout
            held = done.returncode == 2 and re.search(words, err, re.I) and "traceback" not in err.lower()
            return ("held" if held else "broke"), f"exit {done.returncode}: {tail(err)}"
        return check
    link = folder / "out-link.wav"
    link.unlink(missing_ok=True)
    link.symlink_to("/dev/full")
    probe.guarded(None, 9, "CLI --output: a link to /dev/full", criterion,
                 output_case(link, r"regular file|device|output"))
    probe.guarded(None, 9, "CLI --output: x.raw", criterion, output_case(folder / "x.raw", r"raw|audio|format"))
    locked = folder / "locked.wav"
    locked.write_bytes(b"")
    made_immutable = False
    if os.geteuid() == 0:  # root writes over any mode: make the file immutable instead
        made_immutable = subprocess.run(["chattr", "+i", str(locked)], capture_output=True).returncode == 0
    else:
        locked.chmod(0o444)
    try:
        if os.geteuid() != 0 or made_immutable:
            probe.guarded(None, 9, "CLI --output: over an unwritable file", criterion,
                         output_case(locked, r"writable|permission|output"))
        else:
            probe.notes.append("CLI over an unwritable file: not run (root, and chattr +i failed)")
    finally:
        if made_immutable:
            subprocess.run(["chattr", "-i", str(locked)], capture_output=True)

    if not probe.npz_source.is_file():
        probe.notes.append(".npz cases: not run (no voice file was made)")
        return
    for name, change in (("the encrypted flag", encrypted), ("compression method 99", method_99)):
        def check(change=change) -> tuple[str, str]:
            path = folder / "patched.npz"
            data = bytearray(probe.npz_source.read_bytes())
            change(data, data.find(b"PK\x03\x04"), data.find(b"PK\x01\x02"))
            path.write_bytes(bytes(data))
            done = probe.cli("synth", "--model", str(probe.model), "--precision", "fp32", "--voice", str(path),
                            "--text", "Hello.", "--num-step", "1", "--output", str(folder / "npz.wav"), cwd=folder)
            err = done.stderr + done.stdout
            held = done.returncode == 2 and "internal error" not in err.lower() and "traceback" not in err.lower()
            return ("held" if held else "broke"), f"exit {done.returncode}: {tail(err)}"
        probe.guarded(None, 9, f"CLI --voice: an .npz with {name}",
                     "exit 2 with a clear error (no internal error or traceback)", check)
