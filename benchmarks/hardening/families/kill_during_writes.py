"""Family 3 of the hardening probe:
kill -9 during voice creation; files left by an interrupted write."""

from __future__ import annotations

import contextlib
import threading
import time

from ..probe import Probe
from ..server import Server
from ..visitor import create_voice, names_of, short, speak

FAMILY = 3
WHAT = "kill -9 during voice creation; files left by an interrupted write"
#: starts its own servers (``run(probe)``)
SHARED = False


def run(probe: Probe) -> None:
    server = Server(probe.repo, probe.python, probe.work / "kill9", probe.shared_args, "kill9")
    server.start()
    criterion = ("after kill -9 during a voice's creation and a restart, every listed voice speaks and "
                 "the voice saved before is listed and speaks (else: data lost)")
    try:
        with server.http() as client:
            first = create_voice(client, "Keep", probe.wav)
            started = time.monotonic()
            timing = create_voice(client, "Timing", probe.wav)
            seconds = time.monotonic() - started
        if first.status_code != 201 or timing.status_code != 201:
            probe.add(3, "set-up: two voices", "both are created", "broke", f"{short(first)}; {short(timing)}")
            return
        for run, fraction in enumerate((0.6, 0.9, 1.0)):  # the write is at the end of the creation
            def victim(run=run):
                with contextlib.suppress(Exception), server.http() as client:
                    create_voice(client, f"Victim{run}", probe.wav)
            thread = threading.Thread(target=victim, daemon=True)
            thread.start()
            time.sleep(seconds * fraction)
            server.kill9()
            thread.join(timeout=30)
            server.start()
            outcome, detail = voices_usable(probe, server, must=["Keep"])
            probe.add(3, f"kill -9 at {fraction:.0%} of a creation ({seconds:.2f} s), run {run + 1}", criterion,
                     outcome, detail)
        # what a kill in the middle of a write in place leaves (1 in 9 runs in the issue): planted
        stored = [p for p in (server.work / "data").rglob("Keep.npz")]
        server.stop()
        if not stored:
            probe.add(3, "files left by an interrupted write", "the voice folder is found", "broke",
                     "no Keep.npz under the data folder")
            return
        folder = stored[0].parent
        (folder / "Empty.npz").write_bytes(b"")
        (folder / "Cut.npz").write_bytes(stored[0].read_bytes()[:200])
        server.start()
        with server.http() as client:
            listed = names_of(client.get("v1/audio/voices"))
            again = create_voice(client, "Empty", probe.wav)
        bad = [n for n in ("Empty", "Cut") if n in listed and not (n == "Empty" and again.status_code == 201)]
        outcome = "broke" if bad or again.status_code != 201 else "held"
        probe.add(3, "a 0-byte and a cut .npz in the voice folder at start-up",
                 "neither is listed (swept aside at start) and the name can be used again", outcome,
                 f"listed: {sorted(set(listed) & {'Empty', 'Cut'}) or 'neither'}; creating 'Empty' again: "
                 f"{short(again)}")
        outcome, detail = voices_usable(probe, server, must=["Keep", "Empty"])
        probe.add(3, "after the sweep", "every listed voice speaks, Keep among them", outcome, detail)
    finally:
        server.stop()


def voices_usable(probe: Probe, server: Server, must: list[str]) -> tuple[str, str]:
    with server.http() as client:
        listed = names_of(client.get("v1/audio/voices"))
        failing = [name for name in listed if speak(client, name).status_code != 200]
    missing = [name for name in must if name not in listed]
    if missing or failing:
        return "data lost", f"listed {listed}; missing {missing}; listed but failing {failing}"
    return "held", f"listed {listed}, each speaks"
