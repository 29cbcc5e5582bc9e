"""Family 25 of the hardening probe:
an outputs folder that cannot be written."""

from __future__ import annotations

import os
import re
import subprocess

from ..probe import Probe
from ..server import Server
from ..visitor import gradio_call

FAMILY = 25
WHAT = "an outputs folder that cannot be written"
#: run on the shared server (``run(probe, server)``)
SHARED = True


def run(probe: Probe, server: Server) -> None:
    outputs = probe.work / "shared" / "data" / "outputs"

    def unwritable() -> tuple[str, str]:
        outputs.mkdir(parents=True, exist_ok=True)
        before = sorted(p.name for p in outputs.iterdir())
        if os.geteuid() == 0:  # root writes into any folder whatever its mode: make it immutable instead
            if subprocess.run(["chattr", "+i", str(outputs)], capture_output=True).returncode != 0:
                return "held", "not run (root, and chattr +i failed)"
        else:
            outputs.chmod(0o555)
        try:
            event, data = gradio_call(server, "speak", text="Hello.", num_step=1)
        finally:
            if os.geteuid() == 0:
                subprocess.run(["chattr", "-i", str(outputs)], capture_output=True)
            else:
                outputs.chmod(0o755)
        after = sorted(p.name for p in outputs.iterdir())
        held = event == "error" and "internal" not in data.lower() and re.search(r"writ|full|save", data, re.I) \
            and after == before
        return ("held" if held else "broke"), f"{event}: {data[:200]}; files {len(before)} -> {len(after)}"
    probe.guarded(server, 25, "Gradio /speak: the outputs folder cannot be written",
                 "an error saying the folder cannot be written (no internal error); no file left", unwritable)
