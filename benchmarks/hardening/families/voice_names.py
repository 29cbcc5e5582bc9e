"""Family 21 of the hardening probe:
voice names that differ only in case, or look alike."""

from __future__ import annotations

import re
import shutil

import httpx

from ..probe import Probe
from ..server import Server
from ..visitor import clear_4xx, create_voice, names_of, short, speak, tail

FAMILY = 21
WHAT = "voice names that differ only in case, or look alike"
#: run on the shared server (``run(probe, server)``)
SHARED = True


def run(probe: Probe, server: Server) -> None:
    def saved(client: httpx.Client) -> list[str]:
        return names_of(client.get("v1/audio/voices"))

    def clear(client: httpx.Client) -> None:
        for name in saved(client):
            client.delete(f"v1/audio/voices/{name}")

    def case_pair() -> tuple[str, str]:
        with server.http() as client:
            clear(client)
            made = [create_voice(client, name, probe.wav) for name in ("Anna", "anna")]
            renamed = client.patch("v1/audio/voices/Anna", json={"name": "anna"})
            listed = saved(client)
            clear(client)
        kept = sum(r.status_code == 201 for r in made)
        detail = f"create Anna {short(made[0])}; create anna {short(made[1])}; rename {short(renamed)}; " \
                 f"listed {listed}"
        if len(listed) < kept:
            return "data lost", detail
        held = all(r.status_code < 500 for r in [*made, renamed]) and (kept == 1 or renamed.status_code >= 400)
        return ("held" if held else "broke"), detail
    probe.guarded(server, 21, "HTTP: create Anna and anna, rename Anna to anna",
                 "no voice is lost: the second name or the rename is refused with a 4xx", case_pair)

    def case_only() -> tuple[str, str]:
        with server.http() as client:
            clear(client)
            create_voice(client, "Bert", probe.wav)
            renamed = client.patch("v1/audio/voices/Bert", json={"name": "bert"})
            listed = saved(client)
            spoken = speak(client, "bert")
            clear(client)
        held = renamed.status_code == 200 and listed == ["bert"] and spoken.status_code == 200
        return ("held" if held else "data lost" if not listed else "broke"), \
            f"rename {short(renamed)}; listed {listed}; speak {short(spoken)}"
    probe.guarded(server, 21, "HTTP: rename Bert to bert (only its case)",
                 "renamed: bert is listed, speaks, and Bert is gone", case_only)

    look_alikes = [("Carla", "C\u0430rla", "a Cyrillic \u0430"),
                   ("Carla", "\uff23\uff41\uff52\uff4c\uff41", "full-width letters"),
                   ("Zo\u00eb", "Zoe\u0308", "a decomposed accent"),
                   ("Carla", "CARLA", "capitals")]
    for existing, asked, what in look_alikes:
        def look_alike(existing=existing, asked=asked) -> tuple[str, str]:
            with server.http() as client:
                clear(client)
                create_voice(client, existing, probe.wav)
                made = create_voice(client, asked, probe.wav)
                listed = saved(client)
                clear(client)
            held = clear_4xx(made, re.escape(existing)) and len(listed) == 1
            return ("held" if held else "broke"), f"{short(made)}; listed {listed}"
        probe.guarded(server, 21, f"HTTP: create {ascii(asked)} ({what}) beside {ascii(existing)}",
                     "refused with a 4xx naming the voice it collides with; one voice listed", look_alike)

    def rename_look_alike() -> tuple[str, str]:
        with server.http() as client:
            clear(client)
            create_voice(client, "Dora", probe.wav)
            create_voice(client, "Dana", probe.wav)
            renamed = client.patch("v1/audio/voices/Dana", json={"name": "D\u043era"})
            listed = saved(client)
            clear(client)
        held = clear_4xx(renamed, "Dora") and sorted(listed) == ["Dana", "Dora"]
        return ("held" if held else "data lost" if len(listed) < 2 else "broke"), \
            f"{short(renamed)}; listed {listed}"
    probe.guarded(server, 21, "HTTP: rename Dana to D\\u043era (a Cyrillic \\u043e) beside Dora",
                 "refused with a 4xx naming Dora; both voices kept", rename_look_alike)

    with server.http() as client:  # a voice file for the CLI cases (and family 22)
        create_voice(client, "NameSource", probe.wav)
    found = list((probe.work / "shared" / "data").rglob("NameSource.npz"))
    if not found:
        probe.notes.append("family 21 CLI cases: not run (no voice file was made)")
        return
    shutil.copy(found[0], probe.work / "name-source.npz")
    folder = probe.work / "cli-names"

    def cli_pair() -> tuple[str, str]:
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        runs = [probe.cli("voices", "--folder", str(folder), "import", str(probe.work / "name-source.npz"),
                         "--name", name, cwd=probe.work) for name in ("Anna", "anna")]
        runs.append(probe.cli("voices", "--folder", str(folder), "rename", "Anna", "anna", cwd=probe.work))
        kept = sum(r.returncode == 0 for r in runs[:2])
        files = sorted(p.name for p in folder.glob("*.npz"))
        detail = "; ".join(f"exit {r.returncode}: {tail(r.stderr + r.stdout, 100)}" for r in runs) + f"; {files}"
        if len(files) < kept:
            return "data lost", detail
        held = all("internal" not in (r.stderr + r.stdout).lower() for r in runs) and \
            (kept == 1 or runs[2].returncode != 0)
        return ("held" if held else "broke"), detail
    probe.guarded(None, 21, "CLI: import as Anna and as anna, rename Anna to anna",
                 "no voice file is lost: the second import or the rename is refused", cli_pair)

    def cli_case_only() -> tuple[str, str]:
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        probe.cli("voices", "--folder", str(folder), "import", str(probe.work / "name-source.npz"), "--name", "Bert",
                 cwd=probe.work)
        done = probe.cli("voices", "--folder", str(folder), "rename", "Bert", "bert", cwd=probe.work)
        files = sorted(p.name for p in folder.glob("*.npz"))
        held = done.returncode == 0 and files == ["bert.npz"]
        return ("held" if held else "data lost" if not files else "broke"), \
            f"exit {done.returncode}: {tail(done.stderr + done.stdout)}; {files}"
    probe.guarded(None, 21, "CLI: rename Bert to bert (only its case)", "exit 0; bert.npz is the one file",
                 cli_case_only)
