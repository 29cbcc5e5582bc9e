"""Which input channels of the backbone's weight products carry outliers: a calibration forward, one layer at a
time where the weights are streamed, and each product's loudest input channels (``outlier_channels``), which
the 8-bit rebuilds (``precision.rebuild``) keep apart in fp32."""

from __future__ import annotations

import pathlib
import re
from typing import Callable, Optional, Sequence

import numpy as np

from ..errors import ModelFolderError
from .precision import weight_products

#: a channel whose largest activation on the calibration forward is this many times the median
#: channel's is an outlier (LLM.int8() uses an absolute 6.0 on trained scales; a ratio fits any scale)
OUTLIER_RATIO = 8.0

#: at most this share of a product's input channels (and at least 8 of them) is kept apart in fp32
MAX_OUTLIER_SHARE = 1 / 64
MIN_OUTLIER_LIMIT = 8

#: calibration forward: positions of text tokens, then of audio codes (some masked), as a prompt has them
CALIBRATION_TEXT, CALIBRATION_AUDIO = 24, 104


def calibration_embeds(embed: Callable, seed: int = 0) -> np.ndarray:
    """``inputs_embeds`` of a prompt-shaped sequence through ``embed`` (the folder's own embedding graph,
    ``OmniVoiceOnnx.embed``): text tokens, then audio positions (three in four masked, as mid-generation)."""
    rng = np.random.default_rng(seed)
    length = CALIBRATION_TEXT + CALIBRATION_AUDIO
    ids = np.empty((1, 8, length), dtype=np.int64)
    text = rng.integers(0, 1000, CALIBRATION_TEXT)
    ids[0, :, :CALIBRATION_TEXT] = text
    audio = rng.integers(0, 1024, (8, CALIBRATION_AUDIO))
    audio[rng.random((8, CALIBRATION_AUDIO)) < 0.75] = 1024
    ids[0, :, CALIBRATION_TEXT:] = audio
    mask = np.zeros((1, length), dtype=bool)
    mask[0, CALIBRATION_TEXT:] = True
    return embed(ids, mask)


def calibration_feeds(model, embeds: np.ndarray) -> dict[str, np.ndarray]:
    """The backbone's inputs for one forward over ``embeds`` (``OmniVoiceOnnx``'s types; no past)."""
    feeds = {"inputs_embeds": embeds.astype(model.embeds_type, copy=False),
             "attention_mask": np.ones((1, embeds.shape[1]), dtype=model.mask_type)}
    if model.past_names:
        empty = np.zeros((1, model.kv_heads, 0, model.head_dim), dtype=model.past_type)
        feeds.update({name: empty for name in model.past_names})
    return feeds


def outlier_channels(path: pathlib.Path, model, providers: Sequence[str], options_factory: Callable, graph=None,
                     source: Optional[dict] = None, embeds: Optional[np.ndarray] = None) -> dict[str, list[int]]:
    """For each weight product's activation, the input channels whose largest magnitude on a calibration
    forward is over ``OUTLIER_RATIO`` times the median channel's (the loudest ``MAX_OUTLIER_SHARE`` of them,
    at least ``MIN_OUTLIER_LIMIT``).

    The forward runs the folder's graph as built (small for an int4 folder) with the activations as
    extra outputs; its weights are read from beside the graph file, not copied.  With ``graph`` and
    ``source`` (``checkpoint.fp32_graph``) it runs that graph instead, one layer at a time
    (``forward_by_layer``: the fp32 weights are never all in memory), on ``embeds`` (``calibration_embeds``
    of ``checkpoint.checkpoint_embedder``: the same weights' tables).
    """
    import onnx
    import onnxruntime as ort

    embeds = calibration_embeds(model.embed) if embeds is None else embeds
    graph_model = onnx.ModelProto()
    graph_model.CopyFrom(graph if graph is not None else onnx.load(str(path), load_external_data=False))
    names = sorted({p.activation for p in weight_products(graph_model.graph)})
    feeds = calibration_feeds(model, embeds)
    if source is not None:
        found = forward_by_layer(graph_model, source, names, feeds, providers, options_factory)
        values = [found[name] for name in names]
    else:
        options = options_factory()
        options.add_session_config_entry("session.disable_prepacking", "1")
        options.add_session_config_entry("session.model_external_initializers_file_folder_path", str(path.parent))
        existing = {o.name for o in graph_model.graph.output}
        graph_model.graph.output.extend(onnx.helper.make_empty_tensor_value_info(n) for n in names
                                        if n not in existing)
        session = ort.InferenceSession(graph_model.SerializeToString(), sess_options=options, providers=list(providers))
        values = session.run(names, feeds)
    found = {}
    for name, value in zip(names, values):
        peaks = np.abs(value.astype(np.float32)).reshape(-1, value.shape[-1]).max(axis=0)
        limit = max(MIN_OUTLIER_LIMIT, int(peaks.size * MAX_OUTLIER_SHARE))
        loud = np.flatnonzero(peaks > OUTLIER_RATIO * max(float(np.median(peaks)), 1e-12))
        loud = loud[np.argsort(-peaks[loud])][:limit]
        if loud.size:
            found[name] = sorted(int(c) for c in loud)
    return found


_LAYER_OF = re.compile(r"(?:^|[./])layers\.(\d+)[./]")


def forward_by_layer(model, source: dict, wanted: Sequence[str], feeds: dict, providers: Sequence[str],
                     options_factory: Callable) -> dict[str, np.ndarray]:
    """The values ``wanted`` of ``model``'s forward on ``feeds``, computed one layer at a time.

    ``model``'s weight products hold placeholders whose values ``source`` loads (``checkpoint.fp32_graph``).
    The nodes, in the graph's order, are cut before the first weight product of each layer (``layers.N``
    in the weight's name); each part runs in a session of its own holding only its weights, handed to
    ONNX Runtime in memory and released after it, so at most one layer's fp32 weights are resident, not
    the whole model's (2 GB at full size).  A part's nodes, kernels and settings are the whole graph's, so
    the values are the whole forward's (``tests/test_backbone_weights.py`` checks it); what crosses a cut
    goes as an input (a ``Constant``'s output is made again in the part that reads it)."""
    import onnx

    from ..runtime.sessions import in_memory_session

    graph = model.graph
    initializers = {init.name: init for init in graph.initializer}
    declared = {info.name: info for info in list(graph.input) + list(graph.value_info)}
    constants = {out: node for node in graph.node if node.op_type == "Constant" for out in node.output}
    parts, layer = [], None
    for node in graph.node:
        weight = node.input[1] if node.op_type in ("MatMul", "MatMulNBits") and len(node.input) > 1 else ""
        match = _LAYER_OF.search(weight) if weight in source else None
        if not parts or (match and layer is not None and match.group(1) != layer):
            parts.append([])
        layer = match.group(1) if match else layer
        parts[-1].append(node)
    last_read = {}
    for index, part in enumerate(parts):
        for node in part:
            for name in node.input:
                last_read[name] = index
    wanted, values = set(wanted), dict(feeds)
    found = {x: v for x, v in feeds.items() if x in wanted}
    for index, part in enumerate(parts):
        made = {out for node in part for out in node.output if out}
        read = list(dict.fromkeys(x for node in part for x in node.input if x and x not in made))
        remade = [constants[x] for x in read if x in constants]
        inputs = [x for x in read if x not in initializers and x not in constants]
        outputs = [x for x in dict.fromkeys(out for node in part for out in node.output if out)
                   if x in wanted or last_read.get(x, -1) > index]
        typed = [declared[x] if x in declared else onnx.helper.make_tensor_value_info(
            x, onnx.helper.np_dtype_to_tensor_dtype(values[x].dtype), [None] * values[x].ndim) for x in inputs]
        piece = onnx.helper.make_graph(remade + part, f"{graph.name}_part{index}", typed,
                                       [onnx.helper.make_empty_tensor_value_info(x) for x in outputs],
                                       [initializers[x] for x in read if x in initializers])
        piece_model = onnx.helper.make_model(piece, opset_imports=list(model.opset_import),
                                             ir_version=model.ir_version)
        options = options_factory()
        options.add_session_config_entry("session.disable_prepacking", "1")
        session = in_memory_session(piece_model, {x: source[x]() for x in read if x in source}, providers, options)
        results = dict(zip(outputs, session.run(outputs, {x: values[x] for x in inputs})))
        del session, options  # and with them this part's weights
        values.update(results)
        # copied: an output of ONNX Runtime may hold on to its session's memory (~10 MB a layer at full size)
        found.update({x: np.array(v) for x, v in results.items() if x in wanted})
        for name in [x for x in values if last_read.get(x, -1) <= index]:
            del values[name]
    missing = sorted(wanted - set(found))
    if missing:
        raise ModelFolderError(f"The backbone graph has no value {missing[0]!r} to calibrate on.")
    return found
