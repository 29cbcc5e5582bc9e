"""This machine's limit for the backbone: dense GEMM throughput through ONNX Runtime, and a step's FLOPs."""

from __future__ import annotations

import time

import numpy as np


def gemm_throughput(threads: int, m: int = 256, k: int = 1024, n: int = 3072, repeats: int = 20) -> dict:
    """Dense GEMM FLOP/s of ONNX Runtime on this machine: fp32 MatMul and int8 MatMulInteger."""
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    results = {}
    for name, elem, op in (("fp32", TensorProto.FLOAT, "MatMul"), ("int8", TensorProto.UINT8, "MatMulInteger")):
        if elem == TensorProto.FLOAT:
            weight = numpy_helper.from_array(rng.standard_normal((k, n)).astype(np.float32), "w")
            a = rng.standard_normal((m, k)).astype(np.float32)
            out_type = TensorProto.FLOAT
        else:
            weight = numpy_helper.from_array(rng.integers(0, 255, (k, n)).astype(np.uint8), "w")
            a = rng.integers(0, 255, (m, k)).astype(np.uint8)
            out_type = TensorProto.INT32
        graph = helper.make_graph([helper.make_node(op, ["a", "w"], ["y"])], "gemm",
                                  [helper.make_tensor_value_info("a", elem, [m, k])],
                                  [helper.make_tensor_value_info("y", out_type, [m, n])], initializer=[weight])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
        session.run(None, {"a": a})
        best = float("inf")
        for _ in range(3):
            started = time.perf_counter()
            for _ in range(repeats):
                session.run(None, {"a": a})
            best = min(best, (time.perf_counter() - started) / repeats)
        results[name] = 2.0 * m * k * n / best
    return results


def backbone_flops(dims: dict, lengths: list[int]) -> float:
    """FLOPs of one backbone forward over rows of ``lengths`` (matrix products and attention)."""
    hidden, layers = dims["hidden_size"], dims["num_hidden_layers"]
    heads_q = dims.get("num_attention_heads") or 16
    head_dim, kv = dims["head_dim"], dims["num_key_value_heads"]
    inter = dims.get("intermediate_size") or 3 * hidden
    total = 0.0
    for length in lengths:
        projections = 2 * length * hidden * (heads_q * head_dim + 2 * kv * head_dim) + 2 * length * heads_q * head_dim * hidden
        mlp = 3 * 2 * length * hidden * inter
        attention = 2 * 2 * length * length * heads_q * head_dim
        total += layers * (projections + mlp + attention)
    return total
