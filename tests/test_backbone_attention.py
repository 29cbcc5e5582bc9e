"""genai's GroupQueryAttention rewritten in ONNX's own Attention and RotaryEmbedding (issue 48, item 3): the same
numbers to the bit on a whole backbone, for one row, for right-padded rows, and on a kept prompt's past."""

from __future__ import annotations

import functools

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from omnivoice_demo.backbones.attention import rewrite_attention
from omnivoice_demo.backbones.precision import rebuild
from omnivoice_demo.engine.onnx_model import read_genai_decoder_config
from omnivoice_demo.storage.manifest import BACKBONE_GRAPHS


def sessions(folder):
    """The folder's own backbone and the same graph with its attention rewritten, with its layout."""
    model = onnx.load(str(folder / BACKBONE_GRAPHS["backbone"]))
    layers = sum(node.op_type == "GroupQueryAttention" for node in model.graph.node)
    original = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    assert rewrite_attention(model) == layers > 0
    assert not any(node.op_type == "GroupQueryAttention" for node in model.graph.node)
    rewritten = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    decoder = read_genai_decoder_config(folder)
    past = [i.name for i in original.get_inputs() if i.name.startswith("past_key_values.")]
    return original, rewritten, past, int(decoder["num_key_value_heads"]), int(decoder["head_size"]), \
        int(decoder["hidden_size"])


def forward(session, past_names, kv_heads, head, embeds, mask, past=None):
    feeds = {"inputs_embeds": embeds, "attention_mask": mask}
    for name in past_names:
        feeds[name] = past[name] if past else np.zeros((embeds.shape[0], kv_heads, 0, head), np.float32)
    outputs = ["hidden_states"] + [name.replace("past_key_values.", "present.", 1) for name in past_names]
    return session.run(outputs, feeds)


def test_the_rewritten_attention_computes_the_same_numbers_to_the_bit(tiny_fp32_folder):
    original, rewritten, past_names, kv_heads, head, hidden = sessions(tiny_fp32_folder)
    rng = np.random.default_rng(0)
    run = {name: functools.partial(forward, s, past_names, kv_heads, head)
           for name, s in (("gqa", original), ("standard", rewritten))}

    # one row, and two right-padded rows (the second attends within its first 7 positions)
    embeds = rng.standard_normal((2, 19, hidden)).astype(np.float32)
    mask = np.ones((2, 19), np.int64)
    mask[1, 7:] = 0
    for rows, cut in ((slice(0, 1), None), (slice(0, 2), 7)):
        expected = run["gqa"](embeds[rows], mask[rows])
        got = run["standard"](embeds[rows], mask[rows])
        for want, have in zip(expected, got):
            assert np.array_equal(want[:1], have[:1])
            if cut:  # the padded row: its own positions, and its keys and values
                valid = (slice(1, 2), slice(0, cut)) if want.ndim == 3 else (slice(1, 2), slice(None), slice(0, cut))
                assert np.array_equal(want[valid], have[valid])

    # a kept prompt: 8 positions' keys and values from a whole forward, then the other 11 on them
    whole = run["gqa"](embeds[:1], mask[:1])
    kept = {name: np.ascontiguousarray(value[:, :, :8]) for name, value in zip(past_names, whole[1:])}
    expected = run["gqa"](embeds[:1, 8:], mask[:1], past=kept)
    got = run["standard"](embeds[:1, 8:], mask[:1], past=kept)
    for want, have in zip(expected, got):
        assert np.array_equal(want, have)


def test_a_causal_attention_is_left_as_it_is(tiny_causal_folder):
    model = onnx.load(str(tiny_causal_folder / BACKBONE_GRAPHS["backbone"]), load_external_data=False)
    assert rewrite_attention(model) == 0
    assert any(node.op_type == "GroupQueryAttention" for node in model.graph.node)


@pytest.mark.parametrize("precision", ["fp32", "int8-row"])
def test_every_rebuilt_backbone_runs_the_rewritten_attention(tiny_fp32_folder, precision):
    model = onnx.load(str(tiny_fp32_folder / BACKBONE_GRAPHS["backbone"]))
    rebuild(model, precision)
    kinds = {node.op_type for node in model.graph.node}
    assert "Attention" in kinds and "RotaryEmbedding" in kinds and "GroupQueryAttention" not in kinds


def test_the_rewritten_graph_reads_as_bidirectional_with_every_layer_attending(tiny_fp32_folder):
    """The folder checks (``repair``) and the estimates' attention work (``attention_ratio``) read the standard
    node as they read genai's: a convert ``cpu_int8`` folder's backbone is rebuilt, so it has only the former."""
    from omnivoice_demo.backbones.repair import attention_nodes, is_causal_graph

    model = onnx.load(str(tiny_fp32_folder / BACKBONE_GRAPHS["backbone"]), load_external_data=False)
    layers = len(attention_nodes(model))
    rewrite_attention(model)
    assert len(attention_nodes(model)) == layers and not is_causal_graph(model)
    for attribute in next(n for n in model.graph.node if n.op_type == "Attention").attribute:
        if attribute.name == "is_causal":
            attribute.i = 1
    assert is_causal_graph(model)
