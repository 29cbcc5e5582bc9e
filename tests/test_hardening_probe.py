"""benchmarks/hardening_probe.py: the probe's bookkeeping, and two of its families against this checkout.

The families run as the probe runs them (a server in a subprocess, requests over loopback, the CLI), so a
regression of the checkout or a probe that misjudges a case fails here."""

from __future__ import annotations

import json

import httpx
import pytest

from benchmarks import hardening_probe as probe


def test_the_summary_counts_each_outcome_per_family_and_in_total():
    cases = [probe.Case(1, "a", "", "held"), probe.Case(1, "b", "", "broke"), probe.Case(8, "c", "", "crash"),
             probe.Case(3, "d", "", "data lost"), probe.Case(3, "e", "", "held")]
    rows = {row["family"]: row for row in probe.summary(cases)}
    assert rows[1] == {"family": 1, "what": probe.FAMILIES[1], "cases": 2, "held": 1, "broke": 1, "crash": 0,
                       "data lost": 0}
    assert rows[3]["data lost"] == 1 and rows[8]["crash"] == 1
    assert {k: rows["total"][k] for k in ("cases", "held", "broke", "crash", "data lost")} == \
        {"cases": 5, "held": 2, "broke": 1, "crash": 1, "data lost": 1}
    table = probe.markdown(cases, "t", [])
    assert "| **total** | 5 | 2 | 1 | 1 | 1 |" in table and "### 3." in table


def _response(status: int, message: str) -> httpx.Response:
    return httpx.Response(status, content=json.dumps({"error": {"message": message}}).encode(),
                          headers={"content-type": "application/json"})


def test_a_clear_4xx_is_a_4xx_with_a_message_that_names_the_problem():
    assert probe.clear_4xx(_response(413, "The transcript is 9999 characters (max_text_chars)."), "max_text_chars")
    assert not probe.clear_4xx(_response(500, "Internal error; the details are in the server log."))
    assert not probe.clear_4xx(_response(400, "Internal error"))
    assert not probe.clear_4xx(_response(400, ""))
    assert not probe.clear_4xx(_response(400, "Bad preset."), "transcript")


@pytest.mark.slow
def test_the_probe_finds_this_checkout_holding_large_bodies_and_malformed_inputs(tiny_fp32_folder, tmp_path):
    """Families 5, 9 and 37 (about a minute: one shared server, five CLI runs): every case held, and all of them
    ran (37: the bodies of Gradio's own routes, issue 49)."""
    ran = probe.run_probe(probe.HERE, tiny_fp32_folder, {5, 9, 37}, tmp_path)
    assert {c.family for c in ran.cases} == {5, 9, 37}
    assert len([c for c in ran.cases if c.family == 5]) == 2
    assert len([c for c in ran.cases if c.family == 37]) >= 35
    assert len([c for c in ran.cases if c.family == 9]) >= 16, ran.notes
    not_held = [(c.name, c.outcome, c.detail) for c in ran.cases if c.outcome != "held"]
    assert not not_held, not_held


@pytest.mark.slow
def test_the_probe_finds_this_checkout_holding_hostile_books(tiny_fp32_folder, tmp_path):
    """Family 61 (issue 49's books, about a minute: CLI runs, one book made to the end): every case held."""
    ran = probe.run_probe(probe.HERE, tiny_fp32_folder, {61}, tmp_path)
    assert len(ran.cases) == 7 and {c.family for c in ran.cases} == {61}
    not_held = [(c.name, c.outcome, c.detail) for c in ran.cases if c.outcome != "held"]
    assert not not_held, not_held
