"""The Benchmark tab's quality run: its exact row is omnivoice eval's exact configuration (the fp32 backbone of
the active folder), named by its folder, whatever backbone the active model runs."""

from __future__ import annotations

import pytest

from omnivoice_demo.engine.loop import OmniVoiceEngine
from omnivoice_demo.eval import quick
from omnivoice_demo.eval.runner import EvalProgress


def report_of(engines: dict, exact_label: str, monkeypatch):
    opened = []
    real = quick.exact_engine

    def recording(engine):
        made = real(engine)
        opened.append(made)
        return made

    monkeypatch.setattr(quick, "exact_engine", recording)
    events = quick.quality_events(engines, exact_label, ["fast"], 1, False)
    reports = [e.report for e in events if isinstance(e, EvalProgress) and e.report is not None]
    return reports[-1], opened


@pytest.mark.slow  # the int4 folder is a slow fixture
def test_an_int4_active_model_is_a_candidate_and_the_exact_row_runs_fp32(tiny_int4_folder, monkeypatch):
    label = "int4 · cpu · tiny"
    active = OmniVoiceEngine(tiny_int4_folder, backbone="int4", calibrate=False)
    report, opened = report_of({label: active}, label, monkeypatch)
    assert len(opened) == 1 and opened[0] is not active
    assert opened[0].backbone_choice["choice"] == "fp32" and opened[0].folder == active.folder
    rows = {row["configuration"]: row for row in report.rows}
    exact = report.rows[0]
    assert exact["configuration"] == "exact"
    assert "backbone fp32" in exact["describe"] and f"folder {tiny_int4_folder.name}" in exact["describe"]
    assert "fast" in rows
    (as_loaded,) = [row for name, row in rows.items() if name not in ("exact", "fast")]
    assert "backbone int4" in as_loaded["describe"]  # the active model as it runs is compared, not called exact


def test_an_fp32_active_model_is_the_exact_row_itself(tiny_fp32_folder, monkeypatch):
    label = "fp32 · cpu · tiny"
    active = OmniVoiceEngine(tiny_fp32_folder, calibrate=False)
    report, opened = report_of({label: active}, label, monkeypatch)
    assert opened == [active]  # no second engine of the same model
    assert [row["configuration"] for row in report.rows] == ["exact", "fast"]
    assert f"folder {tiny_fp32_folder.name}" in report.rows[0]["describe"]
