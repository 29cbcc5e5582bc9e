"""The backbone's choices built from the original checkpoint's weights (``backbone_weights=``), without torch.

On the tiny random checkpoint: the 8-bit graph made from ``model.safetensors`` through an int4 folder
equals, byte for byte, the one made from the fp32 folder converted from the same checkpoint; the fp32
choice is that folder's model; every lie a weights file can tell is refused naming the tensor; the build
runs with torch hidden; two starts build once; the Hub route goes through huggingface_hub (a local Hub)."""

from __future__ import annotations

import filecmp
import json
import pathlib
import struct

import numpy as np
import pytest

from omnivoice_demo.backbones import builds as backbone_builds
from omnivoice_demo.backbones import choice as backbone_choice
from omnivoice_demo.backbones.probe import ProbeResult
from omnivoice_demo.backbones.checkpoint import CheckpointWeights, read_header
from omnivoice_demo.engine.onnx_model import OmniVoiceOnnx
from omnivoice_demo.errors import ModelFolderError, ModelNotAvailable
from omnivoice_demo.runtime.sessions import providers_for, session_options
from omnivoice_demo.storage.manifest import BACKBONE_GRAPHS
from tests.support.at_once import at_once

GRAPH = BACKBONE_GRAPHS["backbone"]


def weights_of(checkpoint: pathlib.Path, tmp_path) -> CheckpointWeights:
    from omnivoice_demo.hub.weights import backbone_weights

    return backbone_weights(checkpoint, cache_dir=tmp_path / "cache")


def build(folder, precision, destination, weights=None):
    model = OmniVoiceOnnx(folder, threads=1)
    destination.mkdir(parents=True)
    return backbone_choice.write_rebuilt(folder / GRAPH, precision, model, providers_for("cpu"),
                                         lambda: session_options(1), destination, weights)


@pytest.mark.parametrize("precision", backbone_choice.EIGHT_BIT)
def test_eight_bits_from_the_checkpoint_equal_those_from_its_fp32_folder(tiny_checkpoint, tiny_int4_folder,
                                                                         tiny_fp32_folder, tmp_path, precision):
    weights = weights_of(tiny_checkpoint, tmp_path)
    from_fp32 = build(tiny_fp32_folder, precision, tmp_path / "fp32")
    from_checkpoint = build(tiny_int4_folder, precision, tmp_path / "checkpoint", weights)
    for name in (GRAPH, GRAPH + ".data"):
        assert filecmp.cmp(from_fp32.parent / name, from_checkpoint.parent / name, shallow=False), name
    # and not the int4 folder's own weights: those give another graph
    from_int4 = build(tiny_int4_folder, precision, tmp_path / "int4")
    assert not filecmp.cmp(from_fp32.parent / (GRAPH + ".data"), from_int4.parent / (GRAPH + ".data"), shallow=False)
    assert json.loads((from_checkpoint.parent / "build.json").read_text())["weights"] == str(tiny_checkpoint)


def test_an_engine_on_an_int4_folder_runs_the_checkpoints_weights(tiny_checkpoint, tiny_int4_folder,
                                                                  tiny_fp32_folder, tmp_path, monkeypatch):
    from omnivoice_demo import OmniVoiceEngine

    monkeypatch.setenv("OMNIVOICE_CACHE", str(tmp_path))
    embeds = (0.02 * np.random.default_rng(0).standard_normal((1, 40, 64))).astype(np.float32)
    for choice in ("fp32", "int8-row"):
        reference = OmniVoiceEngine(tiny_fp32_folder, verify="none", calibrate=False, backbone=choice)
        engine = OmniVoiceEngine(tiny_int4_folder, verify="none", calibrate=False, backbone=choice,
                                 backbone_weights=str(tiny_checkpoint))
        described = engine.describe()["backbone_compute"]
        assert described["choice"] == choice and described["weights"] == f"{choice} from {tiny_checkpoint}"
        np.testing.assert_array_equal(engine.model.hidden_states(embeds, [40]),
                                      reference.model.hidden_states(embeds, [40]))
    int4 = OmniVoiceEngine(tiny_int4_folder, verify="none", calibrate=False, backbone="int8-row")
    assert int4.describe()["backbone_compute"]["weights"] == "int8-row from the int4 folder, never better than int4"


def test_auto_with_the_weights_chooses_among_the_choices_built_from_them(tiny_checkpoint, tiny_int4_folder,
                                                                         tmp_path, monkeypatch):
    from omnivoice_demo.backbones import fidelity

    gated = [c for c in ("fp32",) + backbone_choice.EIGHT_BIT if fidelity.passes_gate("checkpoint", c)]
    # the table's rows from the original weights: int8-row above int4's figures; int8 only from the int4 folder below
    assert "int8-row" in gated and "int8" in gated and not fidelity.passes_gate("int4", "int8")
    probed = []
    monkeypatch.setattr(backbone_choice, "backbone_probe", lambda model, sessions, **k: probed.append(set(sessions))
                        or ProbeResult.given({label: (0.5 if label == "int8-row" else 1.0) for label in sessions},
                                             k["baseline"]))
    model = OmniVoiceOnnx(tiny_int4_folder, threads=1)
    info = backbone_choice.choose_backbone(model, "auto", tiny_int4_folder / GRAPH, providers_for("cpu"),
                                           lambda: session_options(1), threads=1, cache_dir=tmp_path,
                                           weights=weights_of(tiny_checkpoint, tmp_path))
    assert probed == [set(gated)] and "int4" not in probed[0]
    assert info["choice"] == "int8-row" and info["weights"] == f"int8-row from {tiny_checkpoint}"
    assert info["fidelity"] == fidelity.fidelity_of("checkpoint", "int8-row")


def test_auto_with_the_weights_keeps_the_most_faithful_of_a_near_tie():
    """Built from the original weights every 8-bit form passes int4's gate: a coarser form 3% faster than int8-row
    does not win (int8-row is closer to fp32 on the check); one 20% faster does, and fp32 (exact) wins a tie."""
    from omnivoice_demo.backbones import fidelity

    assert fidelity.fidelity_of("checkpoint", "int8-tensor")["agreement"] < fidelity.fidelity_of(
        "checkpoint", "int8-row")["agreement"]
    most_faithful = backbone_choice.most_faithful
    assert most_faithful({"int8-row": 1.00, "int8-tensor": 0.97}, "checkpoint") == "int8-row"
    assert most_faithful({"int8-row": 1.00, "int8-tensor": 0.80}, "checkpoint") == "int8-tensor"
    assert most_faithful({"int8-row": 1.00, "fp32": 1.02, "int8-block": 1.5}, "checkpoint") == "fp32"
    # without weights the fastest clear of int4 wins, however coarse
    assert backbone_choice.fastest(ProbeResult.given({"int4": 1.0, "int8-row": 0.90, "int8-tensor": 0.87},
                                                     "int4")) == "int8-tensor"


def test_two_starts_building_from_the_weights_build_once(tiny_checkpoint, tiny_int4_folder, tmp_path, monkeypatch):
    builds = []
    real = backbone_builds.write_rebuilt
    monkeypatch.setattr(backbone_builds, "write_rebuilt", lambda *a, **k: builds.append(a[1]) or real(*a, **k))
    weights = weights_of(tiny_checkpoint, tmp_path)
    graphs = at_once(lambda: backbone_choice.open_cached_backbone(
        tiny_int4_folder / GRAPH, "int8-row", OmniVoiceOnnx(tiny_int4_folder, threads=1), providers_for("cpu"),
        lambda: session_options(1), tmp_path, weights)[0])
    assert builds == ["int8-row"] and graphs[0] == graphs[1]
    assert not list((tmp_path / "tmp").glob("*"))


def test_the_build_runs_with_torch_hidden(tiny_checkpoint, tiny_int4_folder, tmp_path):
    from tests.test_layering import run_without_build_tools

    code = ("import pathlib, sys\n"
            "from omnivoice_demo import OmniVoiceEngine\n"
            "engine = OmniVoiceEngine(sys.argv[1], verify='none', calibrate=False, backbone='int8-row',"
            " backbone_weights=sys.argv[2])\n"
            "assert 'torch' not in sys.modules or sys.modules['torch'] is None\n"
            "print(engine.describe()['backbone_compute']['weights'])\n")
    done = run_without_build_tools(f"import os; os.environ['OMNIVOICE_CACHE'] = {str(tmp_path)!r}\n" + code,
                                   str(tiny_int4_folder), str(tiny_checkpoint), timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().endswith(f"int8-row from {tiny_checkpoint}")
    assert list((tmp_path / "backbones").glob("*-int8-row/" + GRAPH))


# --- weights files that lie ----------------------------------------------------------------------

def safetensors_file(path: pathlib.Path, header: dict, data: bytes, length: int | None = None) -> pathlib.Path:
    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw) if length is None else length) + raw + data)
    return path


def entry(dtype, shape, begin, end):
    return {"dtype": dtype, "shape": shape, "data_offsets": [begin, end]}


@pytest.mark.parametrize("case, words", [
    ("offsets past the end", "do not cover the file exactly (the file may be truncated)"),
    ("huge header", "header claims more than the 100 MB accepted"),
    ("header past the end", "header claims more bytes than the file has"),
    ("overlapping", "tensor 'b' lies outside the file or overlaps another tensor"),
    ("a gap between tensors", "tensor 'b' lies outside the file or overlaps another tensor"),
    ("size that does not match the shape", "bytes do not match its shape and dtype"),
    ("not json", "its header is not JSON"),
    ("shorter than a header", "shorter than a safetensors header"),
    ("malformed entry", "its header has a malformed entry (invalid value: integer `-1`"),
    ("unknown dtype", "its header has a malformed entry (unknown variant `X9`"),
])
def test_a_header_that_lies_is_refused_naming_the_problem(tmp_path, case, words):
    """safetensors reads and checks the header (bounded before anything is read); its refusal is said in our words,
    naming the tensor where safetensors names it."""
    path = tmp_path / "model.safetensors"
    if case == "offsets past the end":
        safetensors_file(path, {"a": entry("F32", [4], 0, 16)}, bytes(8))
    elif case == "huge header":
        safetensors_file(path, {"a": entry("F32", [2], 0, 8)}, bytes(8), length=1 << 40)
    elif case == "header past the end":
        safetensors_file(path, {"a": entry("F32", [2], 0, 8)}, bytes(8), length=1 << 20)
    elif case == "overlapping":
        safetensors_file(path, {"a": entry("F32", [4], 0, 16), "b": entry("F32", [2], 8, 16)}, bytes(16))
    elif case == "a gap between tensors":
        safetensors_file(path, {"a": entry("F32", [2], 0, 8), "b": entry("F32", [2], 12, 20)}, bytes(20))
    elif case == "size that does not match the shape":
        safetensors_file(path, {"a": entry("F32", [4], 0, 8)}, bytes(8))
    elif case == "not json":
        path.write_bytes(struct.pack("<Q", 5) + b"{nope")
    elif case == "shorter than a header":
        path.write_bytes(b"\x01\x02")
    elif case == "unknown dtype":
        safetensors_file(path, {"a": entry("X9", [1], 0, 4)}, bytes(4))
    else:
        safetensors_file(path, {"a": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}}, bytes(4))
    with pytest.raises(ModelFolderError) as caught:
        read_header(path)
    assert words in str(caught.value) and "Traceback" not in str(caught.value)
    assert "download it again" in str(caught.value)


def test_the_header_is_what_safetensors_reads(tiny_checkpoint):
    """Every tensor's dtype and shape as safetensors' own loader gives them (names, shapes, F32 -> float32)."""
    from safetensors.numpy import load_file

    path = tiny_checkpoint / "model.safetensors"
    header, tensors = read_header(path), load_file(str(path))
    assert set(header) == set(tensors)
    dtypes = {"F32": np.float32, "F16": np.float16, "I64": np.int64, "I32": np.int32, "BOOL": np.bool_}
    for name, info in header.items():
        assert info.shape == tensors[name].shape, name
        assert np.dtype(dtypes[info.dtype]) == tensors[name].dtype, name


def test_a_lookup_reads_the_rows_a_gather_of_the_whole_table_gives(tiny_checkpoint, tmp_path):
    """``CheckpointWeights.lookup`` (rows read lazily with ``get_slice``) against numpy's take of the whole tensor:
    repeated, negative and consecutive indices, bit for bit; an index outside the table is refused."""
    weights = weights_of(tiny_checkpoint, tmp_path)
    name = "llm.embed_tokens.weight"
    table = weights.tensor(name)
    index = np.array([[5, 6, 7, 5, -1, 0], [1024, 3, 4, 1, 2, 3]], dtype=np.int64)
    got = weights.lookup(name, index)
    assert got.dtype == np.float32 and got.shape == (2, 6, table.shape[1])
    assert np.array_equal(got.view(np.uint32), np.take(table, index, axis=0).view(np.uint32))
    with pytest.raises(ValueError, match="outside its"):
        weights.lookup(name, np.array([table.shape[0]]))


def rewritten(checkpoint: pathlib.Path, tmp_path, change) -> CheckpointWeights:
    """The tiny checkpoint's tensors with ``change(tensors)`` applied, written as a new safetensors file."""
    from safetensors.numpy import load_file, save_file

    tensors = load_file(str(checkpoint / "model.safetensors"))
    change(tensors)
    path = tmp_path / "changed" / "model.safetensors"
    path.parent.mkdir(exist_ok=True)
    save_file(tensors, str(path))
    return CheckpointWeights(path, str(path.parent), "changed")


@pytest.mark.parametrize("case, words", [
    ("missing tensor", "'llm.layers.1.mlp.up_proj.weight' is missing"),
    ("wrong dtype", "'llm.layers.0.self_attn.q_proj.weight' is I32"),
    ("another architecture", "'llm.layers.0.mlp.gate_proj.weight' has shape [256, 64]"),
    ("norm of another size", "'llm.norm.weight' has shape [32]"),
])
def test_a_checkpoint_that_does_not_fit_the_graph_is_refused_naming_the_tensor(tiny_checkpoint, tiny_int4_folder,
                                                                                 tmp_path, case, words):
    def change(tensors):
        if case == "missing tensor":
            del tensors["llm.layers.1.mlp.up_proj.weight"]
        elif case == "wrong dtype":
            tensors["llm.layers.0.self_attn.q_proj.weight"] = tensors["llm.layers.0.self_attn.q_proj.weight"].astype(
                np.int32)
        elif case == "another architecture":
            tensors["llm.layers.0.mlp.gate_proj.weight"] = np.zeros((256, 64), np.float32)
        else:
            tensors["llm.norm.weight"] = np.ones(32, np.float32)

    weights = rewritten(tiny_checkpoint, tmp_path, change)
    builds = tmp_path / "cache"
    with pytest.raises(ModelFolderError) as caught:
        backbone_choice.cached_backbone(tiny_int4_folder / GRAPH, "int8-row", OmniVoiceOnnx(tiny_int4_folder, threads=1),
                                        providers_for("cpu"), lambda: session_options(1), builds, weights=weights)
    assert words in str(caught.value)
    assert not list((builds / "backbones").glob("*/*"))   # nothing half-built kept


def test_a_truncated_weights_file_is_refused_before_anything_is_built(tiny_checkpoint, tmp_path):
    path = tmp_path / "model.safetensors"
    raw = (tiny_checkpoint / "model.safetensors").read_bytes()
    path.write_bytes(raw[: len(raw) // 2])
    with pytest.raises(ModelFolderError, match="the file may be truncated"):
        weights_of(tmp_path, tmp_path)


# --- from the Hub --------------------------------------------------------------------------------

def test_weights_from_a_hub_repo_are_downloaded_once_and_a_repo_without_them_is_refused(
        tiny_checkpoint, tiny_int4_folder, tmp_path, monkeypatch):
    import huggingface_hub.constants

    from omnivoice_demo.hub.weights import backbone_weights
    from omnivoice_demo.storage.digests import file_sha256
    from tests.support.hub_server import HubServer

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    with HubServer() as hub:
        hub.add_repo("k2-fsa/OmniVoice", tiny_checkpoint)
        other = tmp_path / "other"
        other.mkdir()
        (other / "config.json").write_text("{}")
        hub.add_repo("someone/not-omnivoice", other)
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
        monkeypatch.setenv("HF_HUB_OFFLINE", "0")
        for name in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_TOKEN"):
            monkeypatch.delenv(name, raising=False)
        weights = backbone_weights("k2-fsa/OmniVoice", cache_dir=tmp_path / "ours")
        assert weights.label == "k2-fsa/OmniVoice" and weights.digest == file_sha256(tiny_checkpoint / "model.safetensors")
        fetched = [r.path for r in hub.requests if "/resolve/" in r.path and r.method == "GET"]
        assert len(fetched) == 1 and fetched[0].endswith("/model.safetensors")  # only the weights file
        hub.reset_log()
        assert backbone_weights("k2-fsa/OmniVoice", cache_dir=tmp_path / "ours").path == weights.path
        assert not [r for r in hub.requests if "/resolve/" in r.path and r.method == "GET"]
        with pytest.raises(ModelNotAvailable, match="not-omnivoice has no model.safetensors"):
            backbone_weights("someone/not-omnivoice", cache_dir=tmp_path / "ours")
        # --precision int8: the int4 folder, and the original weights for its backbone (from the Hub's cache now)
        from omnivoice_demo.hub import resolve_model

        resolved = resolve_model(tiny_int4_folder, precision="int8", cache_dir=tmp_path / "ours")
        assert resolved.precision == "int8" and resolved.backbone_weights.path == weights.path
        assert resolved.backbone_weights.label == "k2-fsa/OmniVoice"
        assert (resolved.path / GRAPH).is_file()
    with pytest.raises(ModelFolderError, match="neither a folder"):
        backbone_weights("not a repo/at all/..", cache_dir=tmp_path / "ours")


def test_every_front_end_takes_backbone_weights(tmp_path):
    from omnivoice_demo.app import parse_args
    from omnivoice_demo.cli.main import build_parser

    parser = build_parser()
    for command in (["synth", "--text", "x", "--output", "x.wav"], ["serve"], ["wyoming"],
                    ["batch", "--input", "x.jsonl", "--output", "out"], ["eval", "--output", "out"]):
        args = parser.parse_args(command + ["--backbone-weights", "k2-fsa/OmniVoice"])
        assert args.backbone_weights == "k2-fsa/OmniVoice", command
    assert parse_args(["--backbone-weights", "DIR"]).backbone_weights == "DIR"


# --- one layer at a time: the fp32 weights are never all in memory ----------------------------------

def test_the_calibration_runs_one_layer_at_a_time_and_equals_the_whole_forward(tiny_checkpoint, tiny_int4_folder,
                                                                                tmp_path, monkeypatch):
    """Each part of the calibration forward holds the weights of one layer, each layer's in one part, and the
    activations equal those of the whole graph run at once with all its weights (the form before)."""
    import re

    import onnx

    from omnivoice_demo.backbones import calibration as backbone_calibration, precision
    from omnivoice_demo.backbones.checkpoint import checkpoint_embedder, fp32_graph
    from omnivoice_demo.runtime import sessions

    weights = weights_of(tiny_checkpoint, tmp_path)
    model = OmniVoiceOnnx(tiny_int4_folder, threads=1)
    graph, source = fp32_graph(tiny_int4_folder / GRAPH, weights)
    embeds = backbone_calibration.calibration_embeds(checkpoint_embedder(tiny_int4_folder, weights, providers_for("cpu"),
                                                              session_options(1)))
    feeds = backbone_calibration.calibration_feeds(model, embeds)
    names = sorted({p.activation for p in precision.weight_products(graph.graph)})
    whole = onnx.ModelProto()
    whole.CopyFrom(graph)
    whole.graph.output.extend(onnx.helper.make_empty_tensor_value_info(n) for n in names)
    options = session_options(1)
    options.add_session_config_entry("session.disable_prepacking", "1")
    expected = sessions.in_memory_session(whole, {n: load() for n, load in source.items()}, providers_for("cpu"),
                                          options).run(names, feeds)

    held, real = [], sessions.in_memory_session
    monkeypatch.setattr(sessions, "in_memory_session", lambda m, constants, *a: held.append(set(constants))
                        or real(m, constants, *a))
    found = backbone_calibration.forward_by_layer(graph, source, names, feeds, providers_for("cpu"), lambda: session_options(1))
    layer_of = {name: re.search(r"layers\.(\d+)\.", name).group(1) for name in source}
    assert len(set(layer_of.values())) >= 2 and len(held) == len(set(layer_of.values()))
    assert all(len({layer_of[name] for name in part}) == 1 for part in held)
    assert sorted(name for part in held for name in part) == sorted(source)  # every weight in exactly one part
    for name, value in zip(names, expected):
        np.testing.assert_array_equal(found[name], value, err_msg=name)


def test_the_rebuild_writes_each_products_weights_out_before_reading_the_next(tiny_checkpoint, tiny_int4_folder,
                                                                             tmp_path):
    """``rebuild`` with a ``store`` reads one product's fp32 weights, quantizes them and hands the codes to the
    writer (their data dropped from memory) before the next product's weights are read; the files are those
    ``onnx.save_model`` writes of the same graph with every constant held in memory, byte for byte."""
    import onnx
    from onnx import numpy_helper

    from omnivoice_demo.backbones import precision
    from omnivoice_demo.backbones.checkpoint import fp32_graph

    weights = weights_of(tiny_checkpoint, tmp_path)
    graph, source = fp32_graph(tiny_int4_folder / GRAPH, weights)
    outliers = {p.activation: [0, 3] for p in precision.weight_products(graph.graph)}
    held = onnx.ModelProto()
    held.CopyFrom(graph)
    constants = precision.rebuild(held, "int8-row", outliers, source)
    held.graph.initializer.extend(numpy_helper.from_array(value, name) for name, value in constants.items())
    (tmp_path / "held").mkdir()
    onnx.save_model(held, str(tmp_path / "held" / GRAPH), save_as_external_data=True, all_tensors_to_one_file=True,
                    location=GRAPH + ".data", size_threshold=1024)

    events = []
    loaders = {name: (lambda name=name, load=load: events.append(("read", name)) or load())
               for name, load in source.items()}
    (tmp_path / "streamed").mkdir()
    write = backbone_choice.external_writer(tmp_path / "streamed", GRAPH + ".data")

    def store(tensor):
        write(tensor)
        events.append(("wrote", tensor.name, tensor.HasField("raw_data")))

    assert precision.rebuild(graph, "int8-row", outliers, loaders, store=store) == {}
    onnx.save_model(graph, str(tmp_path / "streamed" / GRAPH))
    reads = [i for i, event in enumerate(events) if event[0] == "read"]
    assert len(reads) == len(source)
    codes = [event for event in events if event[0] == "wrote" and event[1].endswith("_w_i8")]
    assert len(codes) == len(source) and not any(event[2] for event in codes)  # written out, not held
    for before, after in zip(reads, reads[1:]):
        assert any(event[0] == "wrote" and event[1].endswith("_w_i8") for event in events[before:after])
    for name in (GRAPH, GRAPH + ".data"):
        assert filecmp.cmp(tmp_path / "held" / name, tmp_path / "streamed" / name, shallow=False), name


def test_no_disk_left_while_building_is_said_and_nothing_half_built_is_kept_or_used(tiny_checkpoint, tiny_int4_folder,
                                                                                     tmp_path, monkeypatch):
    import errno

    from onnx import external_data_helper

    weights = weights_of(tiny_checkpoint, tmp_path)
    real, written = external_data_helper.save_external_data, []

    def full_disk(tensor, base_path):  # the disk fills after three tensors of the graph's weights
        if len(written) == 3:
            raise OSError(errno.ENOSPC, "No space left on device")
        written.append(tensor.name)
        real(tensor, base_path)

    monkeypatch.setattr(external_data_helper, "save_external_data", full_disk)
    cache = tmp_path / "cache"
    model = OmniVoiceOnnx(tiny_int4_folder, threads=1)

    def open_build():
        return backbone_choice.open_cached_backbone(tiny_int4_folder / GRAPH, "int8-row", model, providers_for("cpu"),
                                                    lambda: session_options(1), cache, weights)

    with pytest.raises(ModelNotAvailable) as caught:
        open_build()
    message = str(caught.value)
    assert "int8-row backbone could not be built" in message and "is full (ENOSPC)" in message
    assert "OMNIVOICE_CACHE" in message and "Traceback" not in message and len(written) == 3
    assert not list((cache / "backbones").glob("*/*")) and not list((cache / "tmp").glob("*"))

    monkeypatch.setattr(external_data_helper, "save_external_data", real)  # room again: built whole, then used
    graph, session = open_build()
    whole = build(tiny_int4_folder, "int8-row", tmp_path / "whole", weights)
    for name in (GRAPH, GRAPH + ".data"):
        assert filecmp.cmp(graph.parent / name, whole.parent / name, shallow=False), name
    assert open_build()[0] == graph and not list((cache / "tmp").glob("*"))


# --- the Model tab's "Build from the original weights" ---------------------------------------------

def test_the_model_tab_builds_from_the_original_weights(tiny_checkpoint, tiny_int4_folder, tmp_path, monkeypatch):
    """The studio core behind the action: a source that is nothing, or a Hub repo offline and never downloaded,
    is a clear error in the model bar; a Hub repo is downloaded with progress, and the backbone comes from it;
    in shared mode the action is refused on the server whatever the page shows."""
    import types

    import gradio as gr
    import huggingface_hub.constants

    from omnivoice_demo.studio.models import ModelManager
    from omnivoice_demo.ui.tabs.model import ModelTab
    from tests.support.hub_server import HubServer

    monkeypatch.setenv("OMNIVOICE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    for name in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    manager = ModelManager(cache_dir=tmp_path / "cache", backbone="int8-row")
    for source, offline, words in ((str(tmp_path / "nowhere") + "/../x y", True, "neither a folder, a file nor"),
                                   ("x" * 5000, True, "at most 4096 characters"),
                                   ("k2-fsa/OmniVoice", True, "Offline, and the weights of k2-fsa/OmniVoice")):
        assert manager.start_load(str(tiny_int4_folder), offline=offline, backbone_weights=source)
        manager.wait(120)
        assert manager.status.state == "error" and words in manager.status.message, manager.status
        assert len(manager.status.message) < 1000 and not manager.models

    stages = []
    real_status = manager._set_status
    monkeypatch.setattr(manager, "_set_status", lambda **fields: stages.append(fields.get("stage"))
                        or real_status(**fields))
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    with HubServer() as hub:
        hub.add_repo("k2-fsa/OmniVoice", tiny_checkpoint)
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        tab = ModelTab.__new__(ModelTab)
        tab.studio = types.SimpleNamespace(models=manager)
        monkeypatch.setattr(ModelTab, "view", lambda self: "viewed")
        assert tab._build_from_weights(str(tiny_int4_folder), "auto", "cpu", False, "") == "viewed"  # the default repo
        manager.wait(300)
    assert manager.status.state == "ready", manager.status
    assert "weights" in stages and "download" in stages and stages[-1] == "ready"
    assert "backbone from k2-fsa/OmniVoice" in manager.status.request
    assert manager.get().engine.describe()["backbone_compute"]["weights"] == "int8-row from k2-fsa/OmniVoice"

    manager.locked = True  # shared mode: the operator's models only
    before = manager.status.request
    with pytest.raises(gr.Error, match="operator chooses"):
        tab._build_from_weights(str(tiny_int4_folder), "auto", "cpu", False, str(tiny_checkpoint))
    assert not manager.loading and manager.status.request == before
