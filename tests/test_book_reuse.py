"""What decides whether a book's sentences are made again: the render key alone (engine/render_key.py).

One book, made on a copy of the tiny model folder, then run again: with the same compute asked for by another
name (``auto`` on an fp32 folder runs it as built: ``fp32``) and from a copy of the folder at another path,
nothing is made; with another backbone compute (``int8-row``), or other weights behind the same path, every
sentence is made again and the report says what changed; a book made before render keys is made once more and
the report says so.
"""

from __future__ import annotations

import json
import shutil

import pytest

from tests.support.books import write_epub3

pytest.importorskip("ebooklib")

CHAPTERS = [("One", ["The boats were in. The bass player waved."]), ("Two", ["Rain hit the roof."])]


def make(model, book, output, *extra) -> tuple[dict, dict]:
    from omnivoice_demo.cli.main import main

    code = main(["book", str(book), "--model", str(model), "--output", str(output), "--num-step", "2", "--no-guard",
                 "--no-progress", "--format", "flac", "--no-readalong", *extra])
    assert code == 0
    return (json.loads((output / "report.json").read_text()),
            {p.name: p.stat().st_mtime_ns for p in (output / "sentences").glob("*.flac")})


def other_weights(folder) -> None:
    """Other weights behind the same path: one weight of the audio heads changed, the manifest written again (as
    a new build or download leaves it)."""
    import numpy as np
    import onnx
    from onnx import numpy_helper

    from omnivoice_demo.storage.manifest import MANIFEST_NAME, write_manifest

    path = folder / "audio_heads_decoder.onnx"
    graph = onnx.load(str(path))
    tensor = max(graph.graph.initializer, key=lambda t: np.prod(t.dims))
    array = numpy_helper.to_array(tensor).copy()
    array *= np.float32(1.5)
    tensor.CopyFrom(numpy_helper.from_array(array, tensor.name))
    onnx.save_model(graph, str(path), save_as_external_data=path.with_suffix(".onnx.data").exists())
    manifest = json.loads((folder / MANIFEST_NAME).read_text())
    write_manifest(folder, {k: v for k, v in manifest.items()
                            if k not in ("files", "content_sha256", "format", "format_version")})


@pytest.mark.slow   # five runs of a book and an 8-bit build: about a minute on 2 cores
def test_a_book_is_reused_whole_under_another_name_and_remade_whole_when_what_runs_changes(tiny_fp32_folder,
                                                                                          tmp_path):
    model = shutil.copytree(tiny_fp32_folder, tmp_path / "model")
    book, output = write_epub3(tmp_path / "b.epub", CHAPTERS), tmp_path / "out"
    report, first = make(model, book, output, "--backbone", "auto")
    assert report["made"] == len(first) >= 3 and report["reused"] == 0

    # the same compute by another name (auto runs an fp32 folder as built), and the folder copied elsewhere
    report, files = make(model, book, output, "--backbone", "fp32")
    assert (report["made"], report["reused"], files) == (0, len(first), first)
    copy = shutil.copytree(model, tmp_path / "copied elsewhere")
    report, files = make(copy, book, output)
    assert (report["made"], report["reused"], files) == (0, len(first), first)

    # another compute: every sentence again, and the report says why
    report, files = make(model, book, output, "--backbone", "int8-row")
    assert (report["made"], report["reused"]) == (len(first), 0)
    assert report["remade"] == [{"sentences": len(first), "changed": "the backbone compute"}]
    assert all(files[name] != first[name] for name in first)

    # other weights behind the same path (the compute as at first): every sentence again
    other_weights(model)
    report, files = make(model, book, output)
    assert (report["made"], report["reused"]) == (len(first), 0)
    assert report["remade"] == [{"sentences": len(first), "changed": "the model's weights, the backbone compute"}]

    # a book made before render keys: made once more, saying so; then nothing
    sentences = output / "sentences"
    for sidecar in sentences.glob("s*.json"):
        record = json.loads(sidecar.read_text())
        record.pop("render")
        record["key"] = "0" * 64   # a key of the earlier kind
        sidecar.write_text(json.dumps(record))
    report, _ = make(model, book, output)
    assert report["made"] == len(first)
    assert report["remade"] == [{"sentences": len(first),
                                 "changed": "made before render keys (an older version): made once again"}]
    report, _ = make(model, book, output)
    assert (report["made"], report["reused"], report["remade"]) == (0, len(first), [])
