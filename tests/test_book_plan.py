"""``omnivoice book`` hands the batch runner one plan (``batch.plan.BatchPlan``) built from the book's settings, and
joins its chapters from what the runner hands back (``batch.results.BatchResult``): no setting of the book is
threaded through the batch's internals one by one (issue 50, "the house, round three")."""

from __future__ import annotations

import dataclasses
import json

import pytest

from omnivoice_demo.batch.plan import BatchPlan, Workers
from omnivoice_demo.batch.results import NOT_RUN, BatchResult, ItemResult, Summary
from omnivoice_demo.batch.store import OutputFolder
from omnivoice_demo.book import project
from omnivoice_demo.book.contents import Book, Chapter

BOOK = Book(title="Harbour", author=None, language="en",
            chapters=(Chapter(title="One", paragraphs=("Calm sea. The storm came.",)),))


@pytest.fixture
def handed(monkeypatch) -> list:
    """Every plan the book hands ``run_batch``; the run makes nothing (as a paused run), so nothing is joined."""
    plans: list = []

    def run_batch(plan, *, backend=None, progress=True):
        plans.append((plan, backend))
        return BatchResult(Summary(total=len(plan.items)), OutputFolder(plan.job.output),
                           {item.id: ItemResult(item.id, NOT_RUN) for item in plan.items})

    monkeypatch.setattr(project, "run_batch", run_batch)
    return plans


def test_the_book_command_hands_the_runner_one_plan_from_its_flags(handed, tmp_path, capsys):
    from omnivoice_demo.cli.main import main

    (tmp_path / "b.txt").write_text("Chapter 1\n\nCalm sea. The storm came.\n")
    code = main(["book", str(tmp_path / "b.txt"), "--model", str(tmp_path / "model"), "--output",
                 str(tmp_path / "out"), "--num-step", "2", "--seed", "5", "--no-guard", "--no-progress",
                 "--backbone", "fp32", "--precision", "fp32", "--offline", "--workers", "2", "--threads", "3"])
    assert code == 0 and json.loads(capsys.readouterr().out.splitlines()[-1])["made"] == 0
    [(plan, backend)] = handed
    assert isinstance(plan, BatchPlan) and backend is None   # the runner opens what the plan names
    assert [item.text for item in plan.items] == ["Chapter 1", "Calm sea.", "The storm came."]
    assert {item.config.seed for item in plan.items} == {5} and {item.config.num_step for item in plan.items} == {2}
    assert (plan.model.model, plan.model.precision, plan.model.offline, plan.model.backbone) == (
        str(tmp_path / "model"), "fp32", True, "fp32")
    assert plan.workers == Workers(count=2, threads=3)
    assert plan.job.output == str(tmp_path / "out" / "sentences") and plan.job.audio_format == "flac"
    assert plan.job.silence_for_no_audio == project.SILENT_SENTENCE and plan.retry_failed


def test_a_setting_of_the_book_changes_the_plan_field_its_render_key_reads(handed, tiny_fp32_folder, tmp_path):
    """The runner keys each item on what the engine plans of it (``ItemWorker.check``: ``engine.render_parts``):
    a book setting that decides the audio reaches the key through the plan's items, and one that does not (the
    workers) leaves every key as it was."""
    from omnivoice_demo.batch.worker import ItemWorker
    from omnivoice_demo.book.voices import Voicing
    from omnivoice_demo.engine.loop import OmniVoiceEngine
    from omnivoice_demo.engine.render_key import key_of
    from omnivoice_demo.settings.generation import GenerationConfig

    worker = ItemWorker.on_engine(OmniVoiceEngine(tiny_fp32_folder, verify="size", calibrate=False, backbone="fp32"))

    def keys(settings) -> list[str]:
        project.run_book(project.plan_book(BOOK, settings), settings, tmp_path / "out", progress=False)
        plan, _ = handed[-1]
        problems, _, parts = worker.check(list(plan.items), plan.job.audio_format)
        assert problems == []
        return [key_of(parts[item.id]) for item in plan.items]

    settings = project.BookSettings(config=GenerationConfig(num_step=2, seed=1), narrator=Voicing("d"))
    first = keys(settings)
    assert keys(dataclasses.replace(settings, workers=Workers(count=2))) == first
    assert handed[-1][0].workers == Workers(count=2)
    reseeded = keys(dataclasses.replace(settings, config=settings.config.replace(seed=2)))
    assert all(a != b for a, b in zip(first, reseeded)) and len(reseeded) == len(first) == 2
    slower = keys(dataclasses.replace(settings, config=settings.config.replace(num_step=3)))
    assert all(a != b for a, b in zip(first, slower))


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
