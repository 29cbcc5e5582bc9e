"""Build the speech recogniser's folder from a ``transformers`` Whisper checkpoint.

The folder has the layout of the Hub's ONNX Whisper exports (``onnx-community/whisper-*``),
so the recogniser reads both the same way:

    config.json  generation_config.json  preprocessor_config.json  tokenizer.json ...
    onnx/encoder_model{suffix}.onnx            input_features [B, mels, 3000] -> last_hidden_state
    onnx/decoder_model{suffix}.onnx            input_ids, encoder_hidden_states -> logits,
                                               present.{i}.decoder.key/value, present.{i}.encoder.key/value
    onnx/decoder_with_past_model{suffix}.onnx  input_ids, past_key_values.{i}.{decoder,encoder}.{key,value}
                                               -> logits, present.{i}.decoder.key/value
    onnx/decoder_model_alignment{suffix}.onnx  the first decoder plus cross_attentions.{i} (each layer's
                                               cross-attention softmax), read for word times
    omnivoice_recognizer.json                  our manifest: files with sizes and sha256

``suffix`` is "" for float32 and "_int8" for dynamic int8 (``quantize_dynamic``).

The decoder is exported from a small module written here on the checkpoint's own
layers (``WhisperDecoderLayer``'s projections and norms), because the cache
objects of ``transformers`` cannot be traced to plain past/present tensors; the
tests check that it computes what ``WhisperForConditionalGeneration.generate``
computes, token for token.

    python -m convert.whisper --model CKPT --output DIR [--precision fp32 int8]
"""

from __future__ import annotations

import argparse
import json
import pathlib
import shutil
import tempfile

import torch
from torch import nn

from omnivoice_demo.asr.attention_graph import alignment_rel, write_alignment_graph
from omnivoice_demo.asr.folder import CONFIG_FILES, PRECISION_SUFFIX, graph_paths, write_recognizer_manifest

OPSET = 17
EXTERNAL_DATA_ABOVE = 1_800_000_000  # bytes: protobuf's 2 GB limit, with room


class Encoder(nn.Module):
    def __init__(self, model):
        super().__init__()
        self.encoder = model.model.encoder

    def forward(self, input_features):
        return self.encoder(input_features).last_hidden_state


def _heads(x: torch.Tensor, heads: int) -> torch.Tensor:
    batch, length, width = x.shape
    return x.view(batch, length, heads, width // heads).transpose(1, 2)


def _attend(q, k, v, scaling, mask=None):
    scores = torch.matmul(q, k.transpose(2, 3)) * scaling
    if mask is not None:
        scores = scores + mask
    out = torch.matmul(torch.softmax(scores, dim=-1), v)
    batch, heads, length, dim = out.shape
    return out.transpose(1, 2).reshape(batch, length, heads * dim)


class Decoder(nn.Module):
    """Whisper's decoder with its caches as tensors: ``past`` is a list of
    (self key, self value, cross key, cross value) per layer, or None for the first call."""

    def __init__(self, model):
        super().__init__()
        self.decoder = model.model.decoder
        self.proj_out = model.proj_out
        self.heads = model.config.decoder_attention_heads

    def forward(self, input_ids, encoder_hidden_states=None, past=None):
        dec = self.decoder
        length = input_ids.shape[1]
        past_length = 0 if past is None else past[0][0].shape[2]
        positions = dec.embed_positions.weight[past_length:past_length + length]
        h = dec.embed_tokens(input_ids) + positions
        # causal: query i (at past_length + i) sees keys 0 .. past_length + i
        query = torch.arange(length, device=h.device)[:, None] + past_length
        total = torch.arange(past_length + length, device=h.device)[None, :]
        mask = torch.where(total > query, torch.finfo(h.dtype).min, 0.0).to(h.dtype)
        presents = []
        for index, layer in enumerate(dec.layers):
            attn = layer.self_attn
            x = layer.self_attn_layer_norm(h)
            q = _heads(attn.q_proj(x), self.heads)
            k = _heads(attn.k_proj(x), self.heads)
            v = _heads(attn.v_proj(x), self.heads)
            if past is not None:
                k = torch.cat([past[index][0], k], dim=2)
                v = torch.cat([past[index][1], v], dim=2)
            h = h + attn.out_proj(_attend(q, k, v, attn.scaling, mask))
            cross = layer.encoder_attn
            x = layer.encoder_attn_layer_norm(h)
            q = _heads(cross.q_proj(x), self.heads)
            if past is None:
                ck = _heads(cross.k_proj(encoder_hidden_states), self.heads)
                cv = _heads(cross.v_proj(encoder_hidden_states), self.heads)
            else:
                ck, cv = past[index][2], past[index][3]
            h = h + cross.out_proj(_attend(q, ck, cv, cross.scaling))
            x = layer.final_layer_norm(h)
            h = h + layer.fc2(layer.activation_fn(layer.fc1(x)))
            presents.append((k, v, ck, cv))
        logits = self.proj_out(dec.layer_norm(h))
        return logits, presents


class FirstDecoder(nn.Module):
    def __init__(self, decoder: Decoder):
        super().__init__()
        self.decoder = decoder

    def forward(self, input_ids, encoder_hidden_states):
        logits, presents = self.decoder(input_ids, encoder_hidden_states)
        return (logits, *[t for layer in presents for t in layer])


class NextDecoder(nn.Module):
    def __init__(self, decoder: Decoder):
        super().__init__()
        self.decoder = decoder

    def forward(self, input_ids, *past):
        layers = [past[i:i + 4] for i in range(0, len(past), 4)]
        logits, presents = self.decoder(input_ids, past=layers)
        return (logits, *[t for layer in presents for t in layer[:2]])


def _names(prefix: str, layers: int, kinds=("decoder", "encoder")) -> list[str]:
    return [f"{prefix}.{i}.{kind}.{part}" for i in range(layers) for kind in kinds for part in ("key", "value")]


def _export(module: nn.Module, args: tuple, path: pathlib.Path, inputs: list[str], outputs: list[str],
            dynamic: dict) -> None:
    """torch.onnx.export (TorchScript exporter: small, fast and predictable for these fixed graphs),
    then one external data file when the weights exceed protobuf's limit."""
    import onnx

    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=path.parent) as tmp:
        raw = pathlib.Path(tmp) / path.name
        with torch.no_grad():
            torch.onnx.export(module, args, str(raw), input_names=inputs, output_names=outputs,
                              dynamic_axes=dynamic, opset_version=OPSET, dynamo=False, do_constant_folding=True)
        model = onnx.load(str(raw))
        size = sum(t.ByteSize() for t in model.graph.initializer)
        if size > EXTERNAL_DATA_ABOVE:
            onnx.save(model, str(path), save_as_external_data=True, all_tensors_to_one_file=True,
                      location=path.name + "_data")
        else:
            onnx.save(model, str(path))


def export_graphs(checkpoint: pathlib.Path, onnx_dir: pathlib.Path) -> None:
    """The three float32 graphs of ``checkpoint`` into ``onnx_dir``."""
    from transformers import WhisperForConditionalGeneration

    model = WhisperForConditionalGeneration.from_pretrained(str(checkpoint), dtype=torch.float32).eval()
    config = model.config
    layers, heads = config.decoder_layers, config.decoder_attention_heads
    head_dim = config.d_model // heads
    frames = 2 * config.max_source_positions
    features = torch.zeros(1, config.num_mel_bins, frames)
    _export(Encoder(model), (features,), onnx_dir / "encoder_model.onnx", ["input_features"], ["last_hidden_state"],
            {"input_features": {0: "batch"}, "last_hidden_state": {0: "batch"}})

    decoder = Decoder(model).eval()
    hidden = torch.zeros(1, config.max_source_positions, config.d_model)
    ids = torch.full((1, 3), config.decoder_start_token_id, dtype=torch.long)
    present = _names("present", layers)
    dynamic = {"input_ids": {0: "batch", 1: "length"}, "encoder_hidden_states": {0: "batch"},
               "logits": {0: "batch", 1: "length"}}
    dynamic.update({name: {0: "batch", 2: "length" if ".decoder." in name else "frames"} for name in present})
    _export(FirstDecoder(decoder), (ids, hidden), onnx_dir / "decoder_model.onnx",
            ["input_ids", "encoder_hidden_states"], ["logits", *present], dynamic)

    past_names = _names("past_key_values", layers)
    self_present = _names("present", layers, kinds=("decoder",))
    past = []
    for name in past_names:
        length = 3 if ".decoder." in name else config.max_source_positions
        past.append(torch.randn(1, heads, length, head_dim))
    dynamic = {"input_ids": {0: "batch", 1: "length"}, "logits": {0: "batch", 1: "length"}}
    dynamic.update({name: {0: "batch", 2: "past" if ".decoder." in name else "frames"} for name in past_names})
    dynamic.update({name: {0: "batch", 2: "total"} for name in self_present})
    _export(NextDecoder(decoder), (ids[:, :1], *past), onnx_dir / "decoder_with_past_model.onnx",
            ["input_ids", *past_names], ["logits", *self_present], dynamic)


def quantize_int8(source: pathlib.Path, target: pathlib.Path) -> None:
    """Dynamic int8 (weights int8 per channel, activations quantized at run time) of every MatMul/Gemm."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(str(source), str(target), weight_type=QuantType.QInt8, per_channel=True,
                     op_types_to_quantize=["MatMul", "Gemm"],
                     use_external_data_format=source.with_name(source.name + "_data").exists())


def convert_whisper(checkpoint, output, precisions=("fp32",)) -> pathlib.Path:
    """Build the recogniser folder of ``checkpoint`` with the graphs of each precision."""
    checkpoint, output = pathlib.Path(checkpoint), pathlib.Path(output)
    if not (checkpoint / "config.json").is_file():
        raise FileNotFoundError(f"{checkpoint} is not a transformers Whisper checkpoint (no config.json)")
    for name in precisions:
        if name not in PRECISION_SUFFIX:
            raise ValueError(f"precision must be one of {', '.join(PRECISION_SUFFIX)}, got {name!r}")
    output.mkdir(parents=True, exist_ok=True)
    for name in CONFIG_FILES:
        if (checkpoint / name).is_file():
            shutil.copy2(checkpoint / name, output / name)
    onnx_dir = output / "onnx"
    with tempfile.TemporaryDirectory(dir=output) as tmp:
        fp32_dir = pathlib.Path(tmp)
        export_graphs(checkpoint, fp32_dir)
        for precision in precisions:
            for rel in graph_paths(precision).values():
                source = fp32_dir / pathlib.Path(rel).name.replace(PRECISION_SUFFIX[precision] + ".onnx", ".onnx")
                target = output / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                if precision == "fp32":
                    for part in (source, source.with_name(source.name + "_data")):
                        if part.exists():
                            shutil.copy2(part, onnx_dir / part.name)
                else:
                    quantize_int8(source, target)
    layers = json.loads((output / "config.json").read_text(encoding="utf-8"))["decoder_layers"]
    for precision in precisions:  # the decoder with its cross-attention as outputs, for word times
        write_alignment_graph(output / graph_paths(precision)["decoder"],
                              output / alignment_rel(PRECISION_SUFFIX[precision]), layers)
    write_recognizer_manifest(output, source=str(checkpoint), precisions=list(precisions))
    return output


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m convert.whisper",
                                     description="Build the speech recogniser folder from a Whisper checkpoint.")
    parser.add_argument("--model", required=True, help="transformers Whisper checkpoint folder")
    parser.add_argument("--output", required=True, help="folder to write")
    parser.add_argument("--precision", nargs="+", choices=list(PRECISION_SUFFIX), default=["fp32", "int8"])
    args = parser.parse_args(argv)
    from convert.__main__ import run_build

    return run_build(lambda: convert_whisper(args.model, args.output, args.precision))


if __name__ == "__main__":
    raise SystemExit(main())
