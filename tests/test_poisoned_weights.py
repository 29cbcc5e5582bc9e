"""Poisoned and malformed checkpoints are refused by name, early (issue 43 items 4 and 5).

``python -m convert`` on a malformed ``model.safetensors`` ended in a SafetensorError traceback after Olive's
30-40 s; on NaN weights it built a folder the engine then called "causal".  Now the checkpoint is checked
before Olive starts, in one error line naming the file and the problem (the tensor for NaN); the runtime path
(``--backbone-weights``) refuses a non-finite tensor by name when it reads it."""

from __future__ import annotations

import shutil

import pytest

from omnivoice_demo.backbones.checkpoint import CheckpointWeights, check_finite
from omnivoice_demo.errors import ModelFolderError


def poisoned_copy(tiny_checkpoint, tmp_path, name_part="layers.0.mlp.down_proj"):
    from safetensors.torch import load_file, save_file

    folder = tmp_path / "ckpt"
    shutil.copytree(tiny_checkpoint, folder)
    tensors = load_file(folder / "model.safetensors")
    name = next(n for n in tensors if name_part in n)
    tensors[name] = tensors[name].clone()
    tensors[name].view(-1)[3] = float("nan")
    save_file(tensors, folder / "model.safetensors")
    return folder, name


def run_convert(folder, tmp_path, monkeypatch, capsys):
    import convert.pipeline as pipeline
    from convert.__main__ import main

    def no_olive(*args, **kwargs):
        raise AssertionError("Olive was started")
    monkeypatch.setattr(pipeline, "export_audio_embeddings", no_olive)
    code = main(["--model", str(folder), "--output", str(tmp_path / "out"), "--device", "cpu_fp32"])
    return code, capsys.readouterr().err.strip().splitlines()


def test_convert_refuses_nan_weights_naming_the_tensor_before_olive(tiny_checkpoint, tmp_path, monkeypatch, capsys):
    folder, name = poisoned_copy(tiny_checkpoint, tmp_path)
    code, lines = run_convert(folder, tmp_path, monkeypatch, capsys)
    assert code == 2 and len(lines) == 1, lines
    assert lines[0].startswith("error: ") and "model.safetensors" in lines[0]
    assert f"tensor {name!r} holds NaN or infinite values (first at element 3)" in lines[0]
    assert not (tmp_path / "out" / "llm_decoder.onnx").exists()


@pytest.mark.parametrize("damage", [b"\xff" * 8, b"{not json", b""])
def test_convert_names_a_malformed_safetensors_in_one_line_before_olive(tiny_checkpoint, tmp_path, monkeypatch,
                                                                       capsys, damage):
    folder = tmp_path / "ckpt"
    shutil.copytree(tiny_checkpoint, folder)
    weights = folder / "model.safetensors"
    weights.write_bytes(damage + weights.read_bytes()[len(damage):200])   # cut and damaged
    code, lines = run_convert(folder, tmp_path, monkeypatch, capsys)
    assert code == 2 and len(lines) == 1 and "model.safetensors" in lines[0] and "Traceback" not in lines[0], lines


def test_the_runtime_path_refuses_a_non_finite_tensor_by_name(tiny_checkpoint, tmp_path):
    folder, name = poisoned_copy(tiny_checkpoint, tmp_path)
    weights = CheckpointWeights(path=folder / "model.safetensors", label="test", digest="x")
    with pytest.raises(ModelFolderError, match=f"tensor {name!r} holds NaN"):
        weights.tensor(name)
    with pytest.raises(ModelFolderError, match="holds NaN"):
        check_finite(folder / "model.safetensors")
    check_finite(tiny_checkpoint / "model.safetensors")      # the clean checkpoint passes


def test_weights_that_would_not_be_used_are_refused(tiny_checkpoint, tiny_fp32_folder):
    """An fp32 folder runs as built with backbone fp32 (or auto): the given weights made byte-identical audio
    and nothing said so."""
    from omnivoice_demo import OmniVoiceEngine
    from omnivoice_demo.errors import InvalidInput

    for backbone in ("fp32", "auto"):
        with pytest.raises(InvalidInput, match=r"backbone_weights are not used with backbone='.*' on this folder") \
                as caught:
            OmniVoiceEngine(tiny_fp32_folder, verify="none", calibrate=False, backbone=backbone,
                            backbone_weights=str(tiny_checkpoint))
        assert caught.value.param == "backbone_weights"


def test_a_backbone_with_non_finite_output_is_not_called_causal_and_a_cache_build_is_removed(
        tiny_fp32_folder, tmp_path, monkeypatch):
    """Planted: the backbone's forwards give NaN (what NaN weights do), and the choice says it came from a
    cache folder; the verdict names the weights, and the cache folder is gone."""
    import numpy as np

    from omnivoice_demo import OmniVoiceEngine
    from omnivoice_demo.engine import loop
    from omnivoice_demo.engine.onnx_model import OmniVoiceOnnx

    real = OmniVoiceOnnx.hidden_states
    monkeypatch.setattr(OmniVoiceOnnx, "hidden_states",
                        lambda self, *a, **k: np.full_like(real(self, *a, **k), np.nan))
    assert OmniVoiceOnnx(tiny_fp32_folder).attention_verdict() == "not finite"
    with pytest.raises(ModelFolderError) as caught:
        OmniVoiceEngine(tiny_fp32_folder, verify="none", calibrate=False, backbone="fp32")
    assert "NaN or infinite outputs" in str(caught.value) and "causal" not in str(caught.value).replace(
        "attend in both", "")
    cache = tmp_path / "backbones" / "key-int8-row"
    cache.mkdir(parents=True)
    (cache / "backbone.onnx").write_bytes(b"x")
    monkeypatch.setattr(loop, "choose_backbone", lambda *a, **k: {"cache": str(cache), "choice": "int8-row"})
    with pytest.raises(ModelFolderError, match=r"rebuilt in our cache .*now removed.*NaN or infinite"):
        OmniVoiceEngine(tiny_fp32_folder, verify="none", calibrate=False, backbone="fp32")
    assert not cache.exists()
