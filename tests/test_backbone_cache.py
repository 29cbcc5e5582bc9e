"""The 8-bit backbones kept in our cache are checked, not trusted: each build records the sha256 of its
files, checked as they are read into memory; a build that fails is made again, and one that fails again
is refused naming the cache.  ``auto``'s remembered choice is obeyed only inside today's gate, and two
first starts on one cache make one choice."""

from __future__ import annotations

import json
import time

import numpy as np
import pytest

from omnivoice_demo.backbones import builds as backbone_builds
from omnivoice_demo.backbones import choice as backbone_choice
from omnivoice_demo.backbones.probe import ProbeResult
from omnivoice_demo.engine.onnx_model import OmniVoiceOnnx
from omnivoice_demo.errors import ModelFolderError
from omnivoice_demo.runtime.sessions import providers_for, session_options
from omnivoice_demo.storage.manifest import BACKBONE_GRAPHS
from tests.support.at_once import at_once

GRAPH = BACKBONE_GRAPHS["backbone"]


def choose(folder, mode, cache):
    model = OmniVoiceOnnx(folder, threads=1)
    info = backbone_choice.choose_backbone(model, mode, folder / GRAPH, providers_for("cpu"),
                                           lambda: session_options(1), threads=1, cache_dir=cache)
    return model, info


def hidden(model) -> np.ndarray:
    embeds = (0.02 * np.random.default_rng(0).standard_normal((1, 24, model.hidden_size))).astype(np.float32)
    return model.hidden_states(embeds, [24])[0]


@pytest.fixture
def counted_builds(monkeypatch):
    builds = []
    real = backbone_builds.write_rebuilt
    monkeypatch.setattr(backbone_builds, "write_rebuilt", lambda *a, **k: builds.append(a[1]) or real(*a, **k))
    return builds


def flip_bytes(path):
    raw = bytearray(path.read_bytes())
    for at in (len(raw) // 3, len(raw) // 2):
        raw[at] ^= 0x5A
    path.write_bytes(bytes(raw))


@pytest.mark.parametrize("damage", ["flipped", "truncated", "zeroed", "other graph", "no record"])
def test_a_changed_cached_build_is_built_again(tiny_fp32_folder, tmp_path, counted_builds, damage):
    model, _ = choose(tiny_fp32_folder, "int8-row", tmp_path)
    expected = hidden(model)
    (built,) = (tmp_path / "backbones").glob("*-int8-row")
    data = built / (GRAPH + ".data")
    if damage == "flipped":          # same size: only a hash sees it
        flip_bytes(data)
    elif damage == "truncated":
        data.write_bytes(data.read_bytes()[:-4096])
    elif damage == "zeroed":
        data.write_bytes(bytes(data.stat().st_size))
    elif damage == "other graph":    # another valid graph with its weights, in place of the build
        choose(tiny_fp32_folder, "int8", tmp_path)
        (other,) = (tmp_path / "backbones").glob("*-int8")
        for name in (GRAPH, GRAPH + ".data"):
            (built / name).write_bytes((other / name).read_bytes())
    else:                            # a build kept without a record (older version, or the record lost)
        (built / "build.json").unlink()
    before = list(counted_builds)
    again, info = choose(tiny_fp32_folder, "int8-row", tmp_path)
    assert counted_builds == before + ["int8-row"] and info["choice"] == "int8-row"
    np.testing.assert_array_equal(hidden(again), expected)
    assert not list((tmp_path / "tmp").glob("*"))     # the damaged build was moved away and removed
    _, info = choose(tiny_fp32_folder, "int8-row", tmp_path)
    assert counted_builds == before + ["int8-row"]   # the new build passes its check: loaded, not rebuilt
    assert info["cache"] == str(built) and set(json.loads((built / "build.json").read_text())["files"]) == {
        GRAPH, GRAPH + ".data"}


def test_a_build_that_fails_again_is_refused_naming_the_cache(tiny_fp32_folder, tmp_path, monkeypatch):
    real = backbone_builds.write_rebuilt

    def damaged(*args, **kwargs):    # every build comes out changed after its record was written
        graph = real(*args, **kwargs)
        flip_bytes(graph.parent / (graph.name + ".data"))
        return graph

    monkeypatch.setattr(backbone_builds, "write_rebuilt", damaged)
    with pytest.raises(ModelFolderError) as caught:
        choose(tiny_fp32_folder, "int8-row", tmp_path)
    message = str(caught.value)
    assert str(tmp_path / "backbones") in message and "our cache" in message and "sha256" in message
    assert str(tiny_fp32_folder) not in message and "download" not in message and "causal" not in message


def test_an_engine_on_a_zeroed_cache_rebuilds_instead_of_blaming_the_folder(tiny_fp32_folder, tmp_path, monkeypatch):
    from omnivoice_demo import OmniVoiceEngine

    monkeypatch.setenv("OMNIVOICE_CACHE", str(tmp_path))
    first = OmniVoiceEngine(tiny_fp32_folder, verify="none", calibrate=False, backbone="int8-row")
    greedy = dict(num_step=4, seed=3, position_temperature=0.0, class_temperature=0.0)
    codes = first.generate("Checked.", **greedy).codes
    for path in (tmp_path / "backbones").glob(f"*/{GRAPH}*"):
        path.write_bytes(bytes(path.stat().st_size))
    again = OmniVoiceEngine(tiny_fp32_folder, verify="none", calibrate=False, backbone="int8-row")
    np.testing.assert_array_equal(again.generate("Checked.", **greedy).codes, codes)


def test_a_remembered_choice_outside_the_gate_is_probed_again(tiny_int4_folder, tmp_path, monkeypatch):
    """``backbone-choice.json`` naming a choice the gate refuses (int8-tensor, the one outlier channels
    break) is not obeyed: ``auto`` probes the gated choices again and remembers the new outcome."""
    from omnivoice_demo.backbones.fidelity import passes_gate

    assert not passes_gate("int4", "int8-tensor")
    probes = []
    monkeypatch.setattr(backbone_choice, "backbone_probe", lambda model, sessions, **k: probes.append(set(sessions))
                        or ProbeResult.given({label: (0.5 if label == "int8-block" else 1.0) for label in sessions},
                                             k["baseline"]))
    key = backbone_choice.choice_key(tiny_int4_folder / GRAPH, providers_for("cpu"), 1)
    (tmp_path / "backbone-choice.json").write_text(json.dumps(
        {key: {"choice": "int8-tensor", "probe_s": {"int4": 1.0, "int8-tensor": 0.1},
               "probe": ProbeResult.given({"int4": 1.0, "int8-tensor": 0.1}, "int4").as_record()}}))
    _, info = choose(tiny_int4_folder, "auto", tmp_path)
    assert len(probes) == 1 and "int8-tensor" not in probes[0] and not info["remembered"]
    assert info["choice"] == "int8-block"
    assert json.loads((tmp_path / "backbone-choice.json").read_text())[key]["choice"] == "int8-block"


def test_two_first_starts_on_one_empty_cache_make_one_choice(tiny_int4_folder, tmp_path, monkeypatch):
    """Two starts at once (threads through the same inter-process lock): the first probes and
    remembers, the second waits for it and takes its choice.  The probe here answers differently
    each time it runs, as timings on a busy machine do, so two probes would choose differently."""
    winners = iter(["int8-block", "fp32"])
    probes = []

    def probe(model, sessions, **kwargs):
        winner = next(winners)
        probes.append(winner)
        time.sleep(0.5)              # long enough for the other start to arrive while this one measures
        return ProbeResult.given({label: (0.1 if label == winner else 1.0) for label in sessions}, kwargs["baseline"])

    monkeypatch.setattr(backbone_choice, "backbone_probe", probe)
    results = at_once(lambda: choose(tiny_int4_folder, "auto", tmp_path)[1])
    assert probes == ["int8-block"]
    assert [r["choice"] for r in results] == ["int8-block", "int8-block"]
    assert sorted(r["remembered"] for r in results) == [False, True]
