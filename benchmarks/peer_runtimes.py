"""The runtimes ``peers.py`` compares, each in a worker process of its own (``python -m benchmarks.peer_runtimes``).

A worker loads its model once, warms up, then answers one generation per line of its standard input
(``{"run": NAME}``) with one line ``PEER-RESULT {json}`` on its standard output: the wall and CPU seconds of the
generation, the seconds of audio, and the worker's peak resident memory so far (``ru_maxrss``: the model and
every run).  Each runtime in its own process keeps the peaks apart and lets ``peers.py`` take turns between
them within one invocation.  The kinds:

``ours``      our engine (``--backbone``, ``auto`` by default) at the Reference and Fast presets.
``pytorch``   the reference's ``OmniVoice.generate`` in fp32 (``targets.pytorch_baseline``): ``steps32``.
``openvino``  our loop with the backbone and the codec's decoder compiled by OpenVINO on the CPU plugin (the
              embeddings, heads and sampling stay as in ``ours``).  The backbone is the model folder's graph with
              its weight products as int8 codes with one scale per output channel, ``DequantizeLinear`` into
              ``MatMul``, which OpenVINO's CPU plugin runs as a compressed fully-connected layer with its own
              dynamic int8 quantisation of the activations (``DYNAMIC_QUANTIZATION_GROUP_SIZE``).  The weights are
              those our ``int8-row`` is built from (an int4 folder's, dequantized).  One stream: a step's two
              forwards run one after the other, each on every thread.

The GGML port is a command-line program; ``peers.py`` runs it as a process per generation (no worker).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import pathlib
import resource
import shutil
import sys
import threading
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

DURATION = 5.0
RESULT = "PEER-RESULT "


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def text() -> str:
    from omnivoice_demo.eval.quick_bench import TEXTS

    return TEXTS["medium"]


# --- OpenVINO ---------------------------------------------------------------------------------------------------


class OpenVinoSession:
    """An OpenVINO compiled model behind the part of ``onnxruntime.InferenceSession`` the engine calls
    (``run``, ``get_inputs``, ``get_outputs``); one infer request per calling thread."""

    def __init__(self, compiled):
        from types import SimpleNamespace

        self.compiled = compiled
        self._local = threading.local()
        self._inputs = [SimpleNamespace(name=port.get_any_name(), type=str(port.get_element_type()),
                                        shape=str(port.get_partial_shape())) for port in compiled.inputs]
        self._outputs = [SimpleNamespace(name=port.get_any_name(), type=str(port.get_element_type()),
                                         shape=str(port.get_partial_shape())) for port in compiled.outputs]

    def get_inputs(self):
        return self._inputs

    def get_outputs(self):
        return self._outputs

    def run(self, names, feeds, run_options=None):
        request = getattr(self._local, "request", None)
        if request is None:
            request = self._local.request = self.compiled.create_infer_request()
        results = request.infer({name: value for name, value in feeds.items()})
        by_name = {port.get_any_name(): value for port, value in results.items()}
        return [by_name[name] for name in (names or [o.name for o in self._outputs])]


def openvino_backbone_graph(folder: pathlib.Path, cache: pathlib.Path) -> pathlib.Path:
    """The folder's backbone with int8 per-output-channel weights as ``DequantizeLinear`` -> ``MatMul`` (built
    once into ``cache``, written under a temporary name and renamed).  The attention stays the folder's own
    operator (genai's ``GroupQueryAttention``, which OpenVINO's ONNX reader knows)."""
    import numpy as np
    import onnx
    from onnx import numpy_helper

    from omnivoice_demo.backbones.precision import int8_columns, rebuild
    from omnivoice_demo.storage.manifest import BACKBONE_GRAPHS

    source = folder / BACKBONE_GRAPHS["backbone"]
    stamp = hashlib.sha256()
    for path in sorted(source.parent.glob(source.name + "*")):
        stat = path.stat()
        stamp.update(f"{path.name}:{stat.st_size}:{stat.st_mtime_ns}".encode())
    target = cache / f"openvino-int8-channel-{stamp.hexdigest()[:16]}"
    graph_path = target / "backbone.onnx"
    if graph_path.is_file():
        return graph_path
    model = onnx.load(str(source))
    constants = rebuild(model, "fp32", standard_attention=False)
    nodes, initializers = [], []
    for node in model.graph.node:
        weight_name = node.input[1] if node.op_type == "MatMul" and len(node.input) == 2 else None
        if weight_name in constants:
            codes, scales = int8_columns(constants.pop(weight_name))
            initializers += [numpy_helper.from_array(codes, weight_name + "_i8"),
                             numpy_helper.from_array(scales.astype(np.float32), weight_name + "_scale")]
            nodes.append(onnx.helper.make_node("DequantizeLinear", [weight_name + "_i8", weight_name + "_scale"],
                                               [weight_name + "_dq"], name=weight_name + "_dq", axis=1))
            node.input[1] = weight_name + "_dq"
        nodes.append(node)
    initializers += [numpy_helper.from_array(value, name) for name, value in constants.items()]
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    model.graph.initializer.extend(initializers)
    for opset in model.opset_import:
        if opset.domain in ("", "ai.onnx") and opset.version < 13:
            opset.version = 13  # DequantizeLinear with an axis
    building = cache / (target.name + f".building-{os.getpid()}")
    shutil.rmtree(building, ignore_errors=True)
    building.mkdir(parents=True)
    onnx.save_model(model, str(building / "backbone.onnx"), save_as_external_data=True,
                    all_tensors_to_one_file=True, location="backbone.onnx.data", size_threshold=1024)
    try:
        building.rename(target)
    except OSError:  # another worker made it first
        shutil.rmtree(building, ignore_errors=True)
    return graph_path


@contextlib.contextmanager
def openvino_graphs(folder: pathlib.Path, threads: int, group: int, precision: str, cache: pathlib.Path):
    """While open, an engine made in it runs its backbone and codec decoder in OpenVINO (the engine module's
    model and codec classes are swapped for the construction only)."""
    import openvino as ov

    from omnivoice_demo.engine import loop
    from omnivoice_demo.storage.manifest import CODEC_GRAPHS

    core = ov.Core()
    config = {"INFERENCE_NUM_THREADS": threads, "NUM_STREAMS": 1, "PERFORMANCE_HINT": "LATENCY",
              "INFERENCE_PRECISION_HINT": precision, "DYNAMIC_QUANTIZATION_GROUP_SIZE": group}
    backbone = OpenVinoSession(core.compile_model(str(openvino_backbone_graph(folder, cache)), "CPU", config))
    decoder = OpenVinoSession(core.compile_model(str(folder / CODEC_GRAPHS["higgs_decoder"]), "CPU", config))

    class Model(loop.OmniVoiceOnnx):  # type: ignore[name-defined,misc]
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self._backbone_opener = lambda: backbone
            self.overlap_forwards = False  # one stream: two requests at once would only queue

    class Codec(loop.AudioCodec):  # type: ignore[name-defined,misc]
        def _session(self, role):
            if role == "higgs_decoder":
                return decoder
            return super()._session(role)

    saved = loop.OmniVoiceOnnx, loop.AudioCodec
    loop.OmniVoiceOnnx, loop.AudioCodec = Model, Codec  # type: ignore[attr-defined,misc]
    try:
        yield {"openvino": ov.__version__, "config": config}
    finally:
        loop.OmniVoiceOnnx, loop.AudioCodec = saved  # type: ignore[attr-defined,misc]


# --- the workers ------------------------------------------------------------------------------------------------


def engine_runs(args, describe: dict):
    from omnivoice_demo import OmniVoiceEngine
    from omnivoice_demo.settings.generation import GenerationConfig

    engine = OmniVoiceEngine(args.model, threads=args.threads, verify="size", backbone=args.backbone)
    engine.backbone_watch.close()  # no background probe during the rounds
    configs = {name: GenerationConfig.preset(name).replace(seed=args.seed, duration=DURATION)
               for name in ("reference", "fast")}
    describe.setdefault("backbone", engine.backbone_choice.get("compute"))

    def run(name: str) -> float:
        return engine.generate(text(), config=configs[name]).duration

    run("fast")  # warm-up: allocations, prepacking
    return run


def load(args) -> tuple:
    """``(run(name) -> seconds of audio, facts)`` of the worker's runtime."""
    import onnxruntime

    describe: dict = {"onnxruntime": onnxruntime.__version__}
    if args.kind == "ours":
        return engine_runs(args, describe), describe
    if args.kind == "openvino":
        from omnivoice_demo.storage.cache import default_cache_dir

        with openvino_graphs(pathlib.Path(args.model), args.threads, args.ov_group, args.ov_precision,
                             default_cache_dir() / "peers") as facts:
            describe.update(facts, backbone="int8 per channel, DequantizeLinear -> MatMul (OpenVINO)")
            return engine_runs(args, describe), describe
    import torch

    from benchmarks.targets import pytorch_baseline

    generate = pytorch_baseline(args.model, args.threads, args.seed)
    generate(2)  # warm-up
    return (lambda name: generate(int(name.removeprefix("steps")))), {"torch": torch.__version__}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kind", choices=("ours", "pytorch", "openvino"), required=True)
    parser.add_argument("--model", required=True, help="our model folder, or the PyTorch checkpoint for pytorch")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--backbone", default="auto")
    parser.add_argument("--ov-group", type=int, default=128, help="OpenVINO's activation group (dynamic int8)")
    parser.add_argument("--ov-precision", default="f32", help="OpenVINO's INFERENCE_PRECISION_HINT")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    run, facts = load(args)
    print(RESULT + json.dumps({"ready": True, "load_s": round(time.perf_counter() - started, 2),
                               "peak_rss_mb": round(peak_rss_mb()), **facts}), flush=True)
    for line in sys.stdin:
        if not line.strip():
            continue
        name = json.loads(line)["run"]
        wall, cpu = time.perf_counter(), time.process_time()
        audio_s = run(name)
        wall = time.perf_counter() - wall
        print(RESULT + json.dumps({"wall_s": round(wall, 3), "synth_s": round(wall, 3),
                                   "cpu_s": round(time.process_time() - cpu, 3), "audio_s": round(audio_s, 3),
                                   "peak_rss_mb": round(peak_rss_mb())}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
