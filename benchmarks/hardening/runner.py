"""The probe's runner: the server the families share, a run of the families chosen, the report and the
command line."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime
import json
import os
import pathlib
import platform
import subprocess
import sys
import tempfile
import time
from typing import Optional

from . import server as server_module
from .families import FAMILIES, OWN_ORDER, SHARED_ORDER, malformed_inputs
from .probe import OUTCOMES, Case, Probe
from .server import HERE, Server, build_model
from .visitor import speak

DESCRIPTION = "A black-box rerun of issue 21's probe: the families of inputs and faults of its numbered list, 1 to 10,\nand of issue 26's (numbered 20 + its item: 21 names, 22 unreadable voices, 25 outputs folder, 29 echoes and\nwhitespace)."


def run(probe: Probe, families: set[int]) -> None:
    """The families chosen: the shared server's (one server in shared mode with an API key), then those with
    servers of their own, then the files of family 9."""
    shared = [module for module in SHARED_ORDER if module.FAMILY in families]
    if shared:
        server = Server(probe.repo, probe.python, probe.work / "shared", probe.shared_args, "shared")
        print(f"shared server ({' '.join(probe.shared_args)}): model loaded after {server.start():.1f} s",
              flush=True)
        try:
            with server.http() as client:  # warm-up: each kind of request once
                speak(client)
                speak(client, "alloy", steps=2)
            probe.start_rss = server.rss()
            for module in shared:
                print(f"family {module.FAMILY}: {module.WHAT}", flush=True)
                probe.shared_ran.append(module.FAMILY)
                module.run(probe, server)
        finally:
            server.stop()
    for module in OWN_ORDER:
        if module.FAMILY in families:
            print(f"family {module.FAMILY}: {module.WHAT}", flush=True)
            module.run(probe)
    if malformed_inputs.FAMILY in families:
        malformed_inputs.files(probe)


# --- the report -------------------------------------------------------------------------------------------

def summary(cases: list[Case]) -> list[dict]:
    rows = []
    for family in sorted({c.family for c in cases}):
        mine = [c for c in cases if c.family == family]
        rows.append({"family": family, "what": FAMILIES[family], "cases": len(mine),
                     **{o: sum(c.outcome == o for c in mine) for o in OUTCOMES}})
    rows.append({"family": "total", "what": "", "cases": len(cases),
                 **{o: sum(c.outcome == o for c in cases) for o in OUTCOMES}})
    return rows


def markdown(cases: list[Case], title: str, notes: list[str]) -> str:
    lines = [f"## {title}", "", "| family | cases | held | broke | crashes | data lost |", "|---|---|---|---|---|---|"]
    for row in summary(cases):
        label = f"{row['family']}. {row['what']}".replace("|", "\\|") if row["family"] != "total" else "**total**"
        lines.append(f"| {label} | {row['cases']} | {row['held']} | {row['broke']} | {row['crash']} | "
                     f"{row['data lost']} |")
    for family in sorted({c.family for c in cases}):
        lines += ["", f"### {family}. {FAMILIES[family]}", "", "| case | held when | outcome | seen |",
                  "|---|---|---|---|"]
        for c in (c for c in cases if c.family == family):
            cells = [c.name, c.criterion, f"**{c.outcome}**", c.detail]
            lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    if notes:
        lines += ["", *[f"- {note}" for note in notes]]
    return "\n".join(lines) + "\n"


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=DESCRIPTION)
    parser.add_argument("--repo", type=pathlib.Path, default=HERE, help="the checkout to probe (default: this one)")
    parser.add_argument("--model", type=pathlib.Path, default=None,
                        help="the tiny fp32 folder (default: build one into the work folder; needs torch)")
    parser.add_argument("--python", default=sys.executable, help="the interpreter to run the checkout with")
    parser.add_argument("--families", default=",".join(map(str, FAMILIES)),
                        help=f"comma-separated, of {', '.join(map(str, FAMILIES))}")
    parser.add_argument("--work", type=pathlib.Path, default=None, help="scratch folder (default: a temporary one)")
    parser.add_argument("--start-timeout", type=float, default=server_module.START_TIMEOUT,
                        help="seconds a server may take to load its model (default: %(default)s)")
    parser.add_argument("--json", type=pathlib.Path, default=None, help="write the cases here")
    parser.add_argument("--markdown", type=pathlib.Path, default=None, help="write the tables here")
    return parser.parse_args(argv)


def run_probe(repo: pathlib.Path, model: Optional[pathlib.Path], families: set[int], work: pathlib.Path,
              python: str = sys.executable) -> Probe:
    repo = repo.resolve()
    model = model.resolve() if model else build_model(work, python)
    probe = Probe(repo, model, work, python)
    run(probe, families)
    return probe


def main(argv=None) -> int:
    args = parse_args(argv)
    server_module.START_TIMEOUT = args.start_timeout
    families = {int(f) for f in args.families.split(",") if f.strip()}
    assert families <= set(FAMILIES), f"families are {sorted(FAMILIES)}, not {sorted(families - set(FAMILIES))}"
    with contextlib.ExitStack() as stack:
        work = args.work or pathlib.Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="hardening-probe-")))
        work.mkdir(parents=True, exist_ok=True)
        started = time.monotonic()
        probe = run_probe(args.repo, args.model, families, work, args.python)
        seconds = time.monotonic() - started
    commit = subprocess.run(["git", "-C", str(args.repo), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    title = f"hardening probe on {args.repo.resolve().name} ({commit}), {seconds / 60:.1f} min"
    notes = [f"server flags: {' '.join(probe.flags_used)}" +
             (f"; not in this checkout: {' '.join(probe.flags_missing)}" if probe.flags_missing else ""),
             *probe.notes]
    text = markdown(probe.cases, title, notes)
    print("\n" + text)
    if args.markdown:
        args.markdown.write_text(text)
    if args.json:
        args.json.write_text(json.dumps({
            "repo": str(args.repo.resolve()), "commit": commit, "seconds": round(seconds, 1),
            "when": datetime.datetime.now().isoformat(timespec="seconds"), "machine": platform.platform(),
            "cpus": os.cpu_count(), "flags": probe.flags_used, "flags_missing": probe.flags_missing,
            "notes": probe.notes, "summary": summary(probe.cases),
            "cases": [dataclasses.asdict(c) for c in probe.cases]}, indent=1))
    return 0
