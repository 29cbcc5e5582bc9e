"""benchmarks/hardening/families/: every module there is a family the probe runs (listed in ``SHARED_ORDER`` or
``OWN_ORDER`` with a number of its own), so a family written and not listed cannot be silently left out of a run,
and issue 57's families (the voice store on a real PostgreSQL, its secrets and rows, a book's links and reuse)
are among them."""

from __future__ import annotations

import pathlib

from benchmarks.hardening import families


def test_every_family_module_is_listed_once_with_the_names_a_family_declares():
    folder = pathlib.Path(families.__file__).parent
    modules = {path.stem for path in folder.glob("*.py") if path.stem != "__init__"}
    listed = families.SHARED_ORDER + families.OWN_ORDER
    assert {module.__name__.rsplit(".", 1)[1] for module in listed} == modules
    assert len({module.FAMILY for module in listed}) == len(listed)
    for module in listed:
        assert isinstance(module.WHAT, str) and module.WHAT and callable(module.run)
        assert (module in families.SHARED_ORDER) == module.SHARED


def test_issue_57s_families_are_registered():
    names = {module.FAMILY: module.__name__.rsplit(".", 1)[1] for module in families.OWN_ORDER}
    assert {names.get(n) for n in range(63, 68)} == {"store_stalled", "store_secrets", "store_rows", "book_links",
                                                    "book_reuse"}
