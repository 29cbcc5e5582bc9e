"""The codec's decoder at the lengths a stream decodes: its threads, its executor, its ``Sin``, a split decode.

    python -m benchmarks.codec_decode --model /work/models/full-int4 [--frames 25,50,125] [--rounds 5]
        [--profile] [--reach]

Issue 59, item 3.  The decoder (``higgs_decoder.onnx``) runs once per streamed chunk; at Fast its call is a
quarter to a half of the first chunk's time (BENCHMARKS.md "First audio for a voice assistant").  Random codes
(seed 1) of each length are decoded by sessions that differ only in how ONNX Runtime runs the graph, taking turns
``--rounds`` times; each row gives the best and median seconds, the ratio to the engine's session as it is
(``session_options(2)``: sequential executor, 2 intra-op threads) from the same run, and whether the audio is the
same to the bit.  Kinds:

* ``engine`` -- ``session_options(2)``, what ``AudioCodec`` opens today;
* ``1 thread`` -- ``session_options(1)``;
* ``parallel`` -- ``execution_mode = ORT_PARALLEL`` with 2 inter-op threads (independent branches of the
  graph at once) and 2 intra-op threads;
* ``2-D convs`` -- the same graph with every 1-D ``Conv`` and ``ConvTranspose`` written as a 2-D one over
  ``[N, C, 1, T]`` (``as_2d``), which ONNX Runtime can run with its blocked (NCHWc) AVX-512 kernels; not the
  same to the bit (another summation order), so the row gives the largest difference relative to the peak.

``--profile`` prints the share of each operator type in one decode per length (ONNX Runtime's profiler).
``--reach`` measures how far a code's effect reaches in the audio (one frame's codes changed, every other
frame kept: the first and last changed sample, in frames) and whether decoding the first ``h + reach`` frames
gives the whole decode's first ``h`` frames of audio to the bit: what decoding half a chunk early would need.
Say which CPU (``lscpu``) and the load (``uptime``) beside the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import tempfile
import time
from collections import defaultdict

import numpy as np


def decoder_of(folder: pathlib.Path) -> pathlib.Path:
    """The codec's decoder graph of a model folder."""
    from omnivoice_demo.audio.codec import CODEC_GRAPH_FILES

    return folder / "audio_tokenizer" / CODEC_GRAPH_FILES["higgs_decoder"]


def sessions(decoder: pathlib.Path) -> dict:
    """The kinds of session compared, by label."""
    import onnxruntime as ort

    from omnivoice_demo.runtime.sessions import open_session, providers_for, session_options

    def parallel(intra: int):
        options = session_options(intra)
        options.execution_mode = ort.ExecutionMode.ORT_PARALLEL
        options.inter_op_num_threads = 2
        return options

    kinds = {"engine": session_options(2), "1 thread": session_options(1), "parallel": parallel(2)}
    opened = {label: open_session(decoder, providers_for("cpu"), options) for label, options in kinds.items()}
    opened["2-D convs"] = ort.InferenceSession(as_2d(decoder), session_options(2), providers=providers_for("cpu"))
    return opened


def as_2d(decoder: pathlib.Path) -> bytes:
    """The decoder graph with its 1-D convolutions as 2-D ones of height 1 (Unsqueeze, Conv, Squeeze)."""
    import onnx
    from onnx import helper, numpy_helper

    model = onnx.load(str(decoder))
    graph = model.graph
    weights = {tensor.name: tensor for tensor in graph.initializer}
    graph.initializer.append(numpy_helper.from_array(np.array([2], np.int64), "height_axis"))
    nodes = []
    for node in graph.node:
        weight = weights.get(node.input[1]) if node.op_type in ("Conv", "ConvTranspose") else None
        if weight is None or len(weight.dims) != 3:
            nodes.append(node)
            continue
        weight_2d = numpy_helper.from_array(numpy_helper.to_array(weight)[:, :, None, :], weight.name + "_2d")
        graph.initializer.append(weight_2d)
        attributes = {}
        for attribute in node.attribute:
            value = helper.get_attribute_value(attribute)
            if attribute.name in ("kernel_shape", "strides", "dilations", "output_padding"):
                value = [1 if attribute.name != "output_padding" else 0] + list(value)
            elif attribute.name == "pads":
                value = [0, value[0], 0, value[1]]
            attributes[attribute.name] = value
        wide, out = node.output[0] + "_in_2d", node.output[0] + "_out_2d"
        nodes += [helper.make_node("Unsqueeze", [node.input[0], "height_axis"], [wide]),
                  helper.make_node(node.op_type, [wide, weight_2d.name, *node.input[2:]], [out], **attributes),
                  helper.make_node("Squeeze", [out, "height_axis"], [node.output[0]])]
    del graph.node[:]
    graph.node.extend(nodes)
    return model.SerializeToString()


def random_codes(frames: int, seed: int = 1) -> np.ndarray:
    """Codes ``[8, 1, frames]`` as the decoder takes them."""
    return np.random.default_rng(seed).integers(0, 1024, size=(8, 1, frames), dtype=np.int64)


def decode(session, codes: np.ndarray) -> np.ndarray:
    return session.run(None, {session.get_inputs()[0].name: codes})[0][0, 0]


def timing(folder: pathlib.Path, frames_list: list[int], rounds: int) -> list[dict]:
    """Each kind at each length, in turns; seconds, ratio to ``engine``, bit equality."""
    kinds = sessions(decoder_of(folder))
    rows = []
    for frames in frames_list:
        codes = random_codes(frames)
        expected = decode(kinds["engine"], codes)
        for session in kinds.values():  # warm each at this length
            decode(session, codes)
        seconds, same, largest = defaultdict(list), {}, defaultdict(float)
        peak = float(np.abs(expected).max())
        for _ in range(rounds):
            for label, session in kinds.items():
                started = time.perf_counter()
                audio = decode(session, codes)
                seconds[label].append(time.perf_counter() - started)
                same[label] = same.get(label, True) and bool(np.array_equal(audio, expected))
                largest[label] = max(largest[label], float(np.abs(audio - expected).max()) / peak)
        base = statistics.median(seconds["engine"])
        for label in kinds:
            best, median = min(seconds[label]), statistics.median(seconds[label])
            rows.append(dict(frames=frames, kind=label, best_s=round(best, 4), median_s=round(median, 4),
                             median_vs_engine=round(median / base, 3), same_audio=same[label],
                             largest_difference_of_peak=float(f"{largest[label]:.2e}")))
            print(json.dumps(rows[-1]), flush=True)
    return rows


def profile(folder: pathlib.Path, frames_list: list[int]) -> None:
    """Each operator type's share of one decode (after a warm-up), per length."""
    from omnivoice_demo.runtime.sessions import open_session, providers_for, session_options

    decoder = decoder_of(folder)
    for frames in frames_list:
        with tempfile.TemporaryDirectory() as scratch:
            options = session_options(2)
            options.enable_profiling = True
            options.profile_file_prefix = os.path.join(scratch, "codec")
            session = open_session(decoder, providers_for("cpu"), options)
            codes = random_codes(frames)
            decode(session, codes)
            decode(session, codes)
            trace = json.loads(pathlib.Path(session.end_profiling()).read_text())
        runs = [event for event in trace if event.get("cat") == "Node" and event["name"].endswith("_kernel_time")]
        per_op: dict = defaultdict(float)
        for event in runs[len(runs) // 2:]:  # the second decode
            per_op[event["args"]["op_name"]] += event["dur"] / 1e6
        total = sum(per_op.values())
        shares = sorted(per_op.items(), key=lambda item: -item[1])[:6]
        print(json.dumps(dict(frames=frames, kernels_s=round(total, 4),
                              share={op: round(s / total, 3) for op, s in shares})), flush=True)


def reach(folder: pathlib.Path, frames: int) -> None:
    """How many frames either side one frame's codes change, and whether a decode of a head is the whole's head."""
    from omnivoice_demo.constants import HOP_LENGTH as hop
    from omnivoice_demo.runtime.sessions import open_session, providers_for, session_options

    session = open_session(decoder_of(folder), providers_for("cpu"), session_options(2))
    codes = random_codes(frames)
    whole = decode(session, codes)
    middle = frames // 2
    changed = codes.copy()
    changed[:, :, middle] = (changed[:, :, middle] + 1) % 1024
    moved = np.flatnonzero(decode(session, changed) != whole)
    before = middle - moved[0] / hop
    after = (moved[-1] + 1) / hop - (middle + 1)
    print(json.dumps(dict(frames=frames, changed_frame=middle, reach_before_frames=round(before, 2),
                          reach_after_frames=round(after, 2))), flush=True)
    for head in (frames // 4, frames // 2):
        for extra in (0, 2, 4, 8, int(np.ceil(after)) + 1):
            if head + extra > frames:
                continue
            part = decode(session, np.ascontiguousarray(codes[:, :, :head + extra]))[:head * hop]
            difference = float(np.abs(part - whole[:head * hop]).max())
            print(json.dumps(dict(frames=frames, head=head, decoded=head + extra, same_to_the_bit=difference == 0.0,
                                  max_abs_difference=difference)), flush=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="a model folder (its audio_tokenizer/higgs_decoder.onnx)")
    parser.add_argument("--frames", default="25,50,125", help="lengths in codec frames (25 a second)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--profile", action="store_true", help="each operator type's share instead of timings")
    parser.add_argument("--reach", action="store_true", help="how far a frame's codes reach, instead of timings")
    args = parser.parse_args(argv)
    folder = pathlib.Path(args.model)
    frames_list = [int(f) for f in args.frames.split(",")]
    if args.profile:
        profile(folder, frames_list)
    elif args.reach:
        reach(folder, max(frames_list))
    else:
        timing(folder, frames_list, args.rounds)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
