"""Under CI a PostgreSQL or Ray test that is skipped fails instead (issue 57: a CI that cannot start them must
say so by failing, not pass without them).

A test is one of them when it asks for the ``pg_server`` fixture (``tests/conftest.py``: a real PostgreSQL) or
its skip's reason names PostgreSQL, psycopg, initdb/pg_ctl or Ray (``pytest.importorskip("ray")`` says
``could not import 'ray'``).  Required when ``OMNIVOICE_REQUIRE_SERVICES`` is ``1`` (``.ci/run`` sets it), or,
with that variable unset, when ``CI`` is set to anything but ``0``/``false`` (as CI services set it); a
developer's machine without PostgreSQL still skips them, saying why.  ``OMNIVOICE_REQUIRE_SERVICES=0`` turns
the check off.  Other skips (no Chromium, no npm, no GPU) are left as they are.

``tests/conftest.py`` takes these hooks in; ``pytest -p tests.support.ci_skips`` does for another folder
(``tests/test_ci_skips.py`` checks them so).
"""

from __future__ import annotations

import os
import re

import pytest

#: a skip's reason that names one of the services CI must run
SERVICE_REASON = re.compile(r"\b(?:postgres(?:ql)?|psycopg(?:_pool)?|initdb|pg_ctl|ray(?:\.serve)?)\b",
                            re.IGNORECASE)
#: the fixtures that start one (a test asking for one is that service's)
SERVICE_FIXTURES = frozenset({"pg_server"})


def services_required() -> bool:
    """Whether a skipped PostgreSQL or Ray test fails this run (see the module docstring)."""
    explicit = os.environ.get("OMNIVOICE_REQUIRE_SERVICES")
    if explicit is not None and explicit.strip():
        return explicit.strip().lower() not in ("0", "false", "no")
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def _reason(report) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:   # (path, line, "Skipped: reason")
        return str(longrepr[2])
    return str(longrepr or "")


def _is_service(fixtures, reason: str) -> bool:
    return bool(SERVICE_FIXTURES.intersection(fixtures)) or SERVICE_REASON.search(reason) is not None


def _fail(report, reason: str) -> None:
    report.outcome = "failed"
    report.longrepr = (f"a PostgreSQL or Ray test was skipped where the run requires them (CI, or "
                       f"OMNIVOICE_REQUIRE_SERVICES=1): {reason}. Install what it names (scripts/setup_dev.sh "
                       "installs postgresql; Ray comes with requirements-dev.txt), or run with "
                       "OMNIVOICE_REQUIRE_SERVICES=0 to let it skip.")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.skipped and not hasattr(report, "wasxfail") and services_required():
        reason = _reason(report)
        if _is_service(getattr(item, "fixturenames", ()), reason):
            _fail(report, reason)


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    """A module skipped whole at collection (a module-level ``importorskip("ray")``) fails the same way."""
    outcome = yield
    report = outcome.get_result()
    if report.skipped and services_required():
        reason = _reason(report)
        if _is_service((), reason):
            _fail(report, reason)
