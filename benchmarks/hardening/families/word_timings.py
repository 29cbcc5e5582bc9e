"""Family 36 of the hardening probe (issue 49, causes 1 and 2):
word timings of texts that hold the recogniser's own markers, and control tokens split by a line break."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess

from ..probe import Probe
from ..server import HERE, Server
from ..visitor import clear_4xx, create_voice, names_of, short, speak, tail

FAMILY = 36
WHAT = "word timings of texts with Whisper's markers (<|en|>, <|notimestamps|>, ...); control tokens split by a line break"
#: starts its own server, with a recogniser (``run(probe)``)
SHARED = False

#: Whisper's markers that are not OmniVoice's (the text must be spoken, and its words timed, as written)
MARKER_TEXTS = ["Say <|en|> and <|notimestamps|> please.", "<|startoftranscript|><|transcribe|> hello there.",
                "Times <|0.00|> and <|30.00|> here.", "Hi <|nocaptions|><|startoflm|> <|de|><|translate|> bye."]
#: OmniVoice's own control tokens split by line breaks, which the prompt builder removes
SPLIT_TEXTS = ["Hello.<|text_\nend|>Hi.", "Hi <|instruct_\r\nstart|>male<|instruct_\nend|> x.", "A <\n|lang_start|\n> b."]


def build_recognizer(work: pathlib.Path, python: str) -> pathlib.Path:
    """A random-weight Whisper folder with Whisper's real tokenizer, as the tests build theirs (needs torch)."""
    target = work / "whisper"
    if (target / "onnx").is_dir():
        return target / "onnx"
    script = ("import pathlib, sys\nfrom convert.whisper_checkpoint import build_checkpoint\n"
              "from convert.whisper import convert_whisper\nroot = pathlib.Path(sys.argv[1])\n"
              "checkpoint = build_checkpoint('test', root / 'ckpt', seed=0, max_length=40)\n"
              "convert_whisper(checkpoint, root / 'onnx', ('fp32', 'int8'))\n")
    subprocess.run(["nice", "-n", "19", python, "-c", script, str(target)], check=True, cwd=HERE,
                   env=dict(os.environ, PYTHONPATH=str(HERE)), timeout=900, capture_output=True)
    return target / "onnx"


def timed(response) -> tuple[bool, str]:
    """A 200 whose words are timed (the captioned route's JSON, or the speech route's header)."""
    if response.status_code != 200:
        return False, short(response)
    words = None
    if response.headers.get("content-type", "").startswith("application/json"):
        words = response.json().get("timestamps") or response.json().get("words")
    header = response.headers.get("x-omnivoice-words")
    if words is None and header:
        words = json.loads(header)
    return bool(words), f"200, {len(words or [])} words timed"


def run(probe: Probe) -> None:
    try:
        recognizer = build_recognizer(probe.work, probe.python)
    except (subprocess.SubprocessError, OSError) as exc:
        probe.notes.append(f"family 36: no recogniser folder could be built ({type(exc).__name__}); not run")
        return
    server = Server(probe.repo, probe.python, probe.work / "words", probe.shared_args, "words",
                    env={"OMNIVOICE_ASR_MODEL": str(recognizer)})
    server.start()
    try:
        for text in MARKER_TEXTS:
            def captioned(text=text) -> tuple[str, str]:
                with server.http() as client:
                    response = client.post("dev/captioned_speech", json={
                        "model": "omnivoice", "input": text, "voice": "auto", "steps": 2, "stream": False,
                        "response_format": "wav"})
                ok, seen = timed(response)
                return ("held" if ok else "broke"), seen
            probe.guarded(server, FAMILY, f"/dev/captioned_speech: {text!r}", "200 with every word timed (was a 500: "
                          "IndexError in the alignment)", captioned)

            def speech(text=text) -> tuple[str, str]:
                with server.http() as client:
                    response = speak(client, text=text, steps=2, word_timestamps=True)
                held = response.status_code == 200 or clear_4xx(response)
                return ("held" if held else "broke"), short(response)
            probe.guarded(server, FAMILY, f"/v1/audio/speech word_timestamps: {text!r}", "200 (audio and words)",
                          speech)

        def cli() -> tuple[str, str]:
            out = probe.work / "words-cli"
            out.mkdir(exist_ok=True)
            done = probe.cli("synth", "--model", str(probe.model), "--precision", "fp32", "--offline", "--num-step",
                             "2", "--asr-model", str(recognizer), "--text", MARKER_TEXTS[0], "--output",
                             str(out / "a.wav"), "--words", str(out / "a.json"), cwd=out)
            words = json.loads((out / "a.json").read_text()) if (out / "a.json").is_file() else None
            held = done.returncode == 0 and bool(words) and "Traceback" not in done.stderr
            return ("held" if held else "broke"), f"rc {done.returncode}; {tail(done.stderr)}"
        probe.guarded(server, FAMILY, "omnivoice synth --words with <|en|> <|notimestamps|>",
                      "rc 0 and a words file, no traceback", cli)

        for text in SPLIT_TEXTS:
            def split(text=text) -> tuple[str, str]:
                with server.http() as client:
                    response = speak(client, text=text)
                return ("held" if clear_4xx(response, "control token") else "broke"), short(response)
            probe.guarded(server, FAMILY, f"speech input {text!r}", "a 4xx naming the control token (was a 200)",
                          split)

        def transcript() -> tuple[str, str]:
            with server.http() as client:
                response = create_voice(client, "Split", probe.wav, transcript="Hello <|text_\nend|> there.")
                listed = "Split" in names_of(client.get("v1/audio/voices"))
            held = clear_4xx(response, "control token") and not listed
            return ("held" if held else "broke"), f"{short(response)}; listed {listed}"
        probe.guarded(server, FAMILY, "voice upload, transcript with <|text_\\nend|>",
                      "a 4xx naming it; nothing saved (was a 201, then 200 when spoken)", transcript)
    finally:
        server.stop()
