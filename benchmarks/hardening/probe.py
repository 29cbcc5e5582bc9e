"""One run of the probe: its cases, the flags of the checkout under test, and what the families share."""

from __future__ import annotations

import dataclasses
import pathlib
import subprocess
from typing import Callable

from .server import KEY, Server, environment, supported_flags
from .visitor import speech_wav

OUTCOMES = ("held", "broke", "crash", "data lost")


@dataclasses.dataclass
class Case:
    family: int
    name: str
    criterion: str
    outcome: str
    detail: str = ""


class Probe:
    """The checkout under test, its model and work folder, and the cases seen so far (``add``, ``guarded``)."""

    def __init__(self, repo: pathlib.Path, model: pathlib.Path, work: pathlib.Path, python: str):
        self.repo, self.model, self.work, self.python = repo, model, work, python
        self.cases: list[Case] = []
        self.notes: list[str] = []
        # --api-key-scope v1: the shared server's Gradio families call the Gradio API without a login (the
        # default scope is all since issue 43; family 35 probes that default on a server of its own)
        wanted = ["--model", "--precision", "--shared", "--api-key", "--api-key-scope", "--offline"]
        self.flags_used, self.flags_missing = supported_flags(repo, python, wanted)
        args = {"--model": [str(model)], "--precision": ["fp32"], "--shared": [], "--api-key": [KEY],
                "--api-key-scope": ["v1"], "--offline": []}
        self.shared_args = [part for flag in self.flags_used for part in [flag, *args[flag]]]
        self.wav = speech_wav()
        self.npz_source = work / "source.npz"  # a voice file made in family 9 for its .npz cases
        self.start_rss = 0
        self.shared_ran: list[int] = []

    def add(self, family: int, name: str, criterion: str, outcome: str, detail: str = "") -> None:
        assert outcome in OUTCOMES, outcome
        self.cases.append(Case(family, name, criterion, outcome, " ".join(detail.split())[:400]))
        print(f"  [{family}] {name}: {outcome.upper()}  {detail[:160]}", flush=True)

    def guarded(self, server: Server, family: int, name: str, criterion: str,
                check: Callable[[], tuple[str, str]]) -> None:
        """Run one case; a dead server is a crash (and is restarted for the cases after it)."""
        try:
            outcome, detail = check()
        except Exception as exc:  # the probe's own request failed: judge by the server, not the exception
            outcome, detail = ("broke", f"{type(exc).__name__}: {exc}")
        if server is not None and not server.alive():
            outcome, detail = "crash", f"exit {server.process.returncode}; {detail}"
            server.log.close()
            server.start()
        self.add(family, name, criterion, outcome, detail)

    def cli(self, *args: str, cwd: pathlib.Path) -> subprocess.CompletedProcess:
        return subprocess.run(["nice", "-n", "19", self.python, "-m", "omnivoice_demo", *args], capture_output=True,
                              text=True, cwd=cwd, env=environment(self.repo, self.work / "cli"), timeout=300)
