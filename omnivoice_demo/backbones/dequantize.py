"""Run an int4 backbone as fp32 MatMuls: the same weights, dequantized once at load.

Whether the int4 backbone's ``MatMulNBits`` (block 32, accuracy level 4: int8 activations) or fp32
MatMuls are faster depends on the CPU (its kernels and instruction sets), so
``choice.choose_backbone(mode="auto")`` measures on the machine that runs it; the measurements, with their
machines and commands (``benchmarks/profile_backbone.py``): BENCHMARKS.md, "The int4 backbone against fp32:
per-operator profile".

``dequantize_weight`` gives each 4-bit ``MatMulNBits`` its ``MatMul`` weight
``W[n, k] = (q[n, k] - zero_point) * scale[n, k // block]`` (the operator's own
definition; zero point 8 when the graph stores none), so the weights are exactly
those of the int4 folder, at 8x their memory; the products differ slightly, as
``MatMulNBits`` at accuracy level 4 rounds the activations to int8 and fp32 does not.

``builds.dequantized_backbone`` rewrites the graph with
``backbone_precision.rebuild`` (which also makes the 8-bit choices); the fp32
weights reach ONNX Runtime as ``OrtValue``s through
``SessionOptions.add_external_initializers`` (no 2 GB protobuf limit, no copy
on disk).  Hand-written because ONNX Runtime ships no dequantizing pass for
``MatMulNBits`` (its quantization tools go the other way).
"""

from __future__ import annotations

import pathlib

import numpy as np


def dequantize_weight(packed: np.ndarray, scales: np.ndarray, k: int, n: int, block: int,
                      zero_points: np.ndarray | None = None) -> np.ndarray:
    """The fp32 ``[K, N]`` MatMul weight of one 4-bit ``MatMulNBits`` (``packed`` uint8 ``[N, blocks, block/2]``).

    Built in ``[K, N]`` order directly: the 4-bit codes are unpacked and
    transposed as bytes, then scaled in one float pass (a quarter of the
    memory traffic of transposing the float weight).
    """
    blocks = packed.shape[1]
    q = np.empty((n, blocks, block), dtype=np.uint8)
    q[..., 0::2] = packed & 0x0F          # the low nibble holds the even element
    q[..., 1::2] = packed >> 4
    q_t = np.ascontiguousarray(q.reshape(n, blocks * block).T).reshape(blocks, block, n)
    scale_t = np.ascontiguousarray(scales.reshape(n, blocks).T.astype(np.float32))[:, np.newaxis, :]
    weight = np.empty((blocks, block, n), dtype=np.float32)
    if zero_points is None:
        np.subtract(q_t, np.float32(8), out=weight, dtype=np.float32)
    else:
        flat = zero_points.reshape(n, -1)
        nibbles = np.stack([flat & 0x0F, flat >> 4], axis=-1).reshape(n, -1)[:, :blocks]
        np.subtract(q_t, nibbles.T.astype(np.float32)[:, np.newaxis, :], out=weight, dtype=np.float32)
    weight *= scale_t
    weight = weight.reshape(blocks * block, n)
    return weight if blocks * block == k else np.ascontiguousarray(weight[:k])


def alternated_best(runs: dict, repeats: int) -> dict:
    """Best seconds of each of ``runs`` (callables) over ``repeats`` rounds that take turns between them.

    On a shared cloud VM one forward's time varied by +-25% from run to run:
    taking turns lets a slow moment of the machine hit every variant, and the
    best of the rounds is the least disturbed.  A first round pays the
    one-off costs (allocations, prepacking) and is not counted.
    """
    import time

    best = dict.fromkeys(runs, float("inf"))
    for round_ in range(repeats + 1):
        for label, run in runs.items():
            started = time.perf_counter()
            run()
            if round_:
                best[label] = min(best[label], time.perf_counter() - started)
    return best


def resident_mb() -> float:
    """This process's resident memory now (Linux ``/proc``; 0 where it cannot be read)."""
    import os

    try:
        pages = int(pathlib.Path("/proc/self/statm").read_text().split()[1])
    except (OSError, ValueError, IndexError):
        return 0.0
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20
