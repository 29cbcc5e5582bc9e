"""A CSV cell over Python's ``csv`` field limit (131,072 characters) fails its own row with a clear message and
the rows after it are read (issue 57: ``omnivoice batch`` ended with a traceback and every row was lost, where a
JSONL line as bad failed alone), also when the cell is quoted over several lines with ``""`` inside."""

from __future__ import annotations

import csv
import subprocess
import sys

from omnivoice_demo.batch.items import read_batch

BIG = "x" * (csv.field_size_limit() + 10)


def test_a_cell_over_the_field_limit_fails_its_row_alone(tmp_path):
    source = tmp_path / "items.csv"
    source.write_text(f'id,text\na,First.\nb,"{BIG}\nstill b, ""quoted"" {BIG}\nend of b"\nc,Third.\n'
                      f'd,{BIG}\ne,"Fifth, quoted."\n')
    items, problems = read_batch(source)
    assert [(item.id, item.line, item.text) for item in items] == [("a", 2, "First."), ("c", 6, "Third."),
                                                                   ("e", 8, "Fifth, quoted.")]
    assert [line for line, _ in problems] == [3, 7]
    for _, message in problems:
        assert "over 131,072 characters" in message and "shorten it or split it" in message


def test_batch_says_the_row_and_goes_on(tiny_fp32_folder, tmp_path):
    """The command line: a line for the row, no traceback, the others checked (and none of them run: a file
    with a bad row is refused whole before any work, as for JSONL)."""
    source = tmp_path / "items.csv"
    source.write_text(f"id,text\na,First.\nb,{BIG}\nc,Third.\n")
    done = subprocess.run([sys.executable, "-m", "omnivoice_demo", "batch", "--model", str(tiny_fp32_folder),
                           "--input", str(source), "--output", str(tmp_path / "out")],
                          capture_output=True, text=True, timeout=300)
    said = done.stdout + done.stderr
    assert done.returncode != 0 and "Traceback" not in said, said
    assert "line 3" in said and "over 131,072 characters" in said, said
