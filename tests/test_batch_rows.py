"""Batch rows and what they are run with: the limit flags apply, and a row that cannot be read or run fails alone
while the others are made (what decides reuse, the render key: tests/test_render_key.py and test_book_reuse.py)."""

from __future__ import annotations

import re

from omnivoice_demo.settings.limits import Limits


# --- the limits -------------------------------------------------------------------------

def test_batch_honours_the_limit_flags():
    from omnivoice_demo.cli.main import build_parser
    from omnivoice_demo.batch.worker import ModelSpec

    parse = build_parser().parse_args
    plain = ModelSpec.from_arguments(parse(["batch", "--input", "x.jsonl", "--output", "out"])).limits
    assert plain == Limits.local()      # a batch's default: one's own machines
    flagged = ModelSpec.from_arguments(parse(["batch", "--input", "x.jsonl", "--output", "out",
                                              "--max-text-chars", "300"])).limits
    assert flagged.max_text_chars == 300


# --- a bad row fails alone --------------------------------------------------------------------------------

def test_bad_batch_rows_fail_alone_and_the_good_ones_are_made(tiny_fp32_folder, tmp_path):
    import json
    import subprocess

    from tests.test_batch import batch_command

    source = tmp_path / "items.jsonl"
    source.write_text("\n".join([
        '{"id": "good", "text": "Fine."}',
        '{"id": "lone", "text": "Half a character: \\ud800."}',   # the JSON escape of a lone surrogate
        '{"id": "mem", "text": "Hello.", "voice": "/proc/self/mem"}',
        '[1, 2, 3]',
        '{"id": "klingon", "text": "Fine words.", "language": "Klingonish"}',  # refused by the engine's checks
        '{"id": "also-good", "text": "Fine too."}',
    ]) + "\n")
    out = tmp_path / "out"
    done = subprocess.run(batch_command(tiny_fp32_folder, source, out), capture_output=True, text=True, timeout=300)
    assert done.returncode == 3, done.stdout + done.stderr  # before: 1, "internal error", nothing made
    assert "Traceback" not in done.stderr + done.stdout and "internal error" not in done.stderr + done.stdout
    assert sorted(p.name for p in out.glob("*.wav")) == ["also-good.wav", "good.wav"]
    summary = done.stdout
    assert "6 items: 2 done, 0 skipped (done before), 4 failed" in summary, summary
    failed = dict(re.findall(r"^failed (.+?): (.*)$", summary, re.MULTILINE))
    assert "lone surrogate" in failed["line 2"] and "/proc/self/mem" in failed["line 3"]
    assert "JSON object" in failed["line 4"] and "Klingonish" in failed["klingon"]
    sidecar = json.loads((out / "klingon.json").read_text())
    assert sidecar["status"] == "failed" and "Klingonish" in sidecar["error"]

    again = subprocess.run(batch_command(tiny_fp32_folder, source, out), capture_output=True, text=True, timeout=300)
    assert again.returncode == 3 and "2 skipped (done before), 4 failed" in again.stdout, again.stdout


def test_a_row_with_bytes_that_are_not_utf8_or_nested_too_deeply_fails_alone(tmp_path):
    from omnivoice_demo.batch.items import read_batch

    rows = tmp_path / "odd.jsonl"
    rows.write_bytes(b'{"id": "ok", "text": "Fine."}\n{"id": "bytes", "text": "caf\xe9"}\n'
                     + b"[" * 100_000 + b"]" * 100_000 + b"\n")
    items, problems = read_batch(rows)   # before: UnicodeDecodeError / RecursionError, the whole run gone
    assert [item.id for item in items] == ["ok"]
    assert [line for line, _ in problems] == [2, 3]
    assert "not UTF-8" in problems[0][1] and "nested too deeply" in problems[1][1]
    lines = tmp_path / "odd.txt"
    lines.write_bytes(b"Fine line.\ncaf\xe9 line\n")
    items, problems = read_batch(lines)
    assert len(items) == 1 and problems[0][0] == 2 and "not valid Unicode" in problems[0][1]
