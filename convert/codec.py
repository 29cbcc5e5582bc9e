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

The torch modules traced are ``codec_torch.py``'s; the Olive runs and the graphs' saving,
``olive_runs.py``'s (shared with ``pipeline.py``).

    python -m convert.codec --checkpoint CKPT --output DIR [--precision fp16]
"""

from __future__ import annotations

import argparse
import json
import math
import pathlib
import shutil
import sys
import tempfile
import time
from typing import Callable

from convert.codec_torch import graph_modules, load_torch_codec, trace_inputs
from convert.olive_runs import (EXTERNAL_DATA_THRESHOLD, olive_telemetry_off, run_olive_workflow,  # noqa: F401
                                save_graph)

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
CODEC_FILES = ("config.json", "preprocessor_config.json")


# --------------------------------------------------------------------------- Olive steps


def _olive_convert(name: str, codec, work: pathlib.Path) -> pathlib.Path:
    """torch -> ONNX fp32 with Olive's OnnxConversion (legacy exporter, opset 20)."""
    module = graph_modules()[name](codec).eval()
    dummy = trace_inputs(name, codec)
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
