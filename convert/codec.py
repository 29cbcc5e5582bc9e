"""Export the Higgs Audio V2 codec (OmniVoice's ``audio_tokenizer/``) to four ONNX graphs.

    export_codec(checkpoint_dir, output_dir, precision="fp32" | "fp16") -> [paths]

writes ``output_dir/audio_tokenizer/`` with the layout of the published
community export (graph names from ``omnivoice_demo.storage.manifest.CODEC_GRAPHS``):

``acoustic_encoder.onnx``
    ``waveform_24k`` float32 [B, 1, N] -> ``acoustic_features`` float32
    [B, A, T] (A = acoustic hidden, 256 in the released codec).  The DAC
    encoder, *including* the padding rule of
    ``HiggsAudioV2TokenizerModel.encode``: the reference pads the waveform by
    ``hop // 2`` (480) samples on each side when the acoustic encoder's output
    length for N samples differs from the semantic branch's frame count.  Both
    lengths are pure functions of N, so the graph computes them from the input
    shape (the same integer arithmetic: conv output lengths of the acoustic
    encoder; resampled length ceil(2N/3), +320 samples of padding, HuBERT's
    conv stack, every 2nd frame, the semantic conv stack) and pads by 480 or 0.
    For N a multiple of 960 the two lengths are both N/960 and nothing is
    padded; other lengths are padded exactly when the reference pads.
``semantic_encoder.onnx``
    ``waveform_16k`` float32 [B, N'] -> ``semantic_features`` float32 [B, S, T]
    (S = HuBERT hidden, 768).  ``F.pad(160, 160)``, HuBERT with all hidden
    states averaged, every 2nd frame, the semantic conv encoder.  The 24 kHz ->
    16 kHz resampling (``torchaudio.functional.resample``) is *not* in the
    graph: ``omnivoice_demo.audio.resample`` reproduces it in NumPy.
``quantizer_encoder.onnx``
    ``acoustic_features`` [B, A, T], ``semantic_features`` [B, S, T] -> ``audio_codes``
    int64 [8, B, T]: concat (acoustic first), ``fc``, residual VQ (per
    quantizer: project_in, argmax of minus the squared distance, subtract the
    projected code vector).
``higgs_decoder.onnx``
    ``audio_codes`` int64 [8, B, T] -> ``waveform_24k`` float32 [B, 1, 960*T]:
    sum of the quantizers' projected code vectors, ``fc2``, DAC decoder.

Batch and length axes are dynamic.  The torch -> ONNX step runs Olive's
``OnnxConversion`` pass (legacy TorchScript exporter, ``dynamo=False``: the
dynamo exporter fails on the dynamic audio length; opset 20) from a workflow
given as a Python dict.  ``precision="fp16"`` then runs Olive's
``OnnxFloatToFloat16`` pass (``keep_io_types``) on each fp32 graph, keeping in
fp32: ConvTranspose/Resize (acoustic graphs), LayerNormalization (semantic),
the whole quantizer_encoder (12 MB at full size, so fp16 saves little, and an
argmin over fp16 distances flips near-tie codes: 99.7% agreement on the tiny
test codec against 100% in fp32), and the decoder when a probe shows fp16
non-finite output or drift.
``audio_tokenizer/codec_export.json`` records what each graph holds.

Graphs below ``EXTERNAL_DATA_THRESHOLD`` bytes keep their weights inside the
``.onnx`` file; larger ones get exactly one ``<graph>.onnx.data`` file.

    python -m convert.codec --checkpoint CKPT --output DIR [--precision fp16]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import pathlib
import shutil
import sys
import tempfile
import time
import warnings
from typing import Callable

#: I/O names of each graph, in input order.
GRAPH_IO: dict[str, tuple[list[str], list[str]]] = {
    "acoustic_encoder": (["waveform_24k"], ["acoustic_features"]),
    "semantic_encoder": (["waveform_16k"], ["semantic_features"]),
    "quantizer_encoder": (["acoustic_features", "semantic_features"], ["audio_codes"]),
    "higgs_decoder": (["audio_codes"], ["waveform_24k"]),
}

#: Dynamic axes of each graph (string keys: Olive's config walker rejects int keys).
GRAPH_DYNAMIC_AXES: dict[str, dict[str, dict[str, str]]] = {
    "acoustic_encoder": {
        "waveform_24k": {"0": "batch", "2": "samples_24k"},
        "acoustic_features": {"0": "batch", "2": "frames"},
    },
    "semantic_encoder": {
        "waveform_16k": {"0": "batch", "1": "samples_16k"},
        "semantic_features": {"0": "batch", "2": "frames"},
    },
    "quantizer_encoder": {
        "acoustic_features": {"0": "batch", "2": "frames"},
        "semantic_features": {"0": "batch", "2": "frames"},
        "audio_codes": {"1": "batch", "2": "frames"},
    },
    "higgs_decoder": {
        "audio_codes": {"1": "batch", "2": "frames"},
        "waveform_24k": {"0": "batch", "2": "samples_24k"},
    },
}

#: Op types kept in fp32 by the fp16 conversion, per graph.
FP16_OP_BLOCK_LIST: dict[str, list[str]] = {
    "acoustic_encoder": ["ConvTranspose", "Resize"],
    "semantic_encoder": ["LayerNormalization"],
    "higgs_decoder": ["ConvTranspose", "Resize"],
}
#: Graphs never converted to fp16 (see the module docstring).
FP16_KEEP_FP32 = ("quantizer_encoder",)
#: The fp16 decoder is replaced by the fp32 one below this SNR against fp32 (dB) on the probe.
FP16_DECODER_MIN_SNR_DB = 30.0

OPSET = 20
EXTERNAL_DATA_THRESHOLD = 512 * 1024 * 1024
CODEC_FILES = ("config.json", "preprocessor_config.json")
#: Traced example: batch 2, 10 frames (shapes unlike batch 1 so nothing is specialised to it).
TRACE_BATCH, TRACE_FRAMES = 2, 10


# --------------------------------------------------------------------------- torch wrappers


def _wrappers():
    """The four graph modules (defined lazily so importing this file needs no torch)."""
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    def conv_length(length, convs, rounding_mode):
        for conv in convs:
            numerator = length + 2 * conv.padding[0] - conv.dilation[0] * (conv.kernel_size[0] - 1) - 1
            length = torch.div(numerator, conv.stride[0], rounding_mode=rounding_mode) + 1
        return length

    class AcousticEncoder(nn.Module):
        """waveform_24k [B,1,N] -> acoustic_features [B,A,T], with encode()'s padding rule."""

        def __init__(self, codec):
            super().__init__()
            cfg = codec.config
            self.encoder = codec.acoustic_encoder
            self.pad = int(codec.pad)
            # the reference's _get_conv1d_output_lengths: every Conv1d, int() truncation
            self.acoustic_convs = list(codec._get_conv1d_layers(codec.acoustic_encoder))
            g = math.gcd(int(cfg.sample_rate), int(cfg.semantic_sample_rate))
            self.resample_orig = int(cfg.sample_rate) // g
            self.resample_new = int(cfg.semantic_sample_rate) // g
            sem = cfg.semantic_model_config
            self.hubert_convs = list(zip(sem.conv_kernel, sem.conv_stride))
            self.downsample = int(cfg.semantic_downsample_factor)
            self.semantic_convs = [m for m in codec.encoder_semantic.modules() if isinstance(m, nn.Conv1d)]

        def forward(self, waveform_24k):
            n = torch._shape_as_tensor(waveform_24k)[2]
            acoustic_len = conv_length(n, self.acoustic_convs, "trunc")
            # semantic frame count: torchaudio resample length, F.pad(160,160), HuBERT convs,
            # [::downsample], the semantic encoder convs
            sem = torch.div(n * self.resample_new + self.resample_orig - 1, self.resample_orig,
                            rounding_mode="floor") + 320
            for kernel, stride in self.hubert_convs:
                sem = torch.div(sem - kernel, stride, rounding_mode="floor") + 1
            sem = torch.div(sem + self.downsample - 1, self.downsample, rounding_mode="floor")
            sem = conv_length(sem, self.semantic_convs, "floor")
            pad = torch.where(acoustic_len != sem, self.pad, 0)
            padded = F.pad(waveform_24k, (self.pad, self.pad))
            index = torch.arange(self.pad - pad, self.pad + n + pad)
            return self.encoder(padded.index_select(2, index))

    class SemanticEncoder(nn.Module):
        """waveform_16k [B,N'] -> semantic_features [B,S,T]."""

        def __init__(self, codec):
            super().__init__()
            self.semantic_model = codec.semantic_model
            self.encoder_semantic = codec.encoder_semantic
            self.downsample = int(codec.config.semantic_downsample_factor)

        def forward(self, waveform_16k):
            values = F.pad(waveform_16k, (160, 160))
            outputs = self.semantic_model(values, output_hidden_states=True)
            features = torch.stack(list(outputs.hidden_states), dim=1).mean(dim=1)
            if self.downsample > 1:
                features = features[:, :: self.downsample, :]
            return self.encoder_semantic(features.transpose(1, 2))

    class QuantizerEncoder(nn.Module):
        """acoustic [B,A,T], semantic [B,S,T] -> audio_codes int64 [Q,B,T]."""

        def __init__(self, codec):
            super().__init__()
            self.fc = codec.fc
            self.quantizer = codec.quantizer
            self.bandwidth = codec.config.target_bandwidths[-1]  # encode(bandwidth=None)

        def forward(self, acoustic_features, semantic_features):
            embeddings = torch.cat([acoustic_features, semantic_features], dim=1)
            embeddings = self.fc(embeddings.transpose(1, 2)).transpose(1, 2)
            return self.quantizer.encode(embeddings, self.bandwidth)

    class Decoder(nn.Module):
        """audio_codes int64 [Q,B,T] -> waveform_24k [B,1,hop*T]."""

        def __init__(self, codec):
            super().__init__()
            self.quantizer = codec.quantizer
            self.fc2 = codec.fc2
            self.acoustic_decoder = codec.acoustic_decoder

        def forward(self, audio_codes):
            quantized = self.quantizer.decode(audio_codes)
            quantized = self.fc2(quantized.transpose(1, 2)).transpose(1, 2)
            return self.acoustic_decoder(quantized)

    return {
        "acoustic_encoder": AcousticEncoder,
        "semantic_encoder": SemanticEncoder,
        "quantizer_encoder": QuantizerEncoder,
        "higgs_decoder": Decoder,
    }


def _fold_snake(codec) -> int:
    """Replace every DAC ``Snake1d`` by one holding ``1 / (alpha + 1e-9)`` as a buffer; return the count.

    ``Snake1d`` recomputes that reciprocal of a parameter on every call; the
    legacy exporter leaves it in the graph, where the fp16 build cannot fold it
    (onnxruntime warns on every session).  The buffer is the same float32 value
    torch computes, so the function is unchanged.  The no-op reshape to
    ``[B, C, -1]`` of a 3-D input is dropped too.
    """
    import torch
    import torch.nn as nn

    class FoldedSnake(nn.Module):
        def __init__(self, alpha):
            super().__init__()
            self.register_buffer("alpha", alpha.detach().clone())
            self.register_buffer("inv_alpha", (alpha.detach() + 1e-9).reciprocal())

        def forward(self, hidden_states):
            return hidden_states + self.inv_alpha * torch.sin(self.alpha * hidden_states).pow(2)

    count = 0
    for parent in list(codec.modules()):
        for child_name, child in list(parent.named_children()):
            if type(child).__name__ == "Snake1d":
                setattr(parent, child_name, FoldedSnake(child.alpha))
                count += 1
    return count


def load_torch_codec(codec_dir: str | pathlib.Path, fold_snake: bool = False):
    """The PyTorch codec in eval mode, fp32, weight-norm parametrisations folded into plain weights.

    Folding computes the same ``g * v / ||v||`` once, so the graph holds one
    weight per conv instead of the norm arithmetic.  ``fold_snake`` applies
    ``_fold_snake`` (export only).
    """
    from torch.nn.utils import parametrize
    from transformers import HiggsAudioV2TokenizerModel

    codec = HiggsAudioV2TokenizerModel.from_pretrained(str(codec_dir)).float().eval()
    for module in codec.modules():
        if parametrize.is_parametrized(module):
            for name in list(module.parametrizations.keys()):
                parametrize.remove_parametrizations(module, name, leave_parametrized=True)
    if fold_snake:
        _fold_snake(codec)
    return codec


def _dummy_inputs(name: str, codec) -> tuple:
    import torch

    cfg = codec.config
    hop = int(cfg.hop_length)
    n24 = TRACE_FRAMES * hop
    generator = torch.Generator().manual_seed(0)
    if name == "acoustic_encoder":
        return (0.1 * torch.randn(TRACE_BATCH, 1, n24, generator=generator),)
    if name == "semantic_encoder":
        n16 = math.ceil(n24 * cfg.semantic_sample_rate / cfg.sample_rate)
        return (0.1 * torch.randn(TRACE_BATCH, n16, generator=generator),)
    if name == "quantizer_encoder":
        a = cfg.acoustic_model_config.hidden_size
        s = cfg.semantic_model_config.hidden_size
        return (torch.randn(TRACE_BATCH, a, TRACE_FRAMES, generator=generator),
                torch.randn(TRACE_BATCH, s, TRACE_FRAMES, generator=generator))
    if name == "higgs_decoder":
        q = codec.quantizer.get_num_quantizers_for_bandwidth(cfg.target_bandwidths[-1])
        return (torch.randint(0, cfg.codebook_size, (q, TRACE_BATCH, TRACE_FRAMES), generator=generator),)
    raise KeyError(name)


# --------------------------------------------------------------------------- Olive steps


class _QuietRunHistory:
    """Logging filter: drop Olive's INFO run-history lines (printed whatever the configured level)."""

    def filter(self, record) -> bool:
        return record.levelno > 20 or "run history" not in record.getMessage()


def olive_telemetry_off() -> None:
    """Keep Olive from sending anything: our builds run on users' machines and offline ones.

    Olive 0.13 logs a heartbeat (a device id, the OS) *before* it reads ``OLIVE_DISABLE_TELEMETRY``;
    only CI variables skip it, and on a machine with no network its export thread then prints a
    traceback into the build's output.  Its ``Telemetry`` is a singleton whose every method does
    nothing while its logger is None, so we make that instance first, already initialised with no
    logger.  A user who wants Olive's telemetry sets ``OLIVE_DISABLE_TELEMETRY=0``."""
    os.environ.setdefault("OLIVE_DISABLE_TELEMETRY", "1")
    if os.environ["OLIVE_DISABLE_TELEMETRY"] != "1":
        return
    from olive.telemetry.telemetry import Telemetry

    instance = Telemetry.__new__(Telemetry)
    if not instance._initialized:
        instance._logger = None
        instance._cache_handler = None
        instance._initialized = True
    else:  # made earlier in this process: stop what it would still send
        instance.disable_telemetry()


def run_olive_workflow(config: dict, work: pathlib.Path) -> pathlib.Path:
    """Run one Olive workflow given as a dict (outputs and cache under ``work``); return the produced
    model.onnx.  Shared by convert/pipeline.py."""
    olive_telemetry_off()
    import logging

    from olive.workflows import run

    # Olive forces INFO to print its run history; keep the export's progress readable
    engine_logger = logging.getLogger("olive.engine.engine")
    if not any(isinstance(f, _QuietRunHistory) for f in engine_logger.filters):
        engine_logger.addFilter(_QuietRunHistory())

    out_dir = work / "out"
    config = {
        **config,
        "cache_dir": str(work / "cache"),
        "output_dir": str(out_dir),
        "log_severity_level": 3,
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run(config)
    model = out_dir / "model.onnx"
    if not model.is_file():
        raise RuntimeError(f"Olive produced no model in {out_dir}: {sorted(p.name for p in out_dir.glob('*'))}")
    return model


def _olive_convert(name: str, codec, work: pathlib.Path) -> pathlib.Path:
    """torch -> ONNX fp32 with Olive's OnnxConversion (legacy exporter, opset 20)."""
    module = _wrappers()[name](codec).eval()
    dummy = _dummy_inputs(name, codec)
    inputs, outputs = GRAPH_IO[name]
    config = {
        "input_model": {
            "type": "PyTorchModel",
            "model_loader": lambda _path=None: module,
            "dummy_inputs_func": lambda _model=None: dummy,
            "io_config": {
                "input_names": inputs,
                "output_names": outputs,
                "dynamic_axes": GRAPH_DYNAMIC_AXES[name],
            },
        },
        "passes": {
            "conversion": {"type": "OnnxConversion", "target_opset": OPSET, "use_dynamo_exporter": False},
        },
    }
    return run_olive_workflow(config, work)


def _olive_fp16(model_path: pathlib.Path, op_block_list: list[str], work: pathlib.Path) -> pathlib.Path:
    """fp32 ONNX -> fp16 with Olive's OnnxFloatToFloat16 (float32 inputs/outputs kept)."""
    config = {
        "input_model": {"type": "ONNXModel", "model_path": str(model_path)},
        "passes": {
            "f16": {"type": "OnnxFloatToFloat16", "keep_io_types": True,
                    "op_block_list": list(op_block_list) or None},
        },
    }
    return run_olive_workflow(config, work)


def save_graph(source: pathlib.Path, target: pathlib.Path, threshold: int | None = None) -> list[pathlib.Path]:
    """Copy ``source`` to ``target``: weights inline below ``threshold`` bytes (default
    ``EXTERNAL_DATA_THRESHOLD``), else one ``<name>.data`` file.  Shared by convert/pipeline.py."""
    import onnx

    model = onnx.load(str(source), load_external_data=True)
    for stale in (target, target.with_name(target.name + ".data")):
        stale.unlink(missing_ok=True)
    size = sum(init.ByteSize() for init in model.graph.initializer)
    if size < (EXTERNAL_DATA_THRESHOLD if threshold is None else threshold):
        onnx.save_model(model, str(target))
        return [target]
    data_name = target.name + ".data"
    onnx.save_model(model, str(target), save_as_external_data=True, all_tensors_to_one_file=True,
                    location=data_name, size_threshold=1024)
    return [target, target.with_name(data_name)]


def _copy_graph(source: pathlib.Path, target: pathlib.Path) -> pathlib.Path:
    """Copy a graph into the scratch folder, its weights in one external-data file beside it."""
    import onnx

    target.parent.mkdir(parents=True, exist_ok=True)
    model = onnx.load(str(source), load_external_data=True)
    onnx.save_model(model, str(target), save_as_external_data=True, all_tensors_to_one_file=True,
                    location=target.name + ".data", size_threshold=1024)
    return target


def _check_io(path: pathlib.Path, name: str) -> None:
    import onnx

    model = onnx.load(str(path), load_external_data=False)
    inputs = [i.name for i in model.graph.input]
    outputs = [o.name for o in model.graph.output]
    if (inputs, outputs) != GRAPH_IO[name]:
        raise RuntimeError(f"{path.name}: I/O {inputs} -> {outputs}, expected {GRAPH_IO[name]}")
    versions = {op.domain: op.version for op in model.opset_import}
    if versions.get("", versions.get("ai.onnx")) != OPSET:
        raise RuntimeError(f"{path.name}: opset {versions}, expected {OPSET}")


def _decoder_probe(fp32_path: pathlib.Path, fp16_path: pathlib.Path, codec) -> tuple[bool, str]:
    """Run both decoders on random codes; fp16 is kept only if finite and >= FP16_DECODER_MIN_SNR_DB."""
    import numpy as np
    import onnxruntime as ort

    cfg = codec.config
    q = codec.quantizer.get_num_quantizers_for_bandwidth(cfg.target_bandwidths[-1])
    codes = np.random.default_rng(0).integers(0, cfg.codebook_size, (q, 1, 50), dtype=np.int64)
    outs = []
    for path in (fp32_path, fp16_path):
        session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        outs.append(session.run(None, {"audio_codes": codes})[0].astype(np.float64))
    ref, half = outs
    if not np.isfinite(half).all():
        return False, "fp16 decoder output is not finite (overflow)"
    noise = float(np.sum((half - ref) ** 2))
    snr = 10 * math.log10(float(np.sum(ref ** 2)) / max(noise, 1e-30))
    if snr < FP16_DECODER_MIN_SNR_DB:
        return False, f"fp16 decoder SNR {snr:.1f} dB < {FP16_DECODER_MIN_SNR_DB} dB"
    return True, f"fp16 decoder SNR {snr:.1f} dB on the probe"


# --------------------------------------------------------------------------- entry point


def export_codec(
    checkpoint_dir: str | pathlib.Path,
    output_dir: str | pathlib.Path,
    precision: str = "fp32",
    progress: Callable[[str], None] = print,
    reuse_fp32_from: str | pathlib.Path | None = None,
) -> list[pathlib.Path]:
    """Export ``checkpoint_dir/audio_tokenizer`` to ``output_dir/audio_tokenizer/``; return the files written.

    ``checkpoint_dir`` is an OmniVoice checkpoint (holding ``audio_tokenizer/``)
    or the codec folder itself.  ``precision`` is ``"fp32"`` or ``"fp16"``.
    ``reuse_fp32_from``: a model folder holding an fp32 export of the same
    checkpoint (``audio_tokenizer/*.onnx``); its graphs are taken instead of
    tracing again (for building the fp16 variant next to the fp32 one).
    """
    from omnivoice_demo.storage.manifest import CODEC_DIR, CODEC_GRAPHS

    if precision not in ("fp32", "fp16"):
        raise ValueError(f"precision must be 'fp32' or 'fp16', got {precision!r}")
    checkpoint_dir = pathlib.Path(checkpoint_dir)
    codec_dir = checkpoint_dir / CODEC_DIR if (checkpoint_dir / CODEC_DIR).is_dir() else checkpoint_dir
    if not (codec_dir / "config.json").is_file():
        raise FileNotFoundError(f"no codec config.json in {checkpoint_dir} or {checkpoint_dir / CODEC_DIR}")
    target_dir = pathlib.Path(output_dir) / CODEC_DIR
    target_dir.mkdir(parents=True, exist_ok=True)

    names = list(GRAPH_IO)
    stages = 1 + len(names) * (2 if precision == "fp16" else 1) + 1
    started = time.perf_counter()
    stage = 0

    def step(message: str) -> None:
        nonlocal stage
        stage += 1
        progress(f"[codec {stage}/{stages}] {message} ({time.perf_counter() - started:.1f} s)")

    step(f"loading the PyTorch codec from {codec_dir}")
    codec = load_torch_codec(codec_dir, fold_snake=True)

    written: list[pathlib.Path] = []
    info: dict = {"precision": precision, "opset": OPSET, "graphs": {},
                  "sample_rate": int(codec.config.sample_rate),
                  "semantic_sample_rate": int(codec.config.semantic_sample_rate),
                  "hop_length": int(codec.config.hop_length),
                  "acoustic_padding": "in graph: pad hop//2 each side iff the acoustic and semantic "
                                      "frame counts differ (never for N a multiple of hop)"}
    with tempfile.TemporaryDirectory(prefix="codec_export_") as tmp:
        tmp = pathlib.Path(tmp)
        fp32_paths = {}
        for name in names:
            reuse = pathlib.Path(reuse_fp32_from) / CODEC_GRAPHS[name] if reuse_fp32_from else None
            if reuse is not None:
                step(f"taking the fp32 {name} from {reuse}")
                _check_io(reuse, name)
                fp32_paths[name] = _copy_graph(reuse, tmp / f"{name}_fp32" / "model.onnx")
                continue
            step(f"exporting {name} (Olive OnnxConversion, opset {OPSET}, legacy exporter)")
            fp32_paths[name] = _olive_convert(name, codec, tmp / f"{name}_fp32")
            _check_io(fp32_paths[name], name)

        final = dict(fp32_paths)
        graph_precision = {name: "fp32" for name in names}
        if precision == "fp16":
            for name in names:
                if name in FP16_KEEP_FP32:
                    step(f"{name}: kept fp32 (small; fp16 distances flip near-tie codes)")
                    continue
                blocked = FP16_OP_BLOCK_LIST.get(name, [])
                step(f"converting {name} to fp16 (Olive OnnxFloatToFloat16, fp32 ops: {blocked or 'none'})")
                half = _olive_fp16(fp32_paths[name], blocked, tmp / f"{name}_fp16")
                if name == "higgs_decoder":
                    keep, why = _decoder_probe(fp32_paths[name], half, codec)
                    progress(f"  {why}: {'fp16 kept' if keep else 'keeping the fp32 decoder'}")
                    if not keep:
                        info["higgs_decoder_fp16_rejected"] = why
                        continue
                final[name] = half
                graph_precision[name] = "fp16"

        for name in names:
            target = pathlib.Path(output_dir) / CODEC_GRAPHS[name]
            written += save_graph(final[name], target)
            _check_io(target, name)
            inputs, outputs = GRAPH_IO[name]
            info["graphs"][name] = {"file": target.name, "precision": graph_precision[name],
                                    "inputs": inputs, "outputs": outputs}

    step("copying the codec configuration")
    for file_name in CODEC_FILES:
        source = codec_dir / file_name
        if source.is_file():
            shutil.copyfile(source, target_dir / file_name)
            written.append(target_dir / file_name)
    info_path = target_dir / "codec_export.json"
    info_path.write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")
    written.append(info_path)
    progress(f"[codec] wrote {len(written)} files to {target_dir} in {time.perf_counter() - started:.1f} s")
    return written


def main(argv: list[str] | None = None) -> int:
    from omnivoice_demo.extras import missing_extras_error

    problem = missing_extras_error("python -m convert.codec",
                                   {"torch": "torch", "transformers": "transformers", "olive": "olive-ai"})
    if problem:
        print(problem, file=sys.stderr)
        return 2
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkpoint", required=True, help="OmniVoice checkpoint (or its audio_tokenizer/)")
    parser.add_argument("--output", required=True, help="model folder; graphs go to OUTPUT/audio_tokenizer/")
    parser.add_argument("--precision", choices=("fp32", "fp16"), default="fp32")
    args = parser.parse_args(argv)
    export_codec(args.checkpoint, args.output, args.precision)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
