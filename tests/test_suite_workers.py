"""The suite on two workers (scripts/test.sh: pytest-xdist, ``-n 2 --dist loadgroup``): every test is grouped with its
module, and every module that starts a local Ray cluster is in the one Ray group (tests/conftest.py)."""

from __future__ import annotations

import pathlib
import re

from tests.conftest import RAY_MODULES

TESTS = pathlib.Path(__file__).resolve().parent

#: what starts or joins a local Ray cluster in a test module: ray.init, the CLI's --ray, serve --replicas
STARTS_RAY = re.compile(r"ray\.init\(|[\"']--ray[\"']|[\"']--replicas[\"']")


def test_each_test_is_grouped_with_its_module(request):
    for item in request.session.items:
        marks = [mark.args[0] for mark in item.iter_markers("xdist_group")]
        module = item.module.__name__
        assert marks == ["ray" if module in RAY_MODULES else module], (item.nodeid, marks)


def test_every_module_that_starts_ray_shares_the_ray_group():
    starting = {f"tests.{path.stem}" for path in TESTS.glob("test_*.py")
                if path.name != pathlib.Path(__file__).name and STARTS_RAY.search(path.read_text())}
    assert starting, "no module starts Ray: the pattern no longer finds them"
    assert starting <= RAY_MODULES, sorted(starting - RAY_MODULES)


def test_the_test_script_runs_two_workers_by_group():
    script = (TESTS.parent / "scripts" / "test.sh").read_text()
    assert '-n "$workers" --dist loadgroup' in script and "OMNIVOICE_TEST_WORKERS:-2" in script
