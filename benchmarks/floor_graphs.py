"""The graphs ``step_floor.py`` times, cut out of a dense 8-bit backbone: its weight products chained in one graph
(``chained_products_model``), the same products as the build computes them from fp32 activations
(``built_products_model``), one product alone (``single_product_model``), and the folder's attention node
alone in both of its forms (``attention_models``).  Each graph's outputs end in one-element ``Slice``s so
that ONNX Runtime prunes nothing; what they measure and why is ``step_floor.py``'s docstring.
"""

from __future__ import annotations

import collections

import numpy as np

WEIGHT_PRODUCT = "MatMulIntegerToFloat"
ATTENTION = "GroupQueryAttention"
OPSETS = [("", 17), ("com.microsoft", 1)]


def make_model(nodes, name, inputs, outputs, initializers, opsets=OPSETS):
    from onnx import helper

    graph = helper.make_graph(nodes, name, inputs, outputs, initializers)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid(domain, version) for domain, version in opsets])


def products_of(graph) -> list:
    """The graph's weight products in its order: ``(node, K, N)``."""
    shapes = {init.name: tuple(init.dims) for init in graph.initializer}
    found = [(node, *shapes[node.input[1]]) for node in graph.node if node.op_type == WEIGHT_PRODUCT]
    if not found:
        raise SystemExit(f"the graph has no {WEIGHT_PRODUCT} nodes: give a dense 8-bit backbone "
                         "(int8-row, int8 or int8-tensor, built into the cache by the engine)")
    return found


def chained_products_model(graph):
    """Every weight product of ``graph`` in its order, with its own weights and scales, in one graph.

    Each product reads a graph input of int8 codes ``a<K>`` (``[rows, K]``, rows symbolic); each output ends
    in a one-element ``Slice``, and the slices are concatenated into the one output, so no product is pruned
    and the session runs them one after another as the backbone does, streaming its weights in order."""
    from onnx import TensorProto, helper, numpy_helper

    initializers = {init.name: init for init in graph.initializer}
    nodes, used, widths = [], {}, set()
    starts, ends, axes = (numpy_helper.from_array(np.array(v, np.int64), n)
                          for v, n in (([0, 0], "slice_starts"), ([1, 1], "slice_ends"), ([0, 1], "slice_axes")))
    slices = []
    for index, (node, k, _n) in enumerate(products_of(graph)):
        widths.add(k)
        for name in node.input[1:]:
            if name and name not in initializers:
                raise SystemExit(f"{node.name}: its input {name} is computed, not a constant: the chain needs "
                                 "the graph's scales and zero points as initializers")
            if name:
                used[name] = initializers[name]
        product = helper.make_node(WEIGHT_PRODUCT, [f"a{k}", *node.input[1:]], [f"y{index}"],
                                   domain="com.microsoft", name=f"product{index}")
        nodes += [product, helper.make_node("Slice", [f"y{index}", "slice_starts", "slice_ends", "slice_axes"],
                                            [f"s{index}"])]
        slices.append(f"s{index}")
    nodes.append(helper.make_node("Concat", slices, ["out"], axis=0))
    inputs = [helper.make_tensor_value_info(f"a{k}", TensorProto.UINT8, ["rows", k]) for k in sorted(widths)]
    return make_model(nodes, "chained_products", inputs,
                      [helper.make_tensor_value_info("out", TensorProto.FLOAT, [len(slices), 1])],
                      [*used.values(), starts, ends, axes])


def built_products_model(model):
    """Every weight product of ``model``'s graph as the build computes it, from its activation in fp32 to its output, in
    one graph: the product and what the arithmetic adds around it (``precision.emit``: the rows' reshape, the
    outlier channels zeroed, one activation scale per row, the row scale, the outlier channels' fp32 product, the
    reshape back), copied from the graph itself, in its order.

    Everything else a forward runs (norms, rotary, attention, the gate's SiLU, the residual adds, the ``Split``)
    is left out.  Each activation the products read (the input of a rows ``Reshape``: ``Rewrite.flat``) becomes
    the graph input ``x<K>`` of its width (``[1, rows, K]`` fp32), shared by every activation of that width, and
    each product's output ends in a one-element ``Slice`` as in ``chained_products_model``.  Its time beside the
    chained products' says what the per-row arithmetic costs in this runtime's operators; the rest of a forward's
    distance to its floor is outside the products."""
    from onnx import TensorProto, helper, numpy_helper

    graph = model.graph
    initializers = {init.name: init for init in graph.initializer}
    producer = {output: node for node in graph.node for output in node.output}
    consumers: dict[str, list] = collections.defaultdict(list)
    for node in graph.node:
        for name in node.input:
            consumers[name].append(node)
    # the activations: what each rows reshape reads, and the width its shape constant gives
    width = {}
    for node in graph.node:
        if node.op_type == "Reshape" and node.output[0] == f"{node.input[0]}_rows" and node.input[1] in initializers:
            width[node.input[0]] = int(numpy_helper.to_array(initializers[node.input[1]])[-1])
    ends = []
    for node, _k, _n in products_of(graph):
        end = node
        while end.op_type != "Reshape":  # the row scale's Mul, the outlier channels' Gemm, then the reshape back
            (end,) = consumers[end.output[0]]
        ends.append(end.output[0])
    needed, pending = {}, list(ends)
    while pending:  # the nodes between the activations and the products' outputs
        name = pending.pop()
        node = producer.get(name)
        if name in width or node is None or id(node) in needed:
            continue
        needed[id(node)] = node
        pending.extend(x for x in node.input if x)
    nodes = []
    for node in graph.node:
        if id(node) in needed:
            copied = helper.make_node(node.op_type, [f"x{width[x]}" if x in width else x for x in node.input],
                                      list(node.output), name=node.name, domain=node.domain or None)
            copied.attribute.extend(node.attribute)
            nodes.append(copied)
    used = {x for node in nodes for x in node.input if x in initializers}
    starts, ends_1, axes = (numpy_helper.from_array(np.array(v, np.int64), n)
                            for v, n in (([0, 0, 0], "slice_starts"), ([1, 1, 1], "slice_ends"),
                                         ([0, 1, 2], "slice_axes")))
    slices = []
    for index, end in enumerate(ends):
        nodes.append(helper.make_node("Slice", [end, "slice_starts", "slice_ends", "slice_axes"], [f"s{index}"]))
        slices.append(f"s{index}")
    nodes.append(helper.make_node("Concat", slices, ["out"], axis=0))
    inputs = [helper.make_tensor_value_info(f"x{k}", TensorProto.FLOAT, [1, "rows", k])
              for k in sorted(set(width.values()))]
    return make_model(nodes, "built_products", inputs,
                      [helper.make_tensor_value_info("out", TensorProto.FLOAT, [len(slices), 1, 1])],
                      [*(initializers[name] for name in sorted(used)), starts, ends_1, axes],
                      [(entry.domain, entry.version) for entry in model.opset_import])


def single_product_model(k: int, n: int):
    """One ``MatMulIntegerToFloat`` of ``K x N`` random int8 weights, activations as the graph's per-row codes."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    return make_model(
        [helper.make_node(WEIGHT_PRODUCT, ["a", "w", "a_scale", "w_scale", "a_zero"], ["y"], domain="com.microsoft")],
        "product", [helper.make_tensor_value_info("a", TensorProto.UINT8, ["rows", k])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["rows", n])],
        [numpy_helper.from_array(rng.integers(-127, 128, (k, n), dtype=np.int8), "w"),
         numpy_helper.from_array(np.float32(0.01), "a_scale"),
         numpy_helper.from_array(np.full(n, 0.01, np.float32), "w_scale"),
         numpy_helper.from_array(np.uint8(128), "a_zero")])  # as the graph's per-row codes: uint8, zero point 128


def attention_node(graph, attention_graph) -> tuple:
    """The first attention node of ``attention_graph`` (a folder's own backbone: genai's ``GroupQueryAttention``),
    with its rotary caches from ``graph`` (the build measured, whose rewritten attention keeps them):
    ``(node, attributes, rotary caches, head size)``."""
    from onnx import helper

    node = next((node for node in attention_graph.node if node.op_type == ATTENTION), None)
    if node is None:
        raise SystemExit(f"the folder's backbone has no {ATTENTION} node")
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    initializers = {init.name: init for init in graph.initializer}
    caches = [initializers[name] for name in node.input[7:9] if name in initializers]
    if len(caches) != 2:
        raise SystemExit("the attention node's rotary caches are not among the graph's initializers")
    return node, attrs, caches, int(caches[0].dims[1]) * 2  # the caches hold half a head's angles


def attention_models(graph, attention_graph) -> tuple:
    """The folder's first attention node alone, rows and past symbolic, in both forms: genai's node as exported and
    rewritten in ONNX's own operators (``backbones/attention.py``, what a rebuilt backbone runs):
    ``({form: model}, heads, kv heads, head size)``."""
    import copy

    from onnx import TensorProto, helper

    from omnivoice_demo.backbones.attention import rewrite_attention

    node, attrs, caches, head_dim = attention_node(graph, attention_graph)
    heads, kv_heads = int(attrs["num_heads"]), int(attrs["kv_num_heads"])
    names = ["q", "k", "v", "past_k", "past_v", "seqlens_k", "total", *[c.name for c in caches]]
    inputs = [helper.make_tensor_value_info("q", TensorProto.FLOAT, [1, "rows", heads * head_dim]),
              helper.make_tensor_value_info("k", TensorProto.FLOAT, [1, "rows", kv_heads * head_dim]),
              helper.make_tensor_value_info("v", TensorProto.FLOAT, [1, "rows", kv_heads * head_dim]),
              helper.make_tensor_value_info("past_k", TensorProto.FLOAT, [1, kv_heads, "past", head_dim]),
              helper.make_tensor_value_info("past_v", TensorProto.FLOAT, [1, kv_heads, "past", head_dim]),
              helper.make_tensor_value_info("seqlens_k", TensorProto.INT32, [1]),
              helper.make_tensor_value_info("total", TensorProto.INT32, [])]
    gqa = helper.make_node(ATTENTION, names, ["out", "present_k", "present_v"], domain="com.microsoft", **attrs)
    model = make_model([gqa], "attention", inputs, [helper.make_tensor_value_info("out", TensorProto.FLOAT, None)],
                       caches)
    standard = copy.deepcopy(model)
    rewrite_attention(standard)
    return {"genai": model, "standard": standard}, heads, kv_heads, head_dim
