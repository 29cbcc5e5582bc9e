"""``omnivoice book`` hands the batch runner one plan built from the book's settings and joins its chapters from
what the runner hands back: checked by what the batch then makes (each sentence's sidecar, the M4B, what a rerun
reuses), not by a stand-in runner that records the plan (issue 60)."""

from __future__ import annotations

import json


from omnivoice_demo.batch.results import NOT_RUN, BatchResult, ItemResult, Summary
from omnivoice_demo.batch.store import OutputFolder


def book_command(source, model, out, *flags) -> dict:
    """``omnivoice book`` on the tiny model, in this process; its last line's figures."""
    import contextlib
    import io

    from omnivoice_demo.cli.main import main

    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        code = main(["book", str(source), "--model", str(model), "--output", str(out), "--no-guard", "--no-progress",
                     "--backbone", "fp32", "--precision", "fp32", "--offline", "--workers", "1", *flags])
    assert code == 0, printed.getvalue()
    return json.loads(printed.getvalue().splitlines()[-1])


def sidecars(out) -> list[dict]:
    """What the batch made of the book's sentences: each sentence's sidecar, in the book's order."""
    records = [json.loads(path.read_text()) for path in (out / "sentences").glob("*.json")]
    return sorted((r for r in records if "status" in r), key=lambda r: r["line"])


def test_the_book_commands_flags_decide_what_the_batch_makes(tiny_fp32_folder, tmp_path):
    """The book's flags, followed to what the batch wrote: every sentence (the heading too) made with the seed,
    the steps, the model and the backbone asked for, as FLAC, on the threads asked for, and the M4B joined."""
    (tmp_path / "b.txt").write_text("Chapter 1\n\nCalm sea. The storm came.\n")
    made = book_command(tmp_path / "b.txt", tiny_fp32_folder, tmp_path / "out", "--num-step", "2", "--seed", "5",
                        "--threads", "1")
    records = sidecars(tmp_path / "out")
    assert [r["text"] for r in records] == ["Chapter 1", "Calm sea.", "The storm came."]
    assert made["made"] == 3 and all(r["status"] == "done" for r in records)
    assert {r["seed"] for r in records} == {5} and {r["config"]["num_step"] for r in records} == {2}
    assert {r["format"] for r in records} == {"flac"} and {r["threads"] for r in records} == {1}
    assert all((tmp_path / "out" / "sentences" / r["audio"]).suffix == ".flac" for r in records)
    assert {r["render"]["compute"] for r in records} == {"fp32 on cpu"} and {r["render"]["format"] for r in records} == {
        "flac"}
    assert list((tmp_path / "out").glob("*.m4b"))


def test_a_setting_that_decides_the_audio_remakes_the_sentences_and_one_that_does_not_reuses_them(
        tiny_fp32_folder, tmp_path):
    """The same book run again: with another thread count (the audio is the same) every sentence is reused;
    with another seed or step count every sentence is made again, and the batch's records say the new setting."""
    (tmp_path / "b.txt").write_text("Chapter 1\n\nCalm sea. The storm came.\n")
    out = tmp_path / "out"

    seen: set = set()

    def run(*flags) -> tuple[dict, list[dict]]:
        """The run's figures and the records it added (sentences made with other settings are other items)."""
        figures = book_command(tmp_path / "b.txt", tiny_fp32_folder, out, *flags)
        added = [r for r in sidecars(out) if r["id"] not in seen]
        seen.update(r["id"] for r in added)
        return figures, added

    first, made = run("--num-step", "2", "--seed", "1")
    assert first["made"] == 3 and len(made) == 3
    again, added = run("--num-step", "2", "--seed", "1", "--threads", "1")
    assert (again["made"], again["reused"], added) == (0, 3, [])
    reseeded, remade = run("--num-step", "2", "--seed", "2")
    assert (reseeded["made"], reseeded["reused"]) == (3, 0) and {r["seed"] for r in remade} == {2}
    assert not {r["key"] for r in made} & {r["key"] for r in remade} and len(remade) == 3
    slower, remade = run("--num-step", "3", "--seed", "2")
    assert slower["made"] == 3 and {r["config"]["num_step"] for r in remade} == {3} and len(remade) == 3


def test_a_result_reads_each_record_once_until_it_is_discarded(tmp_path, monkeypatch):
    """A book's end asks each sentence's record for its words, its checks and its silent takes: ``record`` reads
    the sidecar once and keeps it; ``discard`` removes the files and forgets what was kept."""
    folder = OutputFolder(str(tmp_path / "sentences")).create()
    audio = folder.audio_path("s1", "flac")
    audio.write_bytes(b"audio")
    folder.sidecar_path("s1").write_text(json.dumps({"status": "done", "words": [["Calm", 0.0, 0.4]]}))
    reads: list[str] = []
    read_sidecar = OutputFolder.read_sidecar
    monkeypatch.setattr(OutputFolder, "read_sidecar", lambda self, item_id: reads.append(item_id) or read_sidecar(
        self, item_id))
    result = BatchResult(Summary(total=2), folder, {"s1": ItemResult("s1", "made", audio), "s2": ItemResult("s2", NOT_RUN)})
    assert result.record("s1")["words"] == [["Calm", 0.0, 0.4]]
    assert result.record("s1").get("checks", []) == [] and result.record("s2") == {} and result.record("s2") == {}
    assert reads == ["s1", "s2"]
    result.discard("s1")
    assert not audio.exists() and not folder.sidecar_path("s1").exists()
    assert result.record("s1") == {} and reads == ["s1", "s2", "s1"]   # read again: gone now
