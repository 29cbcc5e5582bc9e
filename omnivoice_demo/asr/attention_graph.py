"""The decoder graph that shows its cross-attention: what word timing reads.

The Hub's Whisper exports (and the decoder graphs ``convert.whisper`` writes for transcription) output
logits and caches only.  ``add_cross_attention_outputs`` copies a first-call decoder graph
(``decoder_model{suffix}.onnx``: ``input_ids, encoder_hidden_states -> logits, present.*``) and adds, per
decoder layer ``i``, an output ``cross_attentions.{i}``: the softmax of that layer's cross-attention,
float32, ``[heads, tokens, frames]`` for one clip (``[1, heads, ...]`` or ``[heads, ...]`` as the export
shapes it).  Every layer is exposed, so any set of alignment heads can be read from one graph; the
transcription graphs are not touched, so greedy transcription is unchanged.

A layer's cross-attention softmax is found from the graph's own wiring, whatever the exporter named its
nodes: it is the one ``Softmax`` reached forward from the tensor ``present.{i}.encoder.key`` without
passing through another ``Softmax`` (starting from the key projection whose mere layout that tensor is:
an exporter may lay the keys out once for the cache output and once more for the attention).  Its
self-attention softmax does not read the encoder keys, and the next layers reach them only through this
softmax.

Where the copy lives (``alignment_graph``):

* a folder built by ``convert.whisper`` carries it: ``onnx/decoder_model_alignment{suffix}.onnx``, listed
  in its manifest;
* for any other folder (a Hub snapshot in the Hugging Face cache, which we never change) it is built once
  into our cache, ``<cache>/asr/alignment/<key>/``, beside a record of the source graph (size, mtime) and
  the copy (size, sha256); a record that no longer matches is rebuilt, a copy that does not match its
  record is an error naming it.  Written under a temporary name, then renamed.
"""

from __future__ import annotations

import hashlib
import json
import pathlib
from typing import Optional

from ..errors import ModelFolderError
from ..storage.atomic import atomic_write_json, replacing_path
from ..storage.cache import default_cache_dir
from ..storage.digests import file_sha256

ALIGNMENT_STEM = "decoder_model_alignment"
ATTENTION_OUTPUT = "cross_attentions.{layer}"
RECORD_NAME = "alignment_graph.json"
EXTERNAL_DATA_ABOVE = 1_800_000_000
#: operators that only lay the keys out (the exporter may lay them out twice: once for the cache output,
#: once for the attention)
LAYOUT_OPS = frozenset({"Transpose", "Reshape", "Identity", "Cast", "Squeeze", "Unsqueeze"})


def alignment_rel(precision_suffix: str) -> str:
    return f"onnx/{ALIGNMENT_STEM}{precision_suffix}.onnx"


def _cross_key_tensor(graph, layer: int) -> str:
    for value in list(graph.input) + list(graph.output):
        if value.name in (f"present.{layer}.encoder.key", f"past_key_values.{layer}.encoder.key"):
            return value.name
    raise ModelFolderError(f"the decoder graph has no present.{layer}.encoder.key output")


def add_cross_attention_outputs(model, layers: int) -> list[str]:
    """Add ``cross_attentions.{i}`` outputs (i < ``layers``) to ``model`` (an onnx.ModelProto, changed in
    place); return their names.  ``ModelFolderError`` when a layer's softmax cannot be found (a graph whose
    attention is fused into one operator)."""
    from onnx import TensorProto, helper

    graph = model.graph
    consumers: dict[str, list] = {}
    producers: dict = {}   # output name -> the onnx NodeProto making it
    for node in graph.node:
        for name in node.input:
            consumers.setdefault(name, []).append(node)
        for name in node.output:
            producers[name] = node
    names = []
    for layer in range(layers):
        start = _cross_key_tensor(graph, layer)
        frontier, found = [start], []
        producer = producers.get(start)
        while producer is not None and producer.op_type in LAYOUT_OPS:  # back to the key projection
            frontier.append(producer.input[0])
            producer = producers.get(producer.input[0])
        seen = set(frontier)
        while frontier:
            tensor = frontier.pop()
            for node in consumers.get(tensor, []):
                if node.op_type == "Shape":  # a size, not the keys
                    continue
                if node.op_type == "Softmax":
                    if node.output[0] not in {n.output[0] for n in found}:
                        found.append(node)
                    continue
                for out in node.output:
                    if out not in seen:
                        seen.add(out)
                        frontier.append(out)
        if len(found) != 1:
            raise ModelFolderError(f"the cross-attention of decoder layer {layer} cannot be found in the decoder "
                                   f"graph ({len(found)} candidate softmax nodes): its attention is fused or "
                                   "exported in an unknown form; build the recogniser folder with "
                                   "`python -m convert.whisper` to time words.")
        name = ATTENTION_OUTPUT.format(layer=layer)
        graph.node.append(helper.make_node("Cast", [found[0].output[0]], [name], to=TensorProto.FLOAT,
                                           name=f"{name}/Cast"))
        graph.output.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, None))
        names.append(name)
    return names


def write_alignment_graph(source: pathlib.Path, target: pathlib.Path, layers: int) -> None:
    """The copy of ``source`` with the cross-attention outputs, written whole at ``target`` (weights inside the
    graph, or one ``<name>_data`` file beside it when they pass protobuf's limit)."""
    import onnx

    try:
        model = onnx.load(str(source))
    except Exception as exc:  # noqa: BLE001 - DecodeError and friends: the file is not a graph
        raise ModelFolderError(f"{source.name} is not a readable ONNX graph ({type(exc).__name__}); "
                               "download or build the recogniser again.") from exc
    add_cross_attention_outputs(model, layers)
    target.parent.mkdir(parents=True, exist_ok=True)
    large = sum(t.ByteSize() for t in model.graph.initializer) > EXTERNAL_DATA_ABOVE
    if large:  # the weights file first, under its final name; the graph, renamed last, is what makes it used
        partial = target.with_name(target.name + ".partial")
        onnx.save(model, str(partial), save_as_external_data=True, all_tensors_to_one_file=True,
                  location=target.name + "_data")
        partial.replace(target)
    else:
        with replacing_path(target) as tmp:
            onnx.save(model, str(tmp))


def alignment_graph(folder: pathlib.Path, decoder_rel: str, suffix: str, layers: int,
                    cache: Optional[pathlib.Path] = None, checksums: bool = False) -> pathlib.Path:
    """The alignment graph for the recogniser in ``folder`` whose first-call decoder is ``decoder_rel``:
    the folder's own (``convert.whisper``), else the copy in our cache (built now when missing or stale)."""
    own = folder / alignment_rel(suffix)
    if own.is_file():
        return own
    source = folder / decoder_rel
    if not source.is_file():
        raise ModelFolderError(f"The speech recogniser folder {folder} has no first-call decoder graph "
                               f"({decoder_rel}) to time words with; build it with `python -m convert.whisper`.")
    real = source.resolve()
    stat = real.stat()
    key = hashlib.sha256(str(real).encode()).hexdigest()[:16]
    where = (cache or default_cache_dir()) / "asr" / "alignment" / key
    target = where / f"{ALIGNMENT_STEM}{suffix}.onnx"
    record_path = where / RECORD_NAME
    source_fields = {"source": str(real), "source_size": stat.st_size, "source_mtime_ns": stat.st_mtime_ns,
                     "layers": layers}
    record = None
    if record_path.is_file():
        try:
            record = json.loads(record_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            record = None
    if record and all(record.get(k) == v for k, v in source_fields.items()) and target.is_file():
        if target.stat().st_size != record.get("size") or (checksums and file_sha256(target) != record.get("sha256")):
            raise ModelFolderError(f"{target} does not match its record {record_path}: it was changed after it was "
                                   "built; delete that folder and run again to rebuild it.")
        return target
    write_alignment_graph(real, target, layers)
    atomic_write_json(record_path, {**source_fields, "size": target.stat().st_size, "sha256": file_sha256(target),
                                    "what": "copy of the decoder graph with each layer's cross-attention as outputs"})
    return target
