"""Make a genai-built OmniVoice backbone compute the real (bidirectional) model.

onnxruntime-genai's builder emits ``com.microsoft::GroupQueryAttention`` nodes,
which are causal unless told otherwise.  OmniVoice attends in both directions,
so a backbone built that way (our build before this step, and the published
community export) computes a different model.  onnxruntime >= 1.30 honours the
GQA attribute ``causal=0`` (with ``local_window_size=-1``) on CPU; setting it on
every GQA node turns the graph into the reference model.

``make_bidirectional`` never edits a folder in place (a download cache must
stay untouched): it writes a new folder and records the repair in the manifest.
"""

from __future__ import annotations

import datetime
import json
import pathlib
import shutil

from ..storage.manifest import BACKBONE_GRAPHS, FORMAT_NAME, MANIFEST_NAME, write_manifest
from ..errors import InvalidInput

GQA_OP = "GroupQueryAttention"
#: ONNX's own attention (opset 23), which rebuilt backbones run instead of genai's node (``attention.py``)
STANDARD_OP = "Attention"


def is_standard_attention(node) -> bool:
    """Whether ``node`` is ONNX's own ``Attention`` (not com.microsoft's node of the same name)."""
    return node.op_type == STANDARD_OP and node.domain in ("", "ai.onnx")


def attention_nodes(model) -> list:
    """The backbone's attention nodes: genai's ``GroupQueryAttention``, or ONNX's ``Attention`` where rewritten."""
    return [node for node in model.graph.node if node.op_type == GQA_OP or is_standard_attention(node)]


def is_causal_graph(model) -> bool:
    """True when any attention node of ``model`` (an onnx.ModelProto) attends causally (genai's ``causal``
    defaults to 1, ONNX's ``is_causal`` to 0)."""
    import onnx

    for node in attention_nodes(model):
        attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
        if (attrs.get("causal", 1) if node.op_type == GQA_OP else attrs.get("is_causal", 0)) != 0:
            return True
    return False


def set_bidirectional(model) -> int:
    """Set ``causal=0`` and ``local_window_size=-1`` on every GQA node; return how many."""
    import onnx

    nodes = [node for node in attention_nodes(model) if node.op_type == GQA_OP]
    for node in nodes:
        keep = [a for a in node.attribute if a.name not in ("causal", "local_window_size")]
        del node.attribute[:]
        node.attribute.extend(keep)
        node.attribute.append(onnx.helper.make_attribute("causal", 0))
        node.attribute.append(onnx.helper.make_attribute("local_window_size", -1))
    return len(nodes)


def _rewrite_graph_header(src_graph: pathlib.Path, dst_graph: pathlib.Path) -> int:
    """Rewrite the graph protobuf only; external weight files are copied byte for byte."""
    import onnx

    model = onnx.load(str(src_graph), load_external_data=False)
    count = set_bidirectional(model)
    if count == 0:
        raise InvalidInput(
            f"{src_graph.name} has no {GQA_OP} node: it is not a genai-built OmniVoice backbone, "
            "so it cannot be repaired this way."
        )
    onnx.save(model, str(dst_graph))
    return count


def make_bidirectional(folder: str | pathlib.Path, output: str | pathlib.Path,
                       backbone: str = BACKBONE_GRAPHS["backbone"]) -> pathlib.Path:
    """Copy ``folder`` to ``output`` with a bidirectional backbone, and record the repair.

    Works on our folders and on the published layout.  Files other than the
    backbone graph (including its external weights) are copied unchanged.  A
    manifest of another format is kept as ``source_manifest.json`` and a manifest of
    ours is written with ``backbone_attention: "bidirectional"``.
    """
    folder, output = pathlib.Path(folder), pathlib.Path(output)
    if folder.resolve() == output.resolve():
        raise InvalidInput("make_bidirectional writes a new folder; give an output other than the input")
    src_graph = folder / backbone
    if not src_graph.is_file():
        raise FileNotFoundError(f"{src_graph} not found: the folder has no backbone graph to repair")
    if output.exists():
        shutil.rmtree(output)
    tmp = output.with_name(output.name + ".partial")
    if tmp.exists():
        shutil.rmtree(tmp)
    shutil.copytree(folder, tmp, symlinks=False)
    count = _rewrite_graph_header(src_graph, tmp / backbone)

    manifest_path = tmp / MANIFEST_NAME
    previous = {}
    if manifest_path.is_file():
        previous = json.loads(manifest_path.read_text(encoding="utf-8"))
        if previous.get("format") != FORMAT_NAME:
            (tmp / "source_manifest.json").write_text(json.dumps(previous, indent=2), encoding="utf-8")
            previous = {}
    manifest = {k: v for k, v in previous.items() if k not in ("format", "format_version", "files")}
    manifest["backbone_attention"] = "bidirectional"
    manifest.setdefault("repairs", []).append({
        "what": f"set causal=0, local_window_size=-1 on {count} {GQA_OP} nodes of {backbone}",
        "why": "OmniVoice's backbone attends bidirectionally; genai's GQA is causal by default",
        "when": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    })
    write_manifest(tmp, manifest)
    tmp.rename(output)
    return output
