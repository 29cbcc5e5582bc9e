"""Build an OmniVoice ONNX model folder from a PyTorch checkpoint.

The folder has the layout of the published export, so one engine reads both:

    audio_embeddings_encoder.onnx   input_ids [B,8,S] int64 + audio_mask [B,S] bool -> inputs_embeds [B,S,H]
    llm_decoder.onnx (+ .data)      onnxruntime-genai backbone: inputs_embeds + attention_mask
                                    + empty KV cache -> hidden_states [B,S,H]  (made BIDIRECTIONAL)
    genai_config.json
    audio_heads_decoder.onnx        hidden_states [B,S,H] -> logits [B,8,S,1025]
    audio_tokenizer/                the four codec graphs (convert/codec.py)
    tokenizer.json, tokenizer_config.json
    omnivoice_manifest.json

The two small ends go through Olive workflows defined here as Python dicts
(OnnxConversion with the TorchScript exporter, then OnnxFloatToFloat16 or
OnnxBlockWiseRtnQuantization); the backbone through onnxruntime-genai's
``create_model``, then ``make_bidirectional``'s graph edit.
"""

from __future__ import annotations

import dataclasses
import json
import pathlib
import shutil
import tempfile
import time
from typing import Callable

from omnivoice_demo.storage.manifest import BACKBONE_GRAPHS, CODEC_DIR, write_manifest
from omnivoice_demo.backbones.repair import is_causal_graph, set_bidirectional

GRAPHS_SCRIPT = pathlib.Path(__file__).with_name("graphs.py")
INT4_BLOCK_SIZE = 32  # block 128 loses quality; see ../shared/omnivoice-reference.md


@dataclasses.dataclass(frozen=True)
class Profile:
    """Precision of each part of a model folder."""

    name: str
    audio_embeddings: str  # fp32 | fp16 | int4
    backbone: str          # fp32 | fp16 | int4 (genai builder precision) | int8 (genai fp32, then rebuilt in 8 bits)
    audio_heads: str       # fp32 | fp16 -- never int4: int4 heads destroy token agreement
    codec: str             # fp32 | fp16
    execution_provider: str  # cpu | cuda (what the backbone is built for)


PROFILES = {
    "cpu_fp32": Profile("cpu_fp32", "fp32", "fp32", "fp32", "fp32", "cpu"),
    "cpu": Profile("cpu", "int4", "int4", "fp32", "fp32", "cpu"),
    # the backbone built in fp32, then rebuilt in 8 bits (omnivoice_demo.backbones.precision; --int8-form)
    "cpu_int8": Profile("cpu_int8", "int4", "int8", "fp32", "fp32", "cpu"),
    "cpu_fp16": Profile("cpu_fp16", "fp16", "int4", "fp16", "fp16", "cpu"),
    "gpu": Profile("gpu", "fp16", "fp16", "fp16", "fp16", "cuda"),
}


class StageProgress:
    """Prints 'stage n of m' with the elapsed time, or forwards to a callback."""

    def __init__(self, total: int, callback: Callable[[str], None] | None = None):
        self.total, self.done = total, 0
        self.callback = callback or (lambda line: print(line, flush=True))
        self.started = time.perf_counter()

    def __call__(self, message: str) -> None:
        self.done += 1
        elapsed = time.perf_counter() - self.started
        self.callback(f"[stage {self.done}/{self.total}, {elapsed:6.1f} s] {message}")


# --- Olive workflows ------------------------------------------------------------------

def olive_workflow(checkpoint_dir: pathlib.Path, loader: str, dummy_inputs: str, io_config: dict,
                   precision: str, int4_accuracy_level: int = 0, int4_block_size: int = INT4_BLOCK_SIZE) -> dict:
    """An Olive workflow, as a dict, that exports one wrapper of convert/graphs.py."""
    passes = {
        "conversion": {
            "type": "OnnxConversion",
            "target_opset": 20,
            # the TorchScript exporter: dynamo specialises the dynamic lengths here
            "use_dynamo_exporter": False,
            "save_as_external_data": True,
            "all_tensors_to_one_file": True,
        }
    }
    if precision == "fp16":
        passes["fp16"] = {"type": "OnnxFloatToFloat16", "keep_io_types": True}
    elif precision == "int4":
        passes["int4"] = {
            "type": "OnnxBlockWiseRtnQuantization",
            "bits": 4,
            "block_size": int4_block_size,
            "is_symmetric": True,
            "accuracy_level": int4_accuracy_level,
        }
    elif precision != "fp32":
        raise ValueError(f"unknown precision {precision!r}")
    return {
        "input_model": {
            "type": "PyTorchModel",
            "model_path": str(checkpoint_dir),
            "model_script": str(GRAPHS_SCRIPT),
            "model_loader": loader,
            "dummy_inputs_func": dummy_inputs,
            "io_config": io_config,
        },
        "passes": passes,
    }


def run_olive(workflow: dict, destination: pathlib.Path, work: pathlib.Path) -> pathlib.Path:
    """Run ``workflow`` in ``work`` and save its model as ``destination``, weights in one
    ``<name>.data`` file beside it (inline only below 1 MiB), as the published layout has them."""
    from convert.olive_runs import run_olive_workflow, save_graph

    save_graph(run_olive_workflow(workflow, work), destination, threshold=1 << 20)
    return destination


def export_audio_embeddings(checkpoint_dir, output: pathlib.Path, precision: str, work: pathlib.Path,
                            int4_accuracy_level: int = 0, int4_block_size: int = INT4_BLOCK_SIZE) -> pathlib.Path:
    from convert.graphs import AUDIO_EMBEDDINGS_IO

    io = {k: v for k, v in AUDIO_EMBEDDINGS_IO.items() if k in ("input_names", "output_names", "dynamic_axes")}
    workflow = olive_workflow(checkpoint_dir, "load_audio_embeddings", "audio_embeddings_dummy_inputs", io,
                              precision, int4_accuracy_level, int4_block_size)
    return run_olive(workflow, output / BACKBONE_GRAPHS["audio_embeddings"], work / "embeddings")


def export_audio_heads(checkpoint_dir, output: pathlib.Path, precision: str, work: pathlib.Path) -> pathlib.Path:
    from convert.graphs import AUDIO_HEADS_IO

    if precision not in ("fp32", "fp16"):
        raise ValueError("the audio heads stay in float (fp32 or fp16): int4 heads destroy token agreement")
    workflow = olive_workflow(checkpoint_dir, "load_audio_heads", "audio_heads_dummy_inputs", AUDIO_HEADS_IO,
                              precision)
    return run_olive(workflow, output / BACKBONE_GRAPHS["audio_heads"], work / "heads")


# --- backbone --------------------------------------------------------------------------

def write_bare_qwen3(checkpoint_dir: pathlib.Path, destination: pathlib.Path) -> dict:
    """Save OmniVoice's backbone as a plain Qwen3 causal-LM folder for genai's builder.

    The builder wants a causal-LM checkpoint; its LM head is excluded from the
    graph (exclude_lm_head), so the placeholder head's values never matter.
    """
    import torch
    from transformers import AutoTokenizer, Qwen3ForCausalLM

    from convert.graphs import load_omnivoice

    model = load_omnivoice(str(checkpoint_dir))
    llm_config = model.config.llm_config
    llm_config.tie_word_embeddings = False
    with torch.no_grad():
        qwen = Qwen3ForCausalLM(llm_config)
        qwen.model.load_state_dict(model.llm.state_dict())
    qwen.save_pretrained(str(destination), safe_serialization=True)
    AutoTokenizer.from_pretrained(str(checkpoint_dir)).save_pretrained(str(destination))
    return llm_config.to_dict()


def build_backbone(checkpoint_dir: pathlib.Path, output: pathlib.Path, precision: str, execution_provider: str,
                   work: pathlib.Path, bidirectional: bool = True, int4_accuracy_level: int | None = None,
                   int4_block_size: int = INT4_BLOCK_SIZE) -> dict:
    """``llm_decoder.onnx`` + ``genai_config.json`` via onnxruntime-genai's builder."""
    import onnx
    from onnxruntime_genai.models.builder import create_model, parse_extra_options

    qwen_dir = work / "qwen3"
    llm_config = write_bare_qwen3(checkpoint_dir, qwen_dir)
    build_dir = work / "genai"
    options = ["exclude_embeds=true", "exclude_lm_head=true", f"filename={BACKBONE_GRAPHS['backbone']}"]
    if precision == "int4":
        options.append(f"block_size={int4_block_size}")
        if int4_accuracy_level is not None:
            options.append(f"accuracy_level={int4_accuracy_level}")
    # model_name is only a label here: the weights come from input_path
    args = ("Qwen/Qwen3-0.6B", str(qwen_dir), str(build_dir), precision, execution_provider,
            str(work / "genai-cache"))
    create_model(*args, **parse_extra_options(*args, options))

    graph_path = build_dir / BACKBONE_GRAPHS["backbone"]
    model = onnx.load(str(graph_path), load_external_data=False)
    if bidirectional:
        set_bidirectional(model)
    onnx.save(model, str(output / BACKBONE_GRAPHS["backbone"]))
    data_name = BACKBONE_GRAPHS["backbone"] + ".data"
    shutil.move(str(build_dir / data_name), str(output / data_name))
    shutil.copy2(build_dir / "genai_config.json", output / "genai_config.json")
    levels = {attr.i for node in model.graph.node if node.op_type == "MatMulNBits"
              for attr in node.attribute if attr.name == "accuracy_level"}
    return {"llm_config": llm_config, "causal": is_causal_graph(model),
            "accuracy_level": levels.pop() if len(levels) == 1 else None}


def rebuild_backbone_in_place(output: pathlib.Path, form: str, work: pathlib.Path) -> None:
    """Replace the fp32 backbone of ``output`` by its 8-bit rebuild (the engine's own, so a folder built
    this way computes what ``backbone=form`` computes from the fp32 folder)."""
    from omnivoice_demo.backbones.choice import write_rebuilt
    from omnivoice_demo.engine.onnx_model import OmniVoiceOnnx
    from omnivoice_demo.runtime.sessions import providers_for, session_options

    from omnivoice_demo.backbones.choice import EIGHT_BIT

    if form not in EIGHT_BIT:
        raise ValueError(f"int8_form must be one of {', '.join(EIGHT_BIT)}, got {form!r}")
    graph = output / BACKBONE_GRAPHS["backbone"]
    staged = work / "int8"
    staged.mkdir()
    model = OmniVoiceOnnx(output)
    write_rebuilt(graph, form, model, providers_for("cpu"), session_options, staged)
    del model
    for name in (graph.name, graph.name + ".data"):
        shutil.move(str(staged / name), str(output / name))


# --- the whole folder --------------------------------------------------------------------

def model_constants(checkpoint_dir: pathlib.Path, llm_config: dict) -> dict:
    from convert.random_checkpoint import OMNIVOICE_SPECIAL_TOKENS

    config = json.loads((checkpoint_dir / "config.json").read_text())
    tokenizer = json.loads((checkpoint_dir / "tokenizer.json").read_text())
    added = {t["content"]: t["id"] for t in tokenizer.get("added_tokens", [])}
    return {
        "num_codebooks": config.get("num_audio_codebook", 8),
        "audio_vocab_size": config.get("audio_vocab_size", 1025),
        "audio_mask_id": config.get("audio_mask_id", 1024),
        "sample_rate": 24000,
        "frame_rate": 25,
        "hop_length": 960,
        "hidden_size": llm_config["hidden_size"],
        "num_hidden_layers": llm_config["num_hidden_layers"],
        "num_key_value_heads": llm_config["num_key_value_heads"],
        "head_dim": llm_config.get("head_dim") or llm_config["hidden_size"] // llm_config["num_attention_heads"],
        "text_vocab_size": llm_config["vocab_size"],
        "special_tokens": {name: added[name] for name in OMNIVOICE_SPECIAL_TOKENS if name in added},
    }


def check_checkpoint(checkpoint_dir: pathlib.Path) -> None:
    """The checkpoint's ``model.safetensors`` checked before any export: its header (``read_header``: a
    malformed file is named with its problem in one line, not a SafetensorError after Olive's 30-40 s) and
    every float tensor finite (``check_finite``: NaN weights are refused naming the tensor, never built into
    a folder the engine would then call "causal").  A ``ValueError`` (the command's one error line)."""
    from omnivoice_demo.backbones.checkpoint import WEIGHTS_FILE, check_finite
    from omnivoice_demo.errors import ModelFolderError

    path = checkpoint_dir / WEIGHTS_FILE
    if not path.is_file():
        raise FileNotFoundError(f"{checkpoint_dir} has no {WEIGHTS_FILE}: not an OmniVoice checkpoint folder")
    try:
        check_finite(path)
    except ModelFolderError as exc:
        raise ValueError(str(exc)) from None


def convert_checkpoint(checkpoint_dir, output_dir, profile: str = "cpu_fp32", include_codec: bool = True,
                       codec_only: bool = False, codec_precision: str | None = None, bidirectional: bool = True,
                       int4_accuracy_level: int | None = None, int4_block_size: int = INT4_BLOCK_SIZE,
                       int8_form: str = "int8", progress: Callable[[str], None] | None = None) -> pathlib.Path:
    """Build the ONNX folder for ``profile`` from an OmniVoice PyTorch checkpoint folder.

    ``bidirectional=False`` leaves genai's backbone causal, as the published
    export ships it; it exists to test the repair and the engine's refusal.
    ``int8_form`` is the 8-bit form of the ``cpu_int8`` profile's backbone
    (``int8``, ``int8-block`` or ``int8-tensor``: ``omnivoice_demo.backbones.precision``).
    """
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}; choose one of {', '.join(PROFILES)}")
    spec = PROFILES[profile]
    checkpoint_dir, output = pathlib.Path(checkpoint_dir), pathlib.Path(output_dir)
    if not (checkpoint_dir / "config.json").is_file():
        raise FileNotFoundError(f"{checkpoint_dir} is not an OmniVoice checkpoint folder (no config.json)")
    if not codec_only:
        check_checkpoint(checkpoint_dir)   # one line naming the file and the problem, before Olive starts
    codec_precision = codec_precision or spec.codec
    include_codec = include_codec or codec_only
    eight_bit = spec.backbone == "int8"
    stages = (1 if codec_only else 5 + eight_bit) + (1 if include_codec else 0)
    step = StageProgress(stages, progress)
    output.mkdir(parents=True, exist_ok=True)

    with tempfile.TemporaryDirectory(prefix="omnivoice-convert-") as tmp:
        work = pathlib.Path(tmp)
        info = {"llm_config": None, "causal": None, "accuracy_level": None}
        if not codec_only:
            step(f"audio embeddings ({spec.audio_embeddings}) with Olive")
            export_audio_embeddings(checkpoint_dir, output, spec.audio_embeddings, work, int4_accuracy_level or 0,
                                    int4_block_size)
            step(f"audio heads ({spec.audio_heads}) with Olive")
            export_audio_heads(checkpoint_dir, output, spec.audio_heads, work)
            step(f"backbone ({spec.backbone}, {spec.execution_provider}) with onnxruntime-genai")
            info = build_backbone(checkpoint_dir, output, "fp32" if eight_bit else spec.backbone,
                                  spec.execution_provider, work, bidirectional=bidirectional,
                                  int4_accuracy_level=int4_accuracy_level, int4_block_size=int4_block_size)
            if eight_bit:
                step(f"backbone rebuilt in 8 bits ({int8_form})")
                rebuild_backbone_in_place(output, int8_form, work)
            step("tokenizer files")
            for name in ("tokenizer.json", "tokenizer_config.json"):
                shutil.copy2(checkpoint_dir / name, output / name)
        if include_codec:
            from convert.codec import export_codec

            step(f"audio codec ({codec_precision})")
            export_codec(checkpoint_dir, output, precision=codec_precision, progress=lambda m: None)

    if codec_only:
        return output
    step("manifest")
    manifest = {
        "profile": profile,
        "precision": {
            "audio_embeddings": spec.audio_embeddings,
            "backbone": int8_form if eight_bit else spec.backbone,
            "audio_heads": spec.audio_heads,
            "codec": codec_precision if include_codec else None,
            "int4_block_size": int4_block_size if "int4" in (spec.backbone, spec.audio_embeddings) else None,
            "int4_accuracy_level": info["accuracy_level"],
        },
        "execution_provider": spec.execution_provider,
        "backbone_attention": "causal" if info["causal"] else "bidirectional",
        "model": model_constants(checkpoint_dir, info["llm_config"]),
        "graphs": {**BACKBONE_GRAPHS, **({"codec": CODEC_DIR} if include_codec else {})},
        "source": {"checkpoint": checkpoint_dir.name, "builder": "OmniVoice ONNX Studio convert"},
    }
    random_marker = checkpoint_dir / "random_checkpoint.json"
    if random_marker.is_file():
        manifest["source"]["random_weights"] = json.loads(random_marker.read_text())
    write_manifest(output, manifest)
    return output
