"""The convert pipeline's graphs against the PyTorch modules on the same random weights.

Shapes differ from the traced ones (batch 1-3, several lengths, right-padded
rows).  fp32 must match to 1e-4; the quantised profiles have looser, stated
tolerances.
"""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
import torch

from omnivoice_demo.storage.manifest import (BACKBONE_GRAPHS, MANIFEST_NAME, ModelFolderError, load_manifest,
                                             verify_files)
from omnivoice_demo.engine.onnx_model import OmniVoiceOnnx
from omnivoice_demo.backbones.repair import is_causal_graph, make_bidirectional

CASES = [  # (batch lengths) -- each row right-padded to the longest
    [5],
    [9, 4],
    [13, 13, 6],
]


def random_batch(lengths, vocab=1025, num_codebooks=8, seed=0):
    """input_ids [B,8,S] with a text prefix (same id on all rows) and audio after; mask and lengths."""
    rng = np.random.default_rng(seed)
    batch, seq = len(lengths), max(lengths)
    ids = np.full((batch, num_codebooks, seq), 1024, dtype=np.int64)
    audio = np.zeros((batch, seq), dtype=bool)
    for row, length in enumerate(lengths):
        text = rng.integers(0, 151676, size=length // 2)
        ids[row, :, : len(text)] = text
        ids[row, :, len(text):length] = rng.integers(0, vocab, size=(num_codebooks, length - len(text)))
        audio[row, len(text):length] = True
    return ids, audio


def block_mask(lengths):
    """The reference's 4-D boolean mask: each row attends within its length; padding sees itself."""
    batch, seq = len(lengths), max(lengths)
    mask = torch.zeros(batch, 1, seq, seq, dtype=torch.bool)
    for row, length in enumerate(lengths):
        mask[row, :, :length, :length] = True
        for pad in range(length, seq):
            mask[row, :, pad, pad] = True
    return mask


def reference_parts(model, ids, audio, lengths):
    with torch.no_grad():
        embeds = model._prepare_embed_inputs(torch.from_numpy(ids), torch.from_numpy(audio))
        hidden = model.llm(inputs_embeds=embeds, attention_mask=block_mask(lengths)).last_hidden_state
        logits = model(input_ids=torch.from_numpy(ids), audio_mask=torch.from_numpy(audio),
                       attention_mask=block_mask(lengths)).logits
    return embeds.numpy(), hidden.numpy(), logits.numpy()


def valid(array, lengths, axis=1):
    """Concatenate each row's valid positions (padding is not compared)."""
    return np.concatenate([np.take(array[row], range(length), axis=axis - 1) for row, length in enumerate(lengths)],
                          axis=axis - 1)


@pytest.mark.parametrize("lengths", CASES)
def test_fp32_graphs_match_pytorch(reference_model, tiny_fp32_folder, lengths):
    onnx_model = OmniVoiceOnnx(tiny_fp32_folder)
    ids, audio = random_batch(lengths, seed=len(lengths))
    ref_embeds, ref_hidden, ref_logits = reference_parts(reference_model, ids, audio, lengths)

    embeds = onnx_model.embed(ids, audio)
    hidden = onnx_model.hidden_states(ref_embeds, lengths)  # each graph on the reference's own input
    logits = onnx_model.audio_logits(ref_hidden)
    end_to_end = onnx_model.logits(ids, audio, lengths)

    assert np.abs(valid(embeds, lengths) - valid(ref_embeds, lengths)).max() <= 1e-4
    assert np.abs(valid(hidden, lengths) - valid(ref_hidden, lengths)).max() <= 1e-4
    assert np.abs(valid(logits, lengths, 2) - valid(ref_logits, lengths, 2)).max() <= 1e-4
    assert np.abs(valid(end_to_end, lengths, 2) - valid(ref_logits, lengths, 2)).max() <= 1e-4


def relative_error(actual, expected):
    return float(np.linalg.norm(actual - expected) / np.linalg.norm(expected))


def test_int4_profile_within_stated_tolerance(reference_model, tiny_int4_folder):
    """int4 (RTN, symmetric, block 32) on the backbone and the embedding tables, fp32 heads.

    Why these bounds: random weights are Gaussian; in a block of 32 the largest
    |w| is about 2.1 sigma, so the int4 step is about 0.3 sigma and the rounding
    error about step/sqrt(12) = 0.087 sigma: each quantised matrix carries ~9%
    relative error (measured here: 8.5% on the embeddings, 8.7% on the hidden
    states, 13% on the logits after both).  Bounds: 12% / 12% / 20%.  Random
    weights give near-uniform logits with tiny margins, so greedy agreement is
    fragile (78% measured); the bound is 65%.  Agreement on the generation loop
    is measured by the benchmark, not asserted here.
    """
    onnx_model = OmniVoiceOnnx(tiny_int4_folder)
    lengths = [13, 13, 6]
    ids, audio = random_batch(lengths, seed=3)
    ref_embeds, ref_hidden, ref_logits = reference_parts(reference_model, ids, audio, lengths)
    embeds = onnx_model.embed(ids, audio)
    hidden = onnx_model.hidden_states(ref_embeds, lengths)
    heads = onnx_model.audio_logits(ref_hidden)
    logits = onnx_model.logits(ids, audio, lengths)
    assert relative_error(valid(embeds, lengths), valid(ref_embeds, lengths)) < 0.12
    assert relative_error(valid(hidden, lengths), valid(ref_hidden, lengths)) < 0.12
    # the heads are float in every profile: exact
    assert np.abs(valid(heads, lengths, 2) - valid(ref_logits, lengths, 2)).max() <= 1e-4
    ref, got = valid(ref_logits, lengths, 2), valid(logits, lengths, 2)
    assert relative_error(got, ref) < 0.20
    assert (got.argmax(-1) == ref.argmax(-1)).mean() >= 0.65


def test_fp16_profile_within_stated_tolerance(reference_model, tiny_fp16_folder):
    """fp16 embeddings and heads (fp32 I/O), int4 backbone.

    fp16 has a 10-bit mantissa: rounding one value costs at most 2^-11 = 4.9e-4
    relative; a dot product of fp16 weights adds errors of that size in
    quadrature, so the embeddings and heads stay within 2e-3.  End to end the
    int4 backbone dominates (bound as in the int4 test).
    """
    onnx_model = OmniVoiceOnnx(tiny_fp16_folder)
    lengths = [9, 4]
    ids, audio = random_batch(lengths, seed=4)
    ref_embeds, ref_hidden, ref_logits = reference_parts(reference_model, ids, audio, lengths)
    embeds = onnx_model.embed(ids, audio)
    heads = onnx_model.audio_logits(ref_hidden)
    assert relative_error(valid(embeds, lengths), valid(ref_embeds, lengths)) < 2e-3
    assert relative_error(valid(heads, lengths, 2), valid(ref_logits, lengths, 2)) < 2e-3
    end_to_end = onnx_model.logits(ids, audio, lengths)
    assert relative_error(valid(end_to_end, lengths, 2), valid(ref_logits, lengths, 2)) < 0.20


def test_backbone_attends_bidirectionally(tiny_fp32_folder, tiny_causal_folder, tmp_path):
    """Change the last position, watch the first: ours moves; genai's default does not until repaired."""
    assert OmniVoiceOnnx(tiny_fp32_folder).attends_bidirectionally()

    causal = OmniVoiceOnnx(tiny_causal_folder)
    assert not causal.attends_bidirectionally()
    assert load_manifest(tiny_causal_folder)["backbone_attention"] == "causal"

    repaired = make_bidirectional(tiny_causal_folder, tmp_path / "repaired")
    assert OmniVoiceOnnx(repaired).attends_bidirectionally()
    manifest = load_manifest(repaired)
    assert manifest["backbone_attention"] == "bidirectional"
    assert "causal=0" in manifest["repairs"][-1]["what"]
    verify_files(repaired, manifest)
    # the source folder is untouched
    import onnx

    assert is_causal_graph(onnx.load(str(tiny_causal_folder / "llm_decoder.onnx"), load_external_data=False))
    verify_files(tiny_causal_folder, load_manifest(tiny_causal_folder))


def test_repaired_backbone_equals_bidirectional_build(tiny_fp32_folder, tiny_causal_folder, tmp_path):
    repaired = OmniVoiceOnnx(make_bidirectional(tiny_causal_folder, tmp_path / "repaired"))
    ours = OmniVoiceOnnx(tiny_fp32_folder)
    lengths = [9, 4]
    ids, audio = random_batch(lengths, seed=5)
    np.testing.assert_array_equal(valid(repaired.logits(ids, audio, lengths), lengths, 2),
                                  valid(ours.logits(ids, audio, lengths), lengths, 2))


def test_manifest_records_the_model(tiny_fp32_folder, tiny_int4_folder):
    manifest = load_manifest(tiny_fp32_folder)
    assert manifest["profile"] == "cpu_fp32" and manifest["backbone_attention"] == "bidirectional"
    model = manifest["model"]
    assert (model["num_codebooks"], model["audio_vocab_size"], model["audio_mask_id"]) == (8, 1025, 1024)
    assert (model["sample_rate"], model["frame_rate"], model["hop_length"]) == (24000, 25, 960)
    assert set(model["special_tokens"]) == {"<|denoise|>", "<|lang_start|>", "<|lang_end|>", "<|instruct_start|>",
                                            "<|instruct_end|>", "<|text_start|>", "<|text_end|>"}
    assert all(not name.startswith("/") and ".." not in name for name in manifest["files"])
    assert "audio_tokenizer/higgs_decoder.onnx" in manifest["files"]
    int4 = load_manifest(tiny_int4_folder)
    assert int4["precision"]["backbone"] == "int4" and int4["precision"]["audio_heads"] == "fp32"
    assert int4["precision"]["int4_block_size"] == 32


def test_moved_folder_loads_and_changed_file_is_named(tiny_fp32_folder, tmp_path):
    moved = tmp_path / "somewhere" / "else"
    shutil.copytree(tiny_fp32_folder, moved)
    verify_files(moved, load_manifest(moved))
    assert OmniVoiceOnnx(moved).attends_bidirectionally()

    heads = moved / "audio_heads_decoder.onnx.data"
    original = heads.read_bytes()
    corrupted = bytearray(original)
    corrupted[100] ^= 0xFF
    heads.write_bytes(bytes(corrupted))
    with pytest.raises(ModelFolderError, match="audio_heads_decoder.onnx.data.*checksum"):
        verify_files(moved, load_manifest(moved))
    heads.write_bytes(original)

    (moved / "genai_config.json").unlink()
    with pytest.raises(ModelFolderError, match="genai_config.json is missing"):
        verify_files(moved, load_manifest(moved))


def test_manifest_is_json_with_relative_paths(tiny_fp32_folder):
    text = (tiny_fp32_folder / MANIFEST_NAME).read_text()
    assert str(tiny_fp32_folder) not in text
    json.loads(text)


def test_cli_rejects_a_folder_that_is_not_a_checkpoint(tmp_path, capsys):
    from convert.__main__ import main

    assert main(["--model", str(tmp_path), "--output", str(tmp_path / "out"), "--device", "cpu_fp32"]) == 2
    assert "not an OmniVoice checkpoint folder" in capsys.readouterr().err


@pytest.mark.slow  # one more Olive build (the gpu profile)
def test_gpu_profile_builds_bidirectional_fp16_for_cuda(tiny_checkpoint, tmp_path):
    """The gpu profile cannot run on this CPU machine (its GQA fuses the Q/K norms, a CUDA-only
    feature); check what can be checked here: fp16 graphs, every GQA node bidirectional, and a
    clear refusal by the CPU engine."""
    import onnx

    from convert.pipeline import convert_checkpoint
    from omnivoice_demo import OmniVoiceEngine
    from omnivoice_demo.backbones.repair import attention_nodes

    folder = convert_checkpoint(tiny_checkpoint, tmp_path / "gpu", profile="gpu", include_codec=False,
                                progress=lambda line: None)
    manifest = load_manifest(folder)
    assert manifest["execution_provider"] == "cuda" and manifest["backbone_attention"] == "bidirectional"
    graph = onnx.load(str(folder / "llm_decoder.onnx"), load_external_data=False)
    assert not is_causal_graph(graph) and attention_nodes(graph)
    embeds = {i.name: i.type.tensor_type.elem_type for i in graph.graph.input}["inputs_embeds"]
    assert embeds == onnx.TensorProto.FLOAT16
    # prompt_refresh's past: every layer's keys and values in and out, as in the CPU graphs
    inputs, outputs = {i.name for i in graph.graph.input}, {o.name for o in graph.graph.output}
    pasts = sorted(name for name in inputs if name.startswith("past_key_values."))
    assert len(pasts) == 2 * len(attention_nodes(graph))
    assert {name.replace("past_key_values.", "present.") for name in pasts} <= outputs
    with pytest.raises(ModelFolderError, match="built for the CUDA provider"):
        OmniVoiceEngine(folder)


@pytest.mark.slow  # one more Olive build
def test_int8_profile_builds_the_engines_8_bit_backbone(reference_model, tiny_checkpoint, tmp_path):
    """convert's cpu_int8 profile: the backbone built in fp32, then rebuilt by the engine's own 8-bit code;
    the folder says so, runs as built under auto, and refuses another backbone precision clearly."""
    from convert.pipeline import convert_checkpoint
    from omnivoice_demo import OmniVoiceEngine
    from omnivoice_demo.backbones.precision import graph_precision
    from omnivoice_demo.errors import InvalidInput

    folder = convert_checkpoint(tiny_checkpoint, tmp_path / "int8", profile="cpu_int8", include_codec=False,
                                progress=lambda line: None)
    manifest = load_manifest(folder)
    assert manifest["profile"] == "cpu_int8" and manifest["precision"]["backbone"] == "int8"
    assert manifest["backbone_attention"] == "bidirectional"
    assert graph_precision(folder / BACKBONE_GRAPHS["backbone"]) == "int8"
    lengths = [11, 7]
    ids, audio = random_batch(lengths, seed=5)
    ref_embeds, ref_hidden, _ = reference_parts(reference_model, ids, audio, lengths)
    hidden = OmniVoiceOnnx(folder).hidden_states(ref_embeds, lengths)
    # 8-bit weights per column and 8-bit activations: about 1% relative error on random weights
    assert relative_error(valid(hidden, lengths), valid(ref_hidden, lengths)) < 0.05
    engine = OmniVoiceEngine(folder, verify="size", calibrate=False)
    assert engine.backbone_choice["compute"] == "as built (int8)"
    with pytest.raises(InvalidInput, match="built in int8 already"):
        OmniVoiceEngine(folder, verify="size", calibrate=False, backbone="fp32")
