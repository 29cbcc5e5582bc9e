"""Run an int4 backbone as fp32 MatMuls: the same weights, dequantized once at load.

The int4 backbone's ``MatMulNBits`` (block 32, accuracy level 4: int8
activations) is faster than fp32 on CPUs with AVX-512 VNNI, slower on some
AVX2-only CPUs (issue 10).  ``dequantized_backbone`` turns every 4-bit
``MatMulNBits`` into a ``MatMul`` on ``W[n, k] = (q[n, k] - zero_point) * scale[n, k // block]``
(the operator's own definition; zero point 8 when the graph stores none), so the
weights are exactly those of the int4 folder, at 8x their memory.

The fp32 weights reach ONNX Runtime as ``OrtValue``s through
``SessionOptions.add_external_initializers`` (no 2 GB protobuf limit, no copy
on disk).  Hand-written because ONNX Runtime ships no dequantizing pass for
``MatMulNBits`` (its quantization tools go the other way).
"""

from __future__ import annotations

import pathlib
from typing import Sequence

import numpy as np

from .errors import ModelFolderError


def dequantize_weight(packed: np.ndarray, scales: np.ndarray, k: int, n: int, block: int,
                      zero_points: np.ndarray | None = None) -> np.ndarray:
    """The fp32 ``[K, N]`` MatMul weight of one 4-bit ``MatMulNBits`` (``packed`` uint8 ``[N, blocks, block/2]``)."""
    blocks = packed.shape[1]
    q = np.empty((n, blocks, block), dtype=np.uint8)
    q[..., 0::2] = packed & 0x0F          # the low nibble holds the even element
    q[..., 1::2] = packed >> 4
    if zero_points is None:
        zero = np.float32(8)
    else:
        flat = zero_points.reshape(n, -1)
        nibbles = np.stack([flat & 0x0F, flat >> 4], axis=-1).reshape(n, -1)[:, :blocks]
        zero = nibbles.astype(np.float32)[..., np.newaxis]
    weight = (q.astype(np.float32) - zero) * scales.reshape(n, blocks, 1).astype(np.float32)
    return np.ascontiguousarray(weight.reshape(n, blocks * block)[:, :k].T)


def dequantized_backbone(path: pathlib.Path, providers: Sequence[str], options):
    """An ``InferenceSession`` of the backbone at ``path`` with its 4-bit MatMuls dequantized to fp32.

    Returns ``(session, added_bytes)``: the fp32 weights' bytes (what this costs in memory).
    """
    import onnx
    import onnxruntime as ort
    from onnx import numpy_helper

    try:
        model = onnx.load(str(path))
    except Exception as exc:  # onnx raises its own types
        raise ModelFolderError(f"{path.name} in {path.parent} cannot be read ({str(exc)[:200]}).") from exc
    graph = model.graph
    initializers = {init.name: init for init in graph.initializer}
    names, values, used = [], [], set()
    nodes = []
    for node in graph.node:
        attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
        if node.op_type != "MatMulNBits" or attrs.get("bits", 4) != 4 or node.input[1] not in initializers:
            nodes.append(node)
            continue
        k, n, block = int(attrs["K"]), int(attrs["N"]), int(attrs["block_size"])
        inputs = list(node.input) + [""] * (6 - len(node.input))
        zero_points = numpy_helper.to_array(initializers[inputs[3]]) if inputs[3] else None
        if inputs[4] and inputs[4] in initializers:  # g_idx (act-order): not in our folders
            nodes.append(node)
            continue
        weight = dequantize_weight(numpy_helper.to_array(initializers[inputs[1]]),
                                   numpy_helper.to_array(initializers[inputs[2]]), k, n, block, zero_points)
        name = inputs[1] + "_fp32"
        placeholder = onnx.TensorProto(name=name, data_type=onnx.TensorProto.FLOAT, dims=list(weight.shape))
        placeholder.data_location = onnx.TensorProto.EXTERNAL
        placeholder.external_data.add(key="location", value="dequantized-in-memory")
        graph.initializer.append(placeholder)
        names.append(name)
        values.append(ort.OrtValue.ortvalue_from_numpy(weight))
        used.update(x for x in inputs[1:4] if x)
        matmul_out = node.output[0] + ("_nobias" if inputs[5] else "")
        nodes.append(onnx.helper.make_node("MatMul", [inputs[0], name], [matmul_out], name=node.name + "_fp32"))
        if inputs[5]:
            nodes.append(onnx.helper.make_node("Add", [matmul_out, inputs[5]], [node.output[0]],
                                               name=node.name + "_bias"))
    del graph.node[:]
    graph.node.extend(nodes)
    still_used = {x for node in nodes for x in node.input}
    kept = [init for init in graph.initializer if init.name not in used or init.name in still_used]
    del graph.initializer[:]
    graph.initializer.extend(kept)
    options.add_external_initializers(names, values)
    session = ort.InferenceSession(model.SerializeToString(), sess_options=options, providers=list(providers))
    return session, sum(int(np.prod(v.shape())) * 4 for v in values)


BACKBONE_MODES = ("int4", "fp32", "auto")


def has_int4_matmuls(path: pathlib.Path) -> bool:
    import onnx

    graph = onnx.load(str(path), load_external_data=False).graph
    return any(node.op_type == "MatMulNBits" for node in graph.node)


def choose_backbone(model, mode: str, path: pathlib.Path, providers: Sequence[str], options_factory,
                    probe_length: int = 64) -> dict:
    """Set ``model.backbone`` for ``mode`` and say what was chosen.

    ``int4``: the graph as built.  ``fp32``: its 4-bit MatMuls dequantized
    (``dequantized_backbone``).  ``auto``: both timed on a ``probe_length``
    forward (best of two each), the faster kept.  A folder without 4-bit
    MatMuls keeps its graph whatever the mode.  Returns ``{"mode", "compute",
    "added_mb", "probe_s"}``.
    """
    from .errors import InvalidInput

    if mode not in BACKBONE_MODES:
        raise InvalidInput(f"backbone must be one of {', '.join(BACKBONE_MODES)}, got {mode!r}.", param="backbone")
    info = {"mode": mode, "compute": "as built", "added_mb": 0.0, "probe_s": {}}
    if mode == "int4" or not has_int4_matmuls(path):
        return info
    built = model.backbone
    dequantized, added = dequantized_backbone(path, providers, options_factory())
    if mode == "auto":
        embeds = np.zeros((1, probe_length, model.hidden_size), dtype=np.float32)
        for label, session in (("int4", built), ("fp32", dequantized)):
            model.backbone = session
            info["probe_s"][label] = round(_best_of(model, embeds, probe_length), 4)
        if info["probe_s"]["int4"] <= info["probe_s"]["fp32"]:
            model.backbone = built
            info["compute"] = "int4 (measured faster)"
            return info
    model.backbone = dequantized
    info.update(compute="fp32 (int4 weights dequantized at load)", added_mb=round(added / 2**20, 1))
    return info


def _best_of(model, embeds, length: int, repeats: int = 2) -> float:
    import time

    model.hidden_states(embeds, [length])  # the first run pays one-off costs
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        model.hidden_states(embeds, [length])
        best = min(best, time.perf_counter() - started)
    return best
