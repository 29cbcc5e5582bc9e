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
made from it equal, byte for byte, those made from such a folder.  The file is read by ``safetensors``:
its header, checked by it (bounded size, tensors covering the data exactly, none overlapping) before
anything is built; the weight products' weights one tensor at a time when asked for; the embedding
tables a few rows at a time (``get_slice``).  Every tensor the graph needs is checked for presence,
dtype and shape before anything is built.
"""

from __future__ import annotations

import dataclasses
import json
import pathlib
import re
from typing import Callable

import numpy as np

from ..errors import ModelFolderError

WEIGHTS_FILE = "model.safetensors"

#: the largest header safetensors accepts (its own limit, checked by it before the header is read)
MAX_HEADER_BYTES = 100 << 20

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

#: the serde words of a header entry of the wrong form (any other JSON error: the header is not JSON)
_MALFORMED = ("invalid value", "invalid type", "invalid length", "unknown variant", "missing field", "unknown field")


def bad_weights(path: pathlib.Path, problem: str) -> ModelFolderError:
    return ModelFolderError(f"The backbone weights {path} cannot be used: {problem}. Give the original OmniVoice "
                            "checkpoint (k2-fsa/OmniVoice's model.safetensors), or download it again.")


def refusal(message: str) -> str:
    """safetensors' refusal of a file (``SafetensorError``'s message) in our words: what is wrong with the
    file, naming the tensor where safetensors names it."""
    reason = message.removeprefix("Error while deserializing header: ")
    if reason.startswith("header too small"):
        return "the file is shorter than a safetensors header"
    if reason.startswith("header too large"):
        return f"its header claims more than the {MAX_HEADER_BYTES >> 20} MB accepted"
    if reason.startswith("invalid header length"):
        return "its header claims more bytes than the file has (the file may be truncated)"
    if reason.startswith(("invalid JSON", "invalid UTF-8")):
        detail = reason.partition(": ")[2] or reason
        if detail.startswith(_MALFORMED):
            return f"its header has a malformed entry ({detail})"
        return f"its header is not JSON ({detail})"
    if reason.startswith("incomplete metadata"):
        return "its tensors do not cover the file exactly (the file may be truncated)"
    named = re.search(r"tensor `([^`]*)`", reason)
    if reason.startswith("invalid offset") and named:
        return (f"tensor {named.group(1)!r} lies outside the file or overlaps another tensor (the file may be "
                "truncated)")
    if reason.startswith("invalid shape, data type, or offset"):
        return "a tensor's bytes do not match its shape and dtype"
    return f"safetensors cannot read it ({reason})"


@dataclasses.dataclass(frozen=True)
class TensorInfo:
    """One tensor of a checkpoint as its header describes it: safetensors' dtype name and the shape."""

    dtype: str
    shape: tuple[int, ...]


def read_header(path: pathlib.Path) -> dict[str, TensorInfo]:
    """The tensors of the safetensors file at ``path`` (name -> dtype, shape), without reading their data.

    safetensors reads and checks the header (at most ``MAX_HEADER_BYTES``, JSON, known dtypes, byte counts
    that match the shapes, tensors that cover the data exactly and do not overlap) before it gives anything;
    its refusal raises ``ModelFolderError`` in our words (``refusal``)."""
    from safetensors import SafetensorError, safe_open

    try:
        with safe_open(str(path), framework="numpy") as handle:
            return {name: TensorInfo(view.get_dtype(), tuple(view.get_shape()))
                    for name in handle.keys() for view in (handle.get_slice(name),)}
    except SafetensorError as exc:
        raise bad_weights(path, refusal(str(exc))) from exc
    except OSError as exc:
        raise bad_weights(path, f"it cannot be read ({exc.strerror or exc.__class__.__name__})") from exc


#: elements of a tensor looked at at once (a bounded slice read with ``get_slice``, not the tensor in memory)
_SCAN_ELEMENTS = 1 << 22


def non_finite(path: pathlib.Path, names=None) -> tuple[str, int] | None:
    """``(tensor name, flat index)`` of the first NaN or infinity among the float tensors ``names`` (all of the
    file's when None) of the safetensors file at ``path``, or None.  Reads a bounded run of rows at a time
    (``safe_open().get_slice()``), so a 2.4 GB checkpoint is checked without holding it."""
    from safetensors import safe_open

    with safe_open(str(path), framework="numpy") as handle:
        for name in (names if names is not None else handle.keys()):
            view = handle.get_slice(name)
            shape = tuple(view.get_shape())
            if view.get_dtype() not in FLOAT_DTYPES or not shape or not all(shape):
                continue
            per_row = int(np.prod(shape[1:], dtype=np.int64)) or 1
            step = max(1, _SCAN_ELEMENTS // per_row)
            for first in range(0, shape[0], step):
                bad = np.flatnonzero(~np.isfinite(view[first:min(first + step, shape[0])]))
                if bad.size:
                    return name, first * per_row + int(bad[0])
    return None


def check_finite(path: pathlib.Path) -> None:
    """``ModelFolderError`` naming the first tensor of the checkpoint ``path`` that holds a NaN or an infinity
    (its header checked first, ``read_header``).  The converter runs it before any graph is built."""
    read_header(path)
    found = non_finite(path)
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

    def rows(self, name: str, indices: np.ndarray) -> np.ndarray:
        """Rows ``indices`` (sorted, distinct, each in the table) of the table ``name`` as fp32, read lazily
        (``safe_open().get_slice()``: one read per run of consecutive rows), so only what a lookup needs comes
        into memory: a few rows of a 600 MB embedding table.  The map is closed after, as in ``tensor``."""
        from safetensors import safe_open

        info = self.header[name]
        out = np.empty((len(indices), *info.shape[1:]), dtype=np.float32)
        runs = np.split(np.arange(len(indices)), np.flatnonzero(np.diff(indices) != 1) + 1) if len(indices) else []
        with safe_open(str(self.path), framework="numpy") as handle:
            table = handle.get_slice(name)
            for run in runs:
                first = int(indices[run[0]])
                out[run[0]:run[-1] + 1] = table[first:first + len(run)]
        if not np.isfinite(out).all():   # poisoned weights refused by name, never fed to a graph
            raise bad_weights(self.path, f"tensor {name!r} holds NaN or infinite values")
        return out

    def lookup(self, name: str, index: np.ndarray) -> np.ndarray:
        """``Gather(table, index)`` along the first axis for the table ``name``: each row that ``index`` names
        read once (``rows``), the same values, bit for bit, as a Gather of the whole table.  A negative index
        counts from the end, as in ONNX; one outside the table is refused, as ONNX Runtime refuses it."""
        count = self.header[name].shape[0]
        index = np.asarray(index, dtype=np.int64)
        index = np.where(index < 0, index + count, index)
        if index.size and (index.min() < 0 or index.max() >= count):
            raise ValueError(f"an index of the lookup in {name!r} is outside its {count} rows")
        wanted, where = np.unique(index, return_inverse=True)
        return self.rows(name, wanted)[where.reshape(index.shape)]

    def check(self, name: str, shape: tuple) -> None:
        """Raise unless the checkpoint has ``name`` in a float dtype and ``shape`` (None: any number there)."""
        info = self.header.get(name)
        if info is None:
            raise bad_weights(self.path, f"tensor {name!r} is missing (not an OmniVoice checkpoint?)")
        if info.dtype not in FLOAT_DTYPES:
            raise bad_weights(self.path, f"tensor {name!r} is {info.dtype}, not {' or '.join(FLOAT_DTYPES)}")
        if len(info.shape) != len(shape) or any(want not in (None, got) for want, got in zip(shape, info.shape)):
            raise bad_weights(self.path, f"tensor {name!r} has shape {list(info.shape)}, the backbone graph needs "
                                         f"{list(shape)} (a checkpoint of another architecture?)")

    def product_source(self, layer: int, role: str, k: int, n: int) -> Callable[[], np.ndarray]:
        """The loader of the ``[k, n]`` weight of ``role`` (a key of ``_PRODUCTS``) in ``layer``, its tensors
        checked now: each is ``[rows, k]``, and their rows add up to ``n``."""
        names = [f"llm.layers.{layer}.{part}" for part in _PRODUCTS[role]]
        for name in names:
            self.check(name, (None if len(names) > 1 else n, k))
        total = sum(self.header[name].shape[0] for name in names)
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
    table lookup (``GatherBlockQuantized`` in an int4 folder, ``Gather`` in an fp32 one) reads its rows from
    ``weights`` (``model.llm.embed_tokens.weight`` from ``llm.embed_tokens.weight``, ...), so the calibration
    forward of the 8-bit choices sees what an fp32 folder's embeddings give.

    The graph runs in two parts around the lookups: the first computes each lookup's indices, the rows they
    name are read lazily (``CheckpointWeights.lookup``: the same values as a Gather of the whole table), and
    the second computes the rest from them.  A calibration forward brings a few rows of the 600 MB into
    memory, never a table (ONNX Runtime copies an initializer whole)."""
    import onnx
    import onnxruntime as ort

    from ..storage.manifest import BACKBONE_GRAPHS

    path = folder / BACKBONE_GRAPHS["audio_embeddings"]
    model = onnx.load(str(path), load_external_data=False)
    graph = model.graph
    lookups, kept = {}, []   # a lookup's output -> (the checkpoint's table, the lookup's indices)
    for node in graph.node:
        table = node.input[0].removesuffix("_Q4") if node.op_type in ("Gather", "GatherBlockQuantized") else ""
        name = table.removeprefix("model.")
        if not table or name not in weights.header:
            kept.append(node)
            continue
        weights.check(name, (None, None))
        axis = next((a.i for a in node.attribute if a.name in ("gather_axis", "axis")), 0)
        if axis != 0:
            raise ModelFolderError(f"The embedding graph {path} looks up {table!r} along axis {axis}, not its rows "
                                   "(not an OmniVoice folder?).")
        lookups[node.output[0]] = (name, node.input[1])
    if not lookups:
        raise bad_weights(weights.path, f"none of the embedding tables of {path.name} is in it (not an OmniVoice "
                                        "checkpoint?)")
    inputs = {value.name for value in graph.input}
    indices = sorted({index for _, index in lookups.values()} - inputs)
    outputs = [value.name for value in graph.output]
    # the indices' element type where the graph states it, else int64 (input_ids' type; ONNX Runtime refuses a
    # graph whose declared type is wrong, so a mistake here cannot pass silently); not shape inference, which
    # costs the build 8 MB of peak memory
    kinds = {value.name: value.type.tensor_type.elem_type for value in graph.value_info}

    def part(wanted: list[str], given: set[str]):
        """A session of the nodes that compute ``wanted`` from the graph's inputs and ``given``."""
        nodes = upstream(kept, wanted, given)
        used = {name for node in nodes for name in node.input}
        sub = onnx.helper.make_graph(
            nodes, graph.name, [value for value in graph.input if value.name in used]
            + [onnx.helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, None) for name in sorted(given & used)],
            [next((value for value in graph.output if value.name == name), None)
             or onnx.helper.make_tensor_value_info(name, kinds.get(name) or onnx.TensorProto.INT64, None)
             for name in wanted],
            [inline(init, folder) for init in graph.initializer if init.name in used])
        sub_model = onnx.helper.make_model(sub, opset_imports=model.opset_import, ir_version=model.ir_version)
        session = ort.InferenceSession(sub_model.SerializeToString(), sess_options=options, providers=list(providers))
        return session, {value.name for value in session.get_inputs()}

    indexer, indexer_inputs = part(indices, set()) if indices else (None, set())
    assembler, assembler_inputs = part(outputs, set(lookups))

    def embed(ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        feeds = {"input_ids": ids.astype(np.int64, copy=False), "audio_mask": mask.astype(np.bool_, copy=False)}
        known = dict(feeds)
        if indexer is not None:
            known.update(zip(indices, indexer.run(indices, {k: v for k, v in feeds.items() if k in indexer_inputs})))
        known.update({output: weights.lookup(name, known[index]) for output, (name, index) in lookups.items()})
        return assembler.run(outputs, {k: v for k, v in known.items() if k in assembler_inputs})[0]

    return embed


def upstream(nodes: list, wanted: list[str], given: set[str]) -> list:
    """The nodes of ``nodes`` (in their order) that computing ``wanted`` needs, ``given`` tensors being known."""
    making = {output: node for node in nodes for output in node.output}
    needed, todo = set(), [name for name in wanted if name not in given]
    while todo:
        node = making.get(todo.pop())
        if node is None or id(node) in needed:
            continue
        needed.add(id(node))
        todo.extend(name for name in node.input if name and name not in given)
    return [node for node in nodes if id(node) in needed]


def placeholder(name: str, k: int, n: int):
    """An fp32 ``[k, n]`` initializer without data, given to ONNX Runtime in memory (``in_memory_session``)."""
    import onnx

    tensor = onnx.TensorProto(name=name, data_type=onnx.TensorProto.FLOAT, dims=[k, n])
    tensor.data_location = onnx.TensorProto.EXTERNAL
    tensor.external_data.add(key="location", value="in-memory")
    return tensor


def weights_digest(path: pathlib.Path, cache_dir: pathlib.Path | None = None) -> str:
    """The sha256 of the weights file at ``path``, what our cache keys its builds on.

    Hashed once and remembered in our cache by path, size, inode and modification time
    (``weights-digests.json``); a file from the Hub comes with the Hub's sha256 instead
    (``hub.weights.backbone_weights``), so the Hugging Face cache's file names are never read for it."""
    from ..storage.atomic import atomic_write_json
    from ..storage.cache import default_cache_dir
    from ..storage.digests import file_sha256

    real = path.resolve()
    stat = real.stat()
    key = f"{real}|{stat.st_size}|{stat.st_ino}|{stat.st_mtime_ns}"
    memo = pathlib.Path(cache_dir or default_cache_dir()) / "weights-digests.json"
    try:
        known = json.loads(memo.read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        known = {}
    known = known if isinstance(known, dict) else {}
    if not isinstance(known.get(key), str):
        known[key] = file_sha256(real)
        try:
            memo.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_json(memo, known)
        except OSError:  # only costs hashing again next time
            pass
    return known[key]
