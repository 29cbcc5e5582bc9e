"""Under CI a skipped PostgreSQL or Ray test fails the run (issue 57; ``tests/support/ci_skips.py``): a pytest run
of planted tests, with ``CI=true``, with ``OMNIVOICE_REQUIRE_SERVICES`` as ``.ci/run`` sets it and without
either, shows which skips fail.  Other skips (no Chromium) and expected failures are left alone."""

from __future__ import annotations

import os
import subprocess
import sys
from xml.etree import ElementTree

import pytest

from tests.support.app_server import ROOT

PLANTED = '''
import pytest

@pytest.fixture
def pg_server():
    pytest.skip("no server here")

def test_postgres(pg_server):
    pass

def test_psycopg_missing():
    pytest.importorskip("psycopg_not_here", reason="psycopg and psycopg_pool are not installed")

def test_ray_missing():
    pytest.skip("could not import 'ray': No module named 'ray'")

def test_no_browser():
    pytest.skip("no Chromium here")

@pytest.mark.xfail(reason="a known Ray issue")
def test_expected_failure():
    assert False

def test_passes():
    pass
'''
MODULE_SKIPPED = '''
import pytest

pytest.importorskip("ray_serve_not_here", reason="Ray Serve is not installed")
'''


def run(folder, test_file: str, **environment) -> dict[str, tuple[str, str]]:
    """``{test name: (outcome, message)}`` of a pytest run of ``test_file`` in ``folder`` (its JUnit XML; a
    module that failed at collection is named by its file)."""
    env = {key: value for key, value in os.environ.items() if key not in ("CI", "OMNIVOICE_REQUIRE_SERVICES")}
    env.update(environment, PYTHONPATH=str(ROOT))
    report = folder / "report.xml"
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "tests.support.ci_skips",
                    f"--junitxml={report}", test_file], cwd=folder, env=env, capture_output=True, text=True,
                   timeout=120)
    found = {}
    for case in ElementTree.parse(report).getroot().iter("testcase"):
        outcome = next((child for child in case if child.tag in ("failure", "error", "skipped")), None)
        found[case.get("name") or test_file] = ("passed", "") if outcome is None else \
            (outcome.tag, (outcome.get("message") or "") + (outcome.text or ""))
    return found


@pytest.mark.parametrize("environment", [{"CI": "true"}, {"OMNIVOICE_REQUIRE_SERVICES": "1"}])
def test_a_skipped_service_test_fails_where_services_are_required(tmp_path, environment):
    (tmp_path / "test_planted.py").write_text(PLANTED)
    found = run(tmp_path, "test_planted.py", **environment)
    for name in ("test_postgres", "test_psycopg_missing", "test_ray_missing"):
        outcome, message = found[name]
        assert outcome in ("failure", "error") and "a PostgreSQL or Ray test was skipped" in message, (name, found)
    assert found["test_no_browser"][0] == "skipped" and found["test_passes"][0] == "passed", found
    assert found["test_expected_failure"][0] == "skipped", found   # an xfail, as JUnit writes it
    (tmp_path / "test_module.py").write_text(MODULE_SKIPPED)
    module = run(tmp_path, "test_module.py", **environment)
    assert [outcome for outcome, _ in module.values()] == ["error"], module


@pytest.mark.parametrize("environment", [{}, {"CI": "true", "OMNIVOICE_REQUIRE_SERVICES": "0"}, {"CI": "false"}])
def test_elsewhere_they_skip_saying_why(tmp_path, environment):
    (tmp_path / "test_planted.py").write_text(PLANTED)
    found = run(tmp_path, "test_planted.py", **environment)
    assert sorted(outcome for outcome, _ in found.values()) == ["passed"] + ["skipped"] * 5, found
    assert "could not import 'ray'" in found["test_ray_missing"][1]
    (tmp_path / "test_module.py").write_text(MODULE_SKIPPED)
    assert [outcome for outcome, _ in run(tmp_path, "test_module.py", **environment).values()] == ["skipped"]
