"""Run an int4 backbone as fp32 MatMuls: the same weights, dequantized once at load.

The int4 backbone's ``MatMulNBits`` (block 32, accuracy level 4: int8
activations) was 1.34x faster than fp32 on the AMD EPYC where BENCHMARKS.md's
first tables were made, 14% slower on an AVX2-only EPYC (issue 10), and 4-36%
slower on this project's AVX-512 VNNI / AMX Xeon (``benchmarks/profile_backbone.py``):
which is faster depends on the CPU, so ``choose_backbone(mode="auto")`` measures.

``dequantized_backbone`` turns every 4-bit ``MatMulNBits`` into a ``MatMul`` on
``W[n, k] = (q[n, k] - zero_point) * scale[n, k // block]`` (the operator's own
definition; zero point 8 when the graph stores none), so the weights are exactly
those of the int4 folder, at 8x their memory; the products differ slightly, as
``MatMulNBits`` at accuracy level 4 rounds the activations to int8 and fp32 does not.

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

#: ``auto`` keeps the int4 graph unless fp32 is faster by more than this share: int4 holds 1/8 of the
#: memory, and a near tie should not flip between loads (issue 10: never more than 5% slower than fp32)
FP32_MARGIN = 0.05

#: rows of the probe forward: between a 5 s auto-voice step's conditional row (~275) and a
#: paragraph's (~700)
PROBE_POSITIONS = 384


def has_int4_matmuls(path: pathlib.Path) -> bool:
    import onnx

    graph = onnx.load(str(path), load_external_data=False).graph
    return any(node.op_type == "MatMulNBits" for node in graph.node)


def backbone_probe(model, sessions: dict, positions: int = PROBE_POSITIONS, repeats: int = 5) -> dict[str, float]:
    """Seconds of one backbone forward over ``positions`` rows with each of ``sessions`` (best of ``repeats``).

    The whole graph, not its MatMuls alone: timed one by one, the int4 and
    fp32 products came out even on an AVX-512 VNNI Xeon, while the whole
    forward ran 4-36% faster in fp32 (``benchmarks/profile_backbone.py``).
    About half a minute at full size, once per machine (``choose_backbone``
    remembers the outcome).
    """
    embeds = (0.02 * np.random.default_rng(0).standard_normal((1, positions, model.hidden_size))).astype(np.float32)

    def forward(session):
        model.backbone = session
        model.hidden_states(embeds, [positions])

    return alternated_best({label: (lambda s=session: forward(s)) for label, session in sessions.items()}, repeats)


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


def choose_backbone(model, mode: str, path: pathlib.Path, providers: Sequence[str], options_factory,
                    threads: int | None = None, cache_dir: pathlib.Path | None = None) -> dict:
    """Set ``model.backbone`` for ``mode`` and say what was chosen.

    ``int4``: the graph as built.  ``fp32``: its 4-bit MatMuls dequantized
    (``dequantized_backbone``).  ``auto`` (the default): ``backbone_probe``
    times both, and fp32 is kept only when it is more than ``FP32_MARGIN``
    faster.  The outcome is remembered per machine, onnxruntime version,
    provider, threads and graph (``backbone-choice.json`` in our cache), so
    the probe runs once and the same machine always computes the same way.
    A folder without 4-bit MatMuls keeps its graph whatever the mode.
    Returns ``{"mode", "compute", "added_mb", "probe_s", "remembered"}``:
    ``added_mb`` is the fp32 weights' size, and with fp32 ``rss_added_mb`` is
    how much the process's resident memory grew while they were made
    (ONNX Runtime's prepacked copy of the weights can double the size).
    """
    from .errors import InvalidInput

    if mode not in BACKBONE_MODES:
        raise InvalidInput(f"backbone must be one of {', '.join(BACKBONE_MODES)}, got {mode!r}.", param="backbone")
    info = {"mode": mode, "compute": "as built", "added_mb": 0.0, "probe_s": {}, "remembered": False}
    if mode == "int4" or not has_int4_matmuls(path):
        return info
    choices = ChoiceCache(cache_dir)
    key = choice_key(path, providers, threads)
    known = choices.get(key) if mode == "auto" else None
    if known is not None and known.get("choice") == "int4":
        info.update(compute="int4 (measured before on this machine: fp32 not faster)", probe_s=known["probe_s"],
                    remembered=True)
        return info
    built, before = model.backbone, resident_mb()
    dequantized, weight_bytes = dequantized_backbone(path, providers, options_factory())
    grown = max(resident_mb() - before, 0.0)
    model.backbone = dequantized
    if mode == "auto" and known is None:
        probe = backbone_probe(model, {"int4": built, "fp32": dequantized})
        info["probe_s"] = {label: round(seconds, 4) for label, seconds in probe.items()}
        choices.put(key, "fp32" if prefers_fp32(probe) else "int4", info["probe_s"])
        if not prefers_fp32(probe):
            model.backbone = built  # the dequantized session and its weights are dropped here
            info["compute"] = "int4 (measured: fp32 not faster)"
            return info
    elif known is not None:
        info.update(probe_s=known["probe_s"], remembered=True)
    how = {"fp32": "", "auto": " (measured faster)"}[mode]
    info.update(compute=f"fp32: int4 weights dequantized at load{how}", added_mb=round(weight_bytes / 2**20, 1),
                rss_added_mb=round(grown, 1))
    return info


def choice_key(path: pathlib.Path, providers: Sequence[str], threads: int | None) -> str:
    """What ``auto``'s outcome depends on: the CPU, onnxruntime, the provider, threads and the graph."""
    import hashlib
    import os

    import onnxruntime as ort

    from .quick_bench import cpu_name

    cpu, flags = cpu_name(), ""
    try:
        for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                flags = hashlib.sha256(line.encode()).hexdigest()[:12]
                break
    except OSError:
        pass
    sizes = "+".join(str(p.stat().st_size) for p in sorted(path.parent.glob(path.name + "*")))
    return (f"{cpu} flags {flags} | onnxruntime {ort.__version__} | {providers[0]} | "
            f"threads {threads or os.cpu_count()} | {path.name} {sizes}")


class ChoiceCache:
    """``backbone-choice.json`` in our cache folder: probe outcomes by ``choice_key``.

    A file that cannot be read or written only costs a new probe.
    """

    def __init__(self, folder: pathlib.Path | None = None):
        from .hub.cache import default_cache_dir

        self.path = pathlib.Path(folder or default_cache_dir()) / "backbone-choice.json"

    def _read(self) -> dict:
        import json

        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError, UnicodeDecodeError):
            return {}
        return data if isinstance(data, dict) else {}

    def get(self, key: str) -> dict | None:
        entry = self._read().get(key)
        valid = isinstance(entry, dict) and entry.get("choice") in ("int4", "fp32") and isinstance(
            entry.get("probe_s"), dict)
        return entry if valid else None

    def put(self, key: str, choice: str, probe_s: dict) -> None:
        import json
        import os
        import time

        data = self._read()
        data[key] = {"choice": choice, "probe_s": probe_s, "measured": time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                                                                     time.gmtime())}
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            temporary = self.path.with_name(f"{self.path.name}.{os.getpid()}.tmp")
            temporary.write_text(json.dumps(data, indent=1), encoding="utf-8")
            os.replace(temporary, self.path)
        except OSError:
            pass


def resident_mb() -> float:
    """This process's resident memory now (Linux ``/proc``; 0 where it cannot be read)."""
    import os

    try:
        pages = int(pathlib.Path("/proc/self/statm").read_text().split()[1])
    except (OSError, ValueError, IndexError):
        return 0.0
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def prefers_fp32(probe_s: dict[str, float], margin: float = FP32_MARGIN) -> bool:
    """Whether the probe's fp32 time beats int4's by more than ``margin``."""
    return probe_s["fp32"] < (1.0 - margin) * probe_s["int4"]



def add_backbone_argument(parser) -> None:
    """``--backbone int4|fp32|auto`` for the CLI and the app."""
    parser.add_argument("--backbone", choices=list(BACKBONE_MODES), default="auto",
                        help="an int4 folder's backbone: as built (int4), its weights dequantized once at load into "
                             "fp32 MatMuls (fp32: about 1.7 GB more memory at full size, faster on some CPUs), or "
                             "auto (default): whichever this machine runs faster, measured once and remembered")
