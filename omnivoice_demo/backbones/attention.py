"""onnxruntime-genai's ``GroupQueryAttention`` rewritten as ONNX's own ``RotaryEmbedding`` and ``Attention`` (opset 23).

The backbone's attention node is genai's ``GroupQueryAttention`` (com.microsoft): rotary embedding of the
new queries and keys, the past keys and values put before the new ones (``present.*``), and with ``causal=0``
every new position attending to every valid key of its row, the row's valid keys given as ``seqlens_k``
(valid keys - 1 per row) and ``total_sequence_length``.  ONNX has the same computation in standard operators
since opset 23: ``RotaryEmbedding`` on the queries and on the keys at the positions ``total - S .. total - 1``
(GroupQueryAttention's for right-padded rows and for new positions after a past), and ``Attention`` with
``q_num_heads``/``kv_num_heads`` (grouped heads), the past and present in the same ``[batch, kv_heads, length,
head]`` layout, and a boolean mask ``[batch, 1, new, total]`` that lets row ``b`` see keys ``0 .. seqlens_k[b]``.

On ONNX Runtime's CPU kernels the two give the same numbers to the bit, as far as it was measured:
``tests/test_backbone_attention.py`` checks a whole tiny backbone (19 positions, padded rows, a kept prompt) on
every run, and ``benchmarks/attention_forms.py`` checks the full-size backbone at the lengths it is given (its
``same_to_the_bit`` column; exit 1 where any differ: 125, 168 and 450 rows and a 325-position past in
BENCHMARKS.md's run on an AVX-512 VNNI EPYC).  Other lengths and other CPUs' kernels are not proven; the
standard form is faster at a step's lengths (the same benchmark).  ``rewrite_attention`` changes a backbone graph in place;
the rebuilt backbones (``precision.rebuild``) get it.  A node with a softcap, a local window, interleaved
rotary, no rotary or causal attention is left as it is.
"""

from __future__ import annotations

import numpy as np

from .graph_builder import GraphBuilder

#: the opset whose ``Attention`` and ``RotaryEmbedding`` the rewrite uses
OPSET = 23


def _rewritable(attrs: dict) -> bool:
    return (attrs.get("do_rotary", 0) == 1 and attrs.get("rotary_interleaved", 0) == 0 and attrs.get("causal", 1) == 0
            and float(attrs.get("softcap", 0.0)) == 0.0 and attrs.get("local_window_size", -1) == -1)


def rewrite_attention(model) -> int:
    """Rewrite every rewritable ``GroupQueryAttention`` of ``model`` (a ModelProto, changed in place); returns
    how many were.  The graph's opset goes to 23 when any is (the operators it already has keep their meaning:
    opset 23 only added types to them)."""
    import onnx
    from onnx import helper, numpy_helper

    graph = model.graph
    # each constant an initializer of the graph, once
    rewrite = GraphBuilder(keep=lambda name, value: graph.initializer.append(numpy_helper.from_array(value, name)))
    constant, once = rewrite.constant, rewrite.once
    rewritten = 0
    first_query: dict[str, str] = {}

    for node in graph.node:
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        inputs = list(node.input) + [""] * (12 - len(node.input))
        if (node.op_type != "GroupQueryAttention" or node.domain != "com.microsoft" or not _rewritable(attrs)
                or any(inputs[9:]) or not all(inputs[:9])):
            rewrite.nodes.append(node)
            continue
        query, key, value, past_key, past_value, seqlens_k, total, cos, sin = inputs[:9]
        base = f"{seqlens_k}_{total}"  # what the mask and the positions depend on: made once for every layer
        # the positions of the new rows: total - S .. total - 1, for every row of the batch (every layer's
        # queries have the first one's batch and length)
        total64 = once("Cast", [total], f"{base}_total64", to=onnx.TensorProto.INT64)
        if base not in first_query:
            first_query[base] = query
        shape = once("Shape", [first_query[base]], f"{base}_batch_and_new", start=0, end=2)
        new = once("Gather", [shape, constant("gqa_rewrite_one", np.array(1, np.int64))], f"{base}_new", axis=0)
        first = once("Sub", [total64, new], f"{base}_first")
        steps = once("Range", [first, total64, constant("gqa_rewrite_step", np.array(1, np.int64))],
                     f"{base}_range")
        positions = once("Expand", [steps, shape], f"{base}_positions")
        # row b sees keys 0 .. seqlens_k[b]: [batch, 1, 1, total]
        keys = once("Range", [constant("gqa_rewrite_zero", np.array(0, np.int64)), total64,
                              constant("gqa_rewrite_step", np.array(1, np.int64))], f"{base}_keys")
        last = once("Cast", [seqlens_k], f"{base}_last", to=onnx.TensorProto.INT64)
        column = once("Unsqueeze", [last, constant("gqa_rewrite_axis1", np.array([1], np.int64))], f"{base}_column")
        seen = once("LessOrEqual", [keys, column], f"{base}_seen")
        per_row = once("Unsqueeze", [seen, constant("gqa_rewrite_axes12", np.array([1, 2], np.int64))],
                       f"{base}_mask_row")
        # ONNX Runtime's Attention takes a mask with the queries' length, not one broadcast along it
        new_rows = once("Unsqueeze", [new, constant("gqa_rewrite_axis0", np.array([0], np.int64))], f"{base}_new_1d")
        ones = constant("gqa_rewrite_ones2", np.array([1, 1], np.int64))
        spread = once("Concat", [ones, new_rows, constant("gqa_rewrite_one_1d", np.array([1], np.int64))],
                      f"{base}_mask_spread", axis=0)
        mask = once("Expand", [per_row, spread], f"{base}_mask")
        heads, kv_heads = int(attrs["num_heads"]), int(attrs["kv_num_heads"])
        name = node.name or node.output[0]
        q_rotated = rewrite.node("RotaryEmbedding", [query, cos, sin, positions], [f"{name}_q_rotated"],
                                 f"{name}_q_rotary", interleaved=0, num_heads=heads)
        k_rotated = rewrite.node("RotaryEmbedding", [key, cos, sin, positions], [f"{name}_k_rotated"],
                                 f"{name}_k_rotary", interleaved=0, num_heads=kv_heads)
        outputs = list(node.output) + [""] * (3 - len(node.output))
        extra = {"scale": float(attrs["scale"])} if "scale" in attrs else {}
        rewrite.node("Attention", [q_rotated, k_rotated, value, mask, past_key, past_value], outputs[:3],
                     f"{name}_attention", q_num_heads=heads, kv_num_heads=kv_heads, is_causal=0, **extra)
        rewritten += 1
    if rewritten:
        del graph.node[:]
        graph.node.extend(rewrite.nodes)
        for opset in model.opset_import:
            if opset.domain in ("", "ai.onnx") and opset.version < OPSET:
                opset.version = OPSET
        if model.ir_version < 10:
            model.ir_version = 10
    return rewritten
