"""The backbone's weights from the original checkpoint (``model.safetensors`` of ``k2-fsa/OmniVoice``), without torch.

An int4 folder's backbone can only be rebuilt from its 4-bit weights, so no choice made from it is
better than int4.  The checkpoint holds the weights the folder was made from: its ``llm.*`` tensors map
onto the backbone graph's initializers as the converter (onnxruntime-genai's builder) lays them out:

* ``llm.layers.N.self_attn.{q,k,v}_proj.weight`` (``[out, in]``) packed and transposed into
  ``model.layers.N.attn.qkv_proj.MatMul.weight`` (``[in, q+k+v]``);
* ``llm.layers.N.self_attn.o_proj`` and ``llm.layers.N.mlp.{gate,up,down}_proj`` transposed into
  ``model.layers.N.{attn,mlp}.*_proj.MatMul.weight``;
* the norms one to one (``self_attn.{q,k}_norm`` to ``attn.{q,k}_norm.layernorm``, ``llm.norm`` to the
  last layer's ``final_norm_layernorm``).

``fp32_graph`` turns the folder's graph (int4 or fp32) into the fp32 graph of those weights: the
graph an fp32 folder made from the same checkpoint has, so the 8-bit rebuilds of ``precision.py``
made from it equal, byte for byte, those made from such a folder.  The weight products' weights are
read from the file one at a time when asked for (``safetensors`` memory-maps it); the header is
checked here first (bounded size, every tensor's offsets inside the file, no two overlapping), and
every tensor the graph needs is checked for presence, dtype and shape before anything is built.
"""

from __future__ import annotations

import dataclasses
import json
import pathlib
import re
import struct
from typing import Callable

import numpy as np

from ..errors import ModelFolderError

WEIGHTS_FILE = "model.safetensors"

#: the largest header accepted (safetensors' own limit)
MAX_HEADER_BYTES = 100 << 20

#: bytes per element of the safetensors dtypes
DTYPE_BYTES = {"BOOL": 1, "U8": 1, "I8": 1, "F8_E5M2": 1, "F8_E4M3": 1, "I16": 2, "U16": 2, "F16": 2, "BF16": 2,
               "I32": 4, "U32": 4, "F32": 4, "I64": 8, "U64": 8, "F64": 8}

#: the dtypes the backbone's tensors may have (read as fp32, as the converter reads them)
FLOAT_DTYPES = ("F32", "F16")

_LAYER = re.compile(r"^model\.layers\.(\d+)\.(.+)$")
_PRODUCTS = {"attn.o_proj.MatMul.weight": ["self_attn.o_proj.weight"],
             "attn.qkv_proj.MatMul.weight": ["self_attn.q_proj.weight", "self_attn.k_proj.weight",
                                             "self_attn.v_proj.weight"],
             "mlp.gate_proj.MatMul.weight": ["mlp.gate_proj.weight"],
             "mlp.up_proj.MatMul.weight": ["mlp.up_proj.weight"],
             "mlp.down_proj.MatMul.weight": ["mlp.down_proj.weight"]}
_NORMS = {"input_layernorm.weight": "input_layernorm.weight",
          "post_attention_layernorm.weight": "post_attention_layernorm.weight",
          "attn.q_norm.layernorm.weight": "self_attn.q_norm.weight",
          "attn.k_norm.layernorm.weight": "self_attn.k_norm.weight"}


def bad_weights(path: pathlib.Path, problem: str) -> ModelFolderError:
    return ModelFolderError(f"The backbone weights {path} cannot be used: {problem}. Give the original OmniVoice "
                            "checkpoint (k2-fsa/OmniVoice's model.safetensors), or download it again.")


def read_header(path: pathlib.Path) -> dict[str, dict]:
    """The tensors of the safetensors file at ``path`` (name -> dtype, shape, data_offsets), checked:
    a header of at most ``MAX_HEADER_BYTES``, known dtypes, sizes that match shapes, offsets inside the
    file, no two tensors sharing bytes.  Raises ``ModelFolderError`` naming the tensor at fault."""
    try:
        size = path.stat().st_size
        with open(path, "rb") as handle:
            prefix = handle.read(8)
            if len(prefix) < 8:
                raise bad_weights(path, "the file is shorter than a safetensors header")
            (length,) = struct.unpack("<Q", prefix)
            if length > MAX_HEADER_BYTES or 8 + length > size:
                raise bad_weights(path, f"its header claims {length} bytes (the file has {size}; at most "
                                        f"{MAX_HEADER_BYTES} are accepted)")
            header = json.loads(handle.read(length))
    except OSError as exc:
        raise bad_weights(path, f"it cannot be read ({exc.strerror or exc.__class__.__name__})") from exc
    except (ValueError, UnicodeDecodeError) as exc:
        raise bad_weights(path, "its header is not JSON") from exc
    if not isinstance(header, dict):
        raise bad_weights(path, "its header is not a table of tensors")
    header.pop("__metadata__", None)
    data = size - 8 - length
    spans = []
    for name, entry in header.items():
        if not (isinstance(entry, dict) and entry.get("dtype") in DTYPE_BYTES and isinstance(entry.get("shape"), list)
                and all(isinstance(d, int) and d >= 0 for d in entry["shape"])
                and isinstance(entry.get("data_offsets"), list) and len(entry["data_offsets"]) == 2
                and all(isinstance(o, int) for o in entry["data_offsets"])):
            raise bad_weights(path, f"tensor {name!r} has a malformed header entry")
        begin, end = entry["data_offsets"]
        if not 0 <= begin <= end <= data:
            raise bad_weights(path, f"tensor {name!r} lies outside the file (bytes {begin}-{end} of {data}; "
                                    "the file may be truncated)")
        if end - begin != int(np.prod(entry["shape"], dtype=object)) * DTYPE_BYTES[entry["dtype"]]:
            raise bad_weights(path, f"tensor {name!r} has {end - begin} bytes for shape {entry['shape']} "
                                    f"of {entry['dtype']}")
        spans.append((begin, end, name))
    spans.sort()
    for (_, end, first), (begin, _, second) in zip(spans, spans[1:]):
        if begin < end:
            raise bad_weights(path, f"tensors {first!r} and {second!r} overlap")
    return header


#: the exponent bits of each float dtype as raw integers: all of them set is NaN or infinity
_EXPONENT = {"F16": ("<u2", 0x7C00), "BF16": ("<u2", 0x7F80), "F32": ("<u4", 0x7F800000),
             "F64": ("<u8", 0x7FF0000000000000)}
#: elements of a tensor looked at at once (a bounded slice of the map, not the tensor in memory)
_SCAN_ELEMENTS = 1 << 22


def non_finite(path: pathlib.Path, header: dict, data_start: int, names=None) -> tuple[str, int] | None:
    """``(tensor name, flat index)`` of the first NaN or infinity among the float tensors ``names`` (all of
    ``header``'s when None) of the safetensors file at ``path``, or None.  Reads the raw bits through a map, a
    bounded slice at a time, so a 2.4 GB checkpoint is checked without holding it."""
    for name in (names if names is not None else header):
        entry = header[name]
        if entry["dtype"] not in _EXPONENT:
            continue
        raw, mask = _EXPONENT[entry["dtype"]]
        count = int(np.prod(entry["shape"], dtype=np.int64))
        if not count:
            continue
        bits = np.memmap(path, dtype=raw, mode="r", offset=data_start + entry["data_offsets"][0], shape=(count,))
        for start in range(0, count, _SCAN_ELEMENTS):
            bad = np.flatnonzero((bits[start:start + _SCAN_ELEMENTS] & mask) == mask)
            if bad.size:
                return name, start + int(bad[0])
        del bits
    return None


def check_finite(path: pathlib.Path) -> None:
    """``ModelFolderError`` naming the first tensor of the checkpoint ``path`` that holds a NaN or an infinity
    (its header checked first, ``read_header``).  The converter runs it before any graph is built."""
    header = read_header(path)
    with open(path, "rb") as handle:
        data_start = 8 + struct.unpack("<Q", handle.read(8))[0]
    found = non_finite(path, header, data_start)
    if found:
        raise bad_weights(path, f"tensor {found[0]!r} holds NaN or infinite values (first at element {found[1]})")


@dataclasses.dataclass
class CheckpointWeights:
    """The backbone weights of one checkpoint file: ``path`` (local), ``label`` (where they came from:
    a Hub repo or the folder), ``digest`` (the file's sha256: our cache keys its builds on it)."""

    path: pathlib.Path
    label: str
    digest: str

    def __post_init__(self):
        self.header = read_header(self.path)
        with open(self.path, "rb") as handle:
            self.data_start = 8 + struct.unpack("<Q", handle.read(8))[0]

    def tensor(self, name: str) -> np.ndarray:
        """The checkpoint tensor ``name`` as fp32, copied out of the memory-mapped file.  The map is opened
        for this one tensor and closed after it: pages of the file read before stay out of this process's
        resident memory (held open, the 2.4 GB map grew it by every tensor read)."""
        from safetensors import safe_open

        with safe_open(str(self.path), framework="numpy") as handle:
            values = handle.get_tensor(name).astype(np.float32, copy=False)
        if not np.isfinite(values).all():   # poisoned weights refused by name, never built into a backbone
            raise bad_weights(self.path, f"tensor {name!r} holds NaN or infinite values")
        return values

    def mapped(self, name: str) -> np.ndarray:
        """The checkpoint tensor ``name`` as fp32 without reading it: a copy-on-write map of its bytes in the
        file (F32 at an aligned place; another is read and converted, ``tensor``), so only what a computation
        touches comes into memory: a few rows gathered from a 600 MB embedding table."""
        entry = self.header[name]
        if entry["dtype"] != "F32" or not all(entry["shape"]):
            return self.tensor(name)
        found = non_finite(self.path, self.header, self.data_start, [name])
        if found:
            raise bad_weights(self.path, f"tensor {name!r} holds NaN or infinite values (first at element {found[1]})")
        mapped = np.memmap(self.path, dtype="<f4", mode="c", offset=self.data_start + entry["data_offsets"][0],
                           shape=tuple(entry["shape"]))
        return mapped if mapped.flags.aligned else self.tensor(name)

    def check(self, name: str, shape: tuple) -> None:
        """Raise unless the checkpoint has ``name`` in a float dtype and ``shape`` (None: any number there)."""
        entry = self.header.get(name)
        if entry is None:
            raise bad_weights(self.path, f"tensor {name!r} is missing (not an OmniVoice checkpoint?)")
        if entry["dtype"] not in FLOAT_DTYPES:
            raise bad_weights(self.path, f"tensor {name!r} is {entry['dtype']}, not {' or '.join(FLOAT_DTYPES)}")
        if len(entry["shape"]) != len(shape) or any(want not in (None, got) for want, got in zip(shape, entry["shape"])):
            raise bad_weights(self.path, f"tensor {name!r} has shape {entry['shape']}, the backbone graph needs "
                                         f"{list(shape)} (a checkpoint of another architecture?)")

    def product_source(self, layer: int, role: str, k: int, n: int) -> Callable[[], np.ndarray]:
        """The loader of the ``[k, n]`` weight of ``role`` (a key of ``_PRODUCTS``) in ``layer``, its tensors
        checked now: each is ``[rows, k]``, and their rows add up to ``n``."""
        names = [f"llm.layers.{layer}.{part}" for part in _PRODUCTS[role]]
        for name in names:
            self.check(name, (None if len(names) > 1 else n, k))
        total = sum(self.header[name]["shape"][0] for name in names)
        if total != n:
            raise bad_weights(self.path, f"tensors {', '.join(names)} have {total} rows, the backbone graph "
                                         f"needs {n} (a checkpoint of another architecture?)")
        return lambda: np.ascontiguousarray(np.concatenate([self.tensor(name) for name in names]).T)

    def norm(self, graph_name: str, last_layer: int, shape: tuple) -> np.ndarray | None:
        """The checkpoint's value of the norm initializer ``graph_name`` (None where it is not a norm)."""
        match = _LAYER.match(graph_name)
        if not match:
            return None
        layer, rest = int(match.group(1)), match.group(2)
        if rest == "final_norm_layernorm.weight" and layer == last_layer:
            name = "llm.norm.weight"
        elif rest in _NORMS:
            name = f"llm.layers.{layer}.{_NORMS[rest]}"
        else:
            return None
        self.check(name, shape)
        return self.tensor(name)


def fp32_graph(path: pathlib.Path, weights: CheckpointWeights):
    """``(model, source)``: the backbone graph at ``path`` (int4 or fp32) as the fp32 graph of ``weights``.

    Its weight products are ``MatMul`` nodes (named as an fp32 folder names them) whose weights are
    placeholders (``source`` maps each name to its loader, for ``precision.rebuild``); its norms hold the
    checkpoint's values; everything else is the folder's graph.  Every tensor is checked first."""
    import onnx
    from onnx import numpy_helper

    from .precision import weight_products

    model = onnx.load(str(path), load_external_data=False)
    graph = model.graph
    products = weight_products(graph)
    if not products:
        raise ModelFolderError(f"The backbone graph {path} has no weight products to build from the checkpoint.")
    layers = sorted({int(m.group(1)) for init in graph.initializer if (m := _LAYER.match(init.name))})
    source, dropped, renamed = {}, set(), {}
    for product in products:
        node = product.node
        weight = node.input[1].removesuffix("_Q4")
        match = _LAYER.match(weight)
        if product.bias or not match or match.group(2) not in _PRODUCTS:
            raise ModelFolderError(f"The backbone graph {path} has a weight product {node.name!r} that the "
                                   "checkpoint's weights do not map onto (not an OmniVoice backbone?).")
        source[weight] = weights.product_source(int(match.group(1)), match.group(2), product.k, product.n)
        if node.op_type == "MatMulNBits":
            dropped.update(x for x in list(node.input)[1:] if x)
            renamed[id(node)] = onnx.helper.make_node("MatMul", [node.input[0], weight], list(node.output),
                                                      name=node.name.removesuffix("_Q4"))
    nodes = [renamed.get(id(node), node) for node in graph.node]
    del graph.node[:]
    graph.node.extend(nodes)
    kept = []
    for init in graph.initializer:
        if init.name in dropped or init.name in source:
            continue
        value = weights.norm(init.name, layers[-1], tuple(init.dims)) if layers else None
        if value is None:
            kept.append(inline(init, path.parent))
        else:
            kept.append(numpy_helper.from_array(value, init.name))
            kept[-1].data_location = onnx.TensorProto.DEFAULT  # as onnx.load leaves a weight it read (same bytes)
    kept.extend(placeholder(p.node.input[1].removesuffix("_Q4"), p.k, p.n) for p in products)
    del graph.initializer[:]
    graph.initializer.extend(kept)
    keep_info = [v for v in graph.value_info if v.name not in dropped]
    del graph.value_info[:]
    graph.value_info.extend(keep_info)
    return model, source


def inline(init, folder: pathlib.Path):
    """``init`` (an initializer of a graph loaded without its external data) with its data read in, as
    ``onnx.load`` leaves it."""
    import onnx
    from onnx import external_data_helper

    if init.data_location == onnx.TensorProto.EXTERNAL:
        external_data_helper.load_external_data_for_tensor(init, str(folder))
        init.data_location = onnx.TensorProto.DEFAULT
        del init.external_data[:]
    return init


def checkpoint_embedder(folder: pathlib.Path, weights: CheckpointWeights, providers, options) -> Callable:
    """``embed(input_ids, audio_mask)`` of the folder's embedding graph on the checkpoint's fp32 tables: each
    table (``GatherBlockQuantized`` in an int4 folder, ``Gather`` in an fp32 one) read from ``weights``
    (``model.llm.embed_tokens.weight`` from ``llm.embed_tokens.weight``, ...), so the calibration forward of
    the 8-bit choices sees what an fp32 folder's embeddings give.  The tables are mapped, not read
    (``CheckpointWeights.mapped``), and fed as inputs of the graph, which ONNX Runtime reads in place
    (initializers it copies whole): a calibration forward brings a few rows of the 600 MB into memory."""
    import onnx
    import onnxruntime as ort

    from ..storage.manifest import BACKBONE_GRAPHS

    path = folder / BACKBONE_GRAPHS["audio_embeddings"]
    model = onnx.load(str(path), load_external_data=False)
    graph = model.graph
    tables, dropped, nodes = {}, set(), []
    for node in graph.node:
        table = node.input[0].removesuffix("_Q4") if node.op_type in ("Gather", "GatherBlockQuantized") else ""
        name = table.removeprefix("model.")
        if not table or name not in weights.header:
            nodes.append(node)
            continue
        weights.check(name, (None, None))
        tables[table] = weights.mapped(name)
        dropped.update(node.input[0:1] + node.input[2:3])
        axis = next((a.i for a in node.attribute if a.name in ("gather_axis", "axis")), 0)
        nodes.append(onnx.helper.make_node("Gather", [table, node.input[1]], list(node.output), name=node.name,
                                           axis=axis))
    if not tables:
        raise bad_weights(weights.path, f"none of the embedding tables of {path.name} is in it (not an OmniVoice "
                                        "checkpoint?)")
    del graph.node[:]
    graph.node.extend(nodes)
    kept = [inline(init, folder) for init in graph.initializer if init.name not in dropped]
    del graph.initializer[:]
    graph.initializer.extend(kept)
    graph.input.extend(onnx.helper.make_tensor_value_info(table, onnx.TensorProto.FLOAT, list(value.shape))
                       for table, value in tables.items())
    session = ort.InferenceSession(model.SerializeToString(), sess_options=options, providers=list(providers))
    return lambda ids, mask: session.run(None, {"input_ids": ids.astype(np.int64, copy=False),
                                                "audio_mask": mask.astype(np.bool_, copy=False), **tables})[0]


def placeholder(name: str, k: int, n: int):
    """An fp32 ``[k, n]`` initializer without data, given to ONNX Runtime in memory (``in_memory_session``)."""
    import onnx

    tensor = onnx.TensorProto(name=name, data_type=onnx.TensorProto.FLOAT, dims=[k, n])
    tensor.data_location = onnx.TensorProto.EXTERNAL
    tensor.external_data.add(key="location", value="in-memory")
    return tensor


def weights_digest(path: pathlib.Path, cache_dir: pathlib.Path | None = None) -> str:
    """The sha256 of the weights file at ``path``, what our cache keys its builds on.

    A file in the Hugging Face cache is named by it (``blobs/<sha256>``); another is hashed once and
    remembered in our cache by path, size, inode and modification time (``weights-digests.json``)."""
    from ..storage.atomic import atomic_write_json
    from ..storage.cache import default_cache_dir
    from ..storage.manifest import sha256_of

    real = path.resolve()
    if real.parent.name == "blobs" and re.fullmatch(r"[0-9a-f]{64}", real.name):
        return real.name
    stat = real.stat()
    key = f"{real}|{stat.st_size}|{stat.st_ino}|{stat.st_mtime_ns}"
    memo = pathlib.Path(cache_dir or default_cache_dir()) / "weights-digests.json"
    try:
        known = json.loads(memo.read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        known = {}
    known = known if isinstance(known, dict) else {}
    if not isinstance(known.get(key), str):
        known[key] = sha256_of(real)
        try:
            memo.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_json(memo, known)
        except OSError:  # only costs hashing again next time
            pass
    return known[key]
