"""The backbone's weight products rebuilt in another precision: fp32 from int4, and three 8-bit forms.

The backbone's time is almost all in its weight products (``MatMul`` in an
fp32 folder, 4-bit ``MatMulNBits`` in an int4 one: ~87%, ``benchmarks/profile_backbone.py``).
Each choice below rewrites exactly those nodes and keeps everything else of
the graph but its attention, which every rebuilt graph computes in ONNX's own
``Attention`` and ``RotaryEmbedding`` instead of genai's ``GroupQueryAttention``:
the same numbers to the bit, faster (``attention.py``), ``causal=0`` kept (the
engine's bidirectional check runs on the result as on any backbone):

``fp32``        ``MatMul`` on the weights; from an int4 folder, its 4-bit weights dequantized.
``int8-block``  8-bit ``MatMulNBits``, block 32, accuracy level 4 (int8 activations with one
                scale per row and block of 32 channels, as the int4 graph computes).  From an
                int4 folder the 4-bit weights are re-encoded without loss (8-bit code
                ``16*(q-8)``, scale/16): the int4 model's arithmetic on a faster kernel.
``int8``        dense int8 ``DynamicQuantizeMatMul`` (weights int8 with one scale per output
                channel, activations uint8 with one scale per tensor), with the few input
                channels that carry outliers (found on a calibration forward) kept apart in
                fp32 (LLM.int8()'s decomposition), so one loud channel cannot flatten the
                others' precision.
``int8-row``    the same with one activation scale per row (token): ``MatMulIntegerToFloat`` on
                codes from ``QuantizeLinear`` with one scale per row (``Abs`` and ``ReduceMax`` find
                it: ONNX has no per-row dynamic quantizer), for outliers that come and go with the token.
``int8-tensor`` dense int8 as ``onnxruntime.quantization.quantize_dynamic`` makes it
                (``DynamicQuantizeMatMul``: one activation scale per tensor, nothing kept apart);
                the fastest, and the one outlier channels break: below int4 from an int4 folder's
                weights, so ``auto`` never chooses it there (from the original weights it is above).

From an int4 folder every choice starts from the dequantized 4-bit weights,
so none is better than the int4 model's weights (only its arithmetic can be).

Hand-written rather than ``quantize_dynamic`` / ``MatMulNBitsQuantizer``:
those start from an fp32 graph on disk, while an int4 folder's weights are
4-bit (the published folders have no fp32 backbone), the lossless 8-bit
re-encoding exists in neither, and neither splits outlier channels.
"""

from __future__ import annotations

import dataclasses
import pathlib
from typing import Any, Callable, Optional, Sequence

import numpy as np

from .attention import rewrite_attention
from .dequantize import dequantize_weight
from .graph_builder import GraphBuilder
from ..errors import InvalidInput, ModelFolderError

#: the precisions this module builds (``as built`` is the folder's own graph)
PRECISIONS = ("fp32", "int8-block", "int8", "int8-row", "int8-tensor")

#: the graph's metadata key that records what a rebuilt backbone computes in
METADATA_KEY = "omnivoice_backbone_precision"

#: block of the 8-bit ``MatMulNBits`` (the int4 graphs' block: re-encoding keeps their scales)
BLOCK = 32



@dataclasses.dataclass
class WeightProduct:
    """One weight product of the graph: ``y = x @ W (+ bias)`` with ``W`` ``[K, N]`` a constant."""

    node: Any                          # the onnx NodeProto (onnx is imported when needed)
    k: int
    n: int
    weight: Callable[[], np.ndarray]   # the fp32 ``[K, N]`` weight
    int4: Optional[Callable[[], tuple]] = None  # (packed, scales) of a symmetric 4-bit MatMulNBits, block ``BLOCK``
    bias: str = ""

    @property
    def activation(self) -> str:
        return self.node.input[0]

    @property
    def output(self) -> str:
        return self.node.output[0]


#: bump when the rebuilt graphs change, so cached builds of an older form are not reused and ``auto`` measures its
#: choices again (our cache's keys and the remembered ``auto`` choice carry it).  6: attention in ONNX's own
#: operators (``attention.rewrite_attention``)
BUILD_VERSION = 6

#: bump when what a rebuilt 8-bit graph computes changes, not only how (the render key carries it: audio made
#: by an older arithmetic is made again).  Build 6 computes what build 5 did, to the bit where it was measured
#: (the tiny backbone in ``tests/test_backbone_attention.py``; the full-size one at 125-450 rows by
#: ``benchmarks/attention_forms.py``, BENCHMARKS.md), so it stays 5: a user who doubts it on another CPU runs
#: ``attention_forms`` on their folder, which exits 1 where the two forms differ.
ARITHMETIC_VERSION = 5


def weight_products(graph, source: Optional[dict] = None) -> list[WeightProduct]:
    """The graph's constant-weight products: fp32 ``MatMul`` and 4-bit ``MatMulNBits``.

    Nothing is read until asked (``weight``, ``int4``), so a graph loaded without its
    external data serves for the names and shapes alone (``outlier_channels``).  ``source``
    maps initializer names to loaders of their values where the graph holds placeholders
    (``checkpoint.fp32_graph``: the weights come from the original checkpoint)."""
    import onnx
    from onnx import numpy_helper

    initializers = {init.name: init for init in graph.initializer}
    source = source or {}

    def value(name):
        if not name:
            return None
        return source[name]() if name in source else numpy_helper.to_array(initializers[name])

    found = []
    for node in graph.node:
        if node.op_type == "MatMul" and node.input[1] in initializers:
            init = initializers[node.input[1]]
            if len(init.dims) == 2 and init.data_type == onnx.TensorProto.FLOAT:
                found.append(WeightProduct(node, int(init.dims[0]), int(init.dims[1]),
                                           lambda name=init.name: value(name)))
        elif node.op_type == "MatMulNBits":
            attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
            inputs = list(node.input) + [""] * (6 - len(node.input))
            if attrs.get("bits", 4) != 4 or inputs[1] not in initializers or (inputs[4] and inputs[4] in initializers):
                continue  # another width, a weight fed at run time, or act-order (g_idx): left as it is
            k, n, block = int(attrs["K"]), int(attrs["N"]), int(attrs["block_size"])
            lossless = block == BLOCK and k % BLOCK == 0 and not inputs[3]  # symmetric: zero point 8
            found.append(WeightProduct(
                node, k, n, lambda i=inputs, k=k, n=n, b=block: dequantize_weight(value(i[1]), value(i[2]), k, n, b,
                                                                                  value(i[3])),
                int4=(lambda i=inputs: (value(i[1]), value(i[2]))) if lossless else None, bias=inputs[5]))
    return found


def graph_precision(path: pathlib.Path) -> str:
    """What the backbone graph at ``path`` computes in: ``int4``, ``fp32``, or one of the 8-bit forms
    (as ``rebuild`` recorded it in the graph's metadata)."""
    import onnx

    model = onnx.load(str(path), load_external_data=False)
    recorded = {prop.key: prop.value for prop in model.metadata_props}.get(METADATA_KEY)
    if recorded in PRECISIONS:
        return recorded
    four_bit = any(node.op_type == "MatMulNBits" and next((a.i for a in node.attribute if a.name == "bits"), 4) == 4
                   for node in model.graph.node)
    return "int4" if four_bit else "fp32"


# --- the rewrite ---------------------------------------------------------------------------

class Rewrite(GraphBuilder):
    """``GraphBuilder`` with the activation's steps the 8-bit products share: inliers, rows, one scale per row."""

    def __init__(self, keep: Optional[Callable[[str, np.ndarray], None]] = None):
        super().__init__(keep)
        self._row_quantized: dict[str, tuple[str, str]] = {}

    def inliers(self, x: str, keep_apart: Sequence[int], k: int) -> str:
        """``x`` with the channels ``keep_apart`` zeroed (made once per activation)."""
        if not len(keep_apart):
            return x
        keep = np.ones(k, dtype=np.float32)
        keep[list(keep_apart)] = 0.0
        return self.once("Mul", [x, self.constant(f"{x}_keep", keep)], f"{x}_inliers")

    def flat(self, x: str, k: int) -> str:
        """``x`` as rows ``[R, k]`` (a ``Reshape``, no copy; made once per activation)."""
        return self.once("Reshape", [x, self.constant(f"{x}_rows_shape", np.array([-1, k], np.int64))], f"{x}_rows")

    def shaped_like(self, rows: str, x: str, n: int, out: str) -> str:
        """``rows`` ``[R, n]`` reshaped to ``x``'s leading dimensions and ``n``."""
        lead = self.once("Shape", [x], f"{x}_lead", end=-1)
        shape = self.once("Concat", [lead, self.constant(f"{x}_n_{n}", np.array([n], np.int64))], f"{x}_lead_{n}",
                          axis=0)
        return self.node("Reshape", [rows, shape], [out], f"{out}_reshape")

    def row_quantized(self, rows: str) -> tuple[str, str]:
        """``(codes, row_scale)`` of the activation rows ``rows`` ``[R, K]``: uint8 codes
        ``rint(x * 127/m) + 128`` (``QuantizeLinear`` with one scale per row: round half to even,
        zero point 128) with ``m`` the row's largest magnitude, and ``row_scale = m / 127`` ``[R, 1]``
        (made once per activation; three passes over ``x``: ``Abs``, ``ReduceMax``, ``QuantizeLinear``.
        The elementwise form before it took six and cost as much as the int8 products themselves)."""
        if rows not in self._row_quantized:
            base = f"{rows}_q8"
            magnitude = self.node("Abs", [rows], [f"{base}_abs"], f"{base}_abs")
            peak = self.node("ReduceMax", [magnitude, self.constant(f"{base}_axis", np.array([1], np.int64))],
                             [f"{base}_peak"], f"{base}_peak", keepdims=0)
            peak = self.node("Max", [peak, self.constant(f"{base}_floor", np.array(1e-12, np.float32))],
                             [f"{base}_peak_floored"], f"{base}_peak_floored")
            scale = self.node("Div", [peak, self.constant(f"{base}_127", np.array(127.0, np.float32))],
                              [f"{base}_scale"], f"{base}_scale")
            # per-axis QuantizeLinear wants a zero point per row too: 128 for each, uint8 (u8s8 is VNNI's product)
            count = self.node("Shape", [scale], [f"{base}_count"], f"{base}_count")
            zero = self.node("Expand", [self.constant(f"{base}_128", np.array(128, np.uint8)), count],
                             [f"{base}_zero"], f"{base}_zero")
            codes = self.node("QuantizeLinear", [rows, scale, zero], [f"{base}_codes"], f"{base}_codes", axis=0)
            row_scale = self.node("Unsqueeze", [scale, self.constant(f"{base}_column", np.array([1], np.int64))],
                                  [f"{base}_row_scale"], f"{base}_row_scale")
            self._row_quantized[rows] = (codes, row_scale)
        return self._row_quantized[rows]


def int8_columns(weight: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Symmetric int8 codes of ``weight`` ``[K, N]`` with one scale per output column."""
    scale = np.maximum(np.abs(weight).max(axis=0), 1e-12) / 127.0
    return np.clip(np.rint(weight / scale), -127, 127).astype(np.int8), scale.astype(np.float32)


def int8_blocks(product: WeightProduct) -> tuple[np.ndarray, np.ndarray]:
    """8-bit ``MatMulNBits`` codes ``[N, K/32, 32]`` (zero point 128) and scales ``[N * K/32]``."""
    blocks = product.k // BLOCK
    if product.int4 is not None:
        # lossless: w = (q - 8) * s = (16 * (q - 8) + 128 - 128) * (s / 16), codes in [0, 240]
        packed, scales = product.int4()
        q = np.empty((product.n, blocks, BLOCK), dtype=np.int16)
        q[..., 0::2] = packed & 0x0F
        q[..., 1::2] = packed >> 4
        codes = (16 * (q - 8) + 128).astype(np.uint8)
        return codes, (scales.astype(np.float32) / 16.0).reshape(-1)
    w = np.ascontiguousarray(product.weight().T).reshape(product.n, blocks, BLOCK)
    scale = np.maximum(np.abs(w).max(axis=-1), 1e-12) / 127.0
    codes = (np.clip(np.rint(w / scale[..., np.newaxis]), -127, 127) + 128).astype(np.uint8)
    return codes, scale.astype(np.float32).reshape(-1)


def emit(rewrite: Rewrite, product: WeightProduct, precision: str, outliers: Sequence[int] = ()) -> None:
    """The nodes computing ``product`` in ``precision`` (its output name unchanged)."""
    name = product.node.name or product.output
    x = product.activation
    out = product.output + ("_nobias" if product.bias else "")
    if precision == "fp32":
        rewrite.node("MatMul", [x, rewrite.constant(f"{name}_w_fp32", product.weight())], [out], f"{name}_fp32")
    elif precision == "int8-block":
        codes, scales = int8_blocks(product)
        rewrite.node("MatMulNBits", [x, rewrite.constant(f"{name}_w_q8", codes), rewrite.constant(f"{name}_s_q8", scales)],
                     [out], f"{name}_q8", domain="com.microsoft", K=product.k, N=product.n, bits=8, block_size=BLOCK,
                     accuracy_level=4)
    elif precision == "int8-tensor":
        codes, scales = int8_columns(product.weight())
        rewrite.node("DynamicQuantizeMatMul", [x, rewrite.constant(f"{name}_w_i8", codes),
                                               rewrite.constant(f"{name}_s_i8", scales)],
                     [out], f"{name}_i8t", domain="com.microsoft")
    elif precision in ("int8", "int8-row"):
        # on rows [R, K]: QuantizeLinear takes one scale per row only along one axis, Gemm only 2-D inputs
        weight = product.weight()
        codes, scales = int8_columns(weight)
        w_codes, w_scales = rewrite.constant(f"{name}_w_i8", codes), rewrite.constant(f"{name}_s_i8", scales)
        rows = rewrite.flat(x, product.k)
        inliers = rewrite.inliers(rows, outliers, product.k)
        if precision == "int8":
            y = rewrite.node("DynamicQuantizeMatMul", [inliers, w_codes, w_scales], [f"{name}_i8_rows"], f"{name}_i8",
                             domain="com.microsoft")
        else:
            x_codes, row_scale = rewrite.row_quantized(inliers)
            unscaled = rewrite.node("MatMulIntegerToFloat",
                                    [x_codes, w_codes, rewrite.constant(f"{name}_one", np.array(1.0, np.float32)),
                                     w_scales, rewrite.constant(f"{name}_zp", np.array(128, np.uint8))],
                                    [f"{name}_i8_unscaled"], f"{name}_i8r", domain="com.microsoft")
            y = rewrite.node("Mul", [unscaled, row_scale], [f"{name}_i8_rows"], f"{name}_i8_rows")
        if len(outliers):
            # the channels kept apart, in fp32, added by their own product (Gemm's C input: no separate Add pass)
            index = rewrite.constant(f"{name}_outlier_index", np.asarray(outliers, dtype=np.int64))
            apart = rewrite.node("Gather", [rows, index], [f"{name}_outlier_x"], f"{name}_outlier_x", axis=1)
            y = rewrite.node("Gemm", [apart, rewrite.constant(f"{name}_outlier_w",
                                                              np.ascontiguousarray(weight[list(outliers)])), y],
                             [f"{name}_i8_all"], f"{name}_outlier_gemm")
        rewrite.shaped_like(y, x, product.n, out)
    else:
        raise InvalidInput(f"backbone precision must be one of {', '.join(PRECISIONS)}, got {precision!r}.",
                           param="backbone")
    if product.bias:
        rewrite.node("Add", [out, product.bias], [product.output], f"{name}_bias")


def rebuild(model, precision: str, outliers: Optional[dict[str, list[int]]] = None,
            source: Optional[dict] = None, store: Optional[Callable] = None,
            standard_attention: bool = True) -> dict[str, np.ndarray]:
    """Rewrite ``model`` (an onnx ModelProto, changed in place) to compute its weight products in ``precision``.

    Returns the new constants (name -> array), which are not in the graph:
    the caller adds them as initializers or hands them to
    ONNX Runtime in memory (``in_memory_session``).  ``outliers`` maps an
    activation name to its input channels kept apart in fp32 (``int8`` and ``int8-row``); ``source``
    as ``weight_products`` takes it.  The shapes recorded of the weights it replaces go with them.

    With ``store``, the constants are initializers of the graph instead, in the order an ``onnx.save_model``
    of the result writes them (the graph's kept initializers, then the new ones as they were made), each
    handed to ``store`` (a TensorProto) as soon as it is final, so the caller can write its data out then
    (``builds.write_rebuilt``): one product's weights are in memory at a time, not all of them.  Returns {}.

    The graph's attention is rewritten in ONNX's own operators (``attention.rewrite_attention``: the same numbers,
    faster) unless ``standard_attention`` is False (``benchmarks/attention_forms.py`` times both).
    """
    import onnx
    from onnx import numpy_helper

    graph = model.graph
    if standard_attention:  # first: its few small constants are then among the graph's kept initializers
        rewrite_attention(model)
    products = {id(p.node): p for p in weight_products(graph, source)}
    if not products:
        raise ModelFolderError("The backbone has no weight products to rebuild (no fp32 MatMul or 4-bit MatMulNBits "
                               "with constant weights).")
    original = list(graph.node)
    # the products' weights, scales and zero points go, unless another node reads them too (the new nodes
    # read only new constants, the activations and a bias)
    replaced = {x for p in products.values() for x in list(p.node.input)[1:4] if x}
    gone = replaced - {x for node in original if id(node) not in products for x in node.input}
    kept = [init for init in graph.initializer if init.name not in gone]
    made, keep = [], None
    if store is not None:
        for init in kept:
            store(init)

        def keep(name, value):
            tensor = numpy_helper.from_array(value, name)
            store(tensor)
            made.append(onnx.TensorProto())
            made[-1].CopyFrom(tensor)  # without the data it had: a cleared field keeps its memory until its message goes
    rewrite = Rewrite(keep)
    for node in original:
        product = products.get(id(node))
        if product is None:
            rewrite.nodes.append(node)
            continue
        emit(rewrite, product, precision, (outliers or {}).get(product.activation, ()))
    described = [info for info in graph.value_info if info.name not in gone]
    nodes = list(rewrite.nodes)
    del graph.node[:]
    graph.node.extend(nodes)
    del graph.initializer[:]
    graph.initializer.extend(kept + made)
    del graph.value_info[:]
    graph.value_info.extend(described)
    if any(n.domain == "com.microsoft" for n in nodes) and not any(o.domain == "com.microsoft" for o in model.opset_import):
        model.opset_import.add(domain="com.microsoft", version=1)
    del model.metadata_props[:]
    model.metadata_props.add(key=METADATA_KEY, value=precision)
    return rewrite.constants
