"""ONNX Runtime sessions as every graph of the package gets them: providers, options, weights read into memory.

The backbone, the audio heads, the codec, the speech recogniser and the speaker model all open their
graphs through ``open_session`` with ``session_options``: no spinning workers, the arena given back
after a run (``run_options``), and external weights read into memory instead of memory-mapped, so a
file changed on disk under a running server cannot crash it.
"""

from __future__ import annotations

import pathlib
from typing import Sequence

import numpy as np

from ..errors import InvalidInput, ModelFolderError, excerpt


NUMPY_TYPES = {"tensor(float)": np.float32, "tensor(float16)": np.float16, "tensor(int64)": np.int64,
                "tensor(int32)": np.int32, "tensor(bool)": np.bool_}


def providers_for(provider: str) -> list[str]:
    """ONNX Runtime execution providers for ``provider`` ("cpu" or "cuda")."""
    import onnxruntime as ort

    if provider == "cpu":
        return ["CPUExecutionProvider"]
    if provider == "cuda":
        if "CUDAExecutionProvider" not in ort.get_available_providers():
            raise InvalidInput(
                "provider 'cuda' asked for, but this onnxruntime has no CUDA provider "
                f"(available: {', '.join(ort.get_available_providers())}); install onnxruntime-gpu "
                "or use provider='cpu'."
            )
        return ["CUDAExecutionProvider", "CPUExecutionProvider"]
    raise InvalidInput(f"provider must be 'cpu' or 'cuda', got {excerpt(provider)}")


#: session config entries every session gets: ONNX Runtime's worker threads block when idle instead of spinning
SESSION_CONFIG = {"session.intra_op.allow_spinning": "0", "session.inter_op.allow_spinning": "0"}


def session_options(threads: int | None = None):
    """The options of every session.  No spinning (``SESSION_CONFIG``): by default each session's
    intra-op workers keep spinning on the CPU after a run, waiting for the next.  A generation runs
    three sessions in turn with numpy's sampling in between, so on 2 cores the spinning workers of
    the sessions not running took the cores from the work that was: with 2 threads, three 32-step
    generations on the tiny folder took 8.8-9.7 CPU s instead of 2.8-3.0 (sampling 6.9-7.6 s wall
    instead of 1.3-2.7), and an 8-step full-size int4 one 58-72 s wall instead of 31-32, with the
    same codes (issue 20's profile of ``omnivoice eval``, at load 4-6 from other processes).  Blocking
    costs a thread wake-up where spinning would catch the next parallel section sooner: on an idle
    machine issue 10 measured the 5 s case 5% slower without spinning (BENCHMARKS.md;
    ``benchmarks/spinning.py`` reruns the comparison)."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    if threads:
        options.intra_op_num_threads = int(threads)
        options.inter_op_num_threads = 1
    options.log_severity_level = 3
    for key, value in SESSION_CONFIG.items():
        options.add_session_config_entry(key, value)
    return options


def run_options(shrink_arena: bool = True):
    """``RunOptions`` of every forward: with ``shrink_arena`` the CPU arena's unused memory goes back after each run.

    ONNX Runtime's CPU arena grows to the largest run a session has seen and keeps it for
    the session's lifetime: one long request (attention over every position, logits of
    every position) left a server hundreds of MB to GBs larger for good (issue 21 item 10;
    ``benchmarks/memory_plateau.py`` measures it).  Shrinking frees what no run holds."""
    import onnxruntime as ort

    options = ort.RunOptions()
    if shrink_arena:
        options.add_run_config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")
    return options


#: the settings ``session_options`` makes, copied when a session needs options of its own (with ``SESSION_CONFIG``)
_COPIED_OPTIONS = ("graph_optimization_level", "intra_op_num_threads", "inter_op_num_threads", "log_severity_level",
                   "enable_cpu_mem_arena", "enable_mem_pattern", "execution_mode", "enable_profiling",
                   "profile_file_prefix")


#: a graph file larger than this holds its weights inline (ONNX Runtime reads it whole, it maps nothing)
_GRAPH_WITH_EXTERNAL_DATA_MAX = 64 << 20


def external_data_files(path: pathlib.Path) -> list[str]:
    """The files (relative to the graph's folder) that the graph at ``path`` keeps its weights in."""
    import onnx

    if path.stat().st_size > _GRAPH_WITH_EXTERNAL_DATA_MAX:
        return []
    graph = onnx.load(str(path), load_external_data=False).graph
    tensors = list(graph.initializer) + [a.t for node in graph.node for a in node.attribute if a.HasField("t")]
    return sorted({entry.value for tensor in tensors if tensor.data_location == onnx.TensorProto.EXTERNAL
                   for entry in tensor.external_data if entry.key == "location"})


class ChangedOnDisk(ModelFolderError):
    """A graph or its weights no longer hash to what was recorded when they were written."""


def file_digest(data) -> str:
    """The sha256 of ``data`` (bytes), as ``digests=`` records it."""
    import hashlib

    return hashlib.sha256(data).hexdigest()


def check_digest(path: pathlib.Path, data: bytes, digests: dict) -> None:
    """Raise ``ChangedOnDisk`` unless ``data`` (the bytes of the file at ``path``) hash to ``digests[path.name]``."""
    if file_digest(data) != digests.get(path.name):
        raise ChangedOnDisk(f"{path.name} in {path.parent} is not the file recorded when it was written "
                            "(its sha256 differs).")


def with_weights_in_memory(path: pathlib.Path, options, digests: dict | None = None):
    """``(options, buffers)``: a copy of ``options`` that hands ONNX Runtime the graph's external data read
    into ``buffers`` (keep them until the session is made: ONNX Runtime copies them then).  With
    ``digests`` (file name -> sha256 of the graph file and each weights file) the bytes read are
    checked against them first (``ChangedOnDisk``): the weights are hashed where they are read anyway.

    By itself ONNX Runtime memory-maps external data: a weights file changed in place under a
    running server (truncated, overwritten) is then a SIGBUS that kills it with nothing logged.
    Read here, the file is copied into the session when it is created and may change afterwards
    (``ModelFileWatch`` says so in the log)."""
    import onnxruntime as ort

    if digests is not None:  # the graph first: a changed one may name other weights files, or none
        check_digest(path, path.read_bytes(), digests)
    names = external_data_files(path)
    read = {name: (path.parent / name).read_bytes() for name in names}
    for name, data in read.items() if digests is not None else ():
        check_digest(path.parent / name, data, digests)
    if not names:
        return options, []
    fresh = ort.SessionOptions()
    for name in _COPIED_OPTIONS if options is not None else ():
        setattr(fresh, name, getattr(options, name))
    for key in SESSION_CONFIG if options is not None else ():
        try:
            fresh.add_session_config_entry(key, options.get_session_config_entry(key))
        except RuntimeError:  # not set on these options: the runtime's default
            pass
    buffers = list(read.values())
    fresh.add_external_initializers_from_files_in_memory(names, buffers, [len(b) for b in buffers])
    return fresh, buffers


def graph_inputs(path: pathlib.Path) -> dict:
    """The graph's inputs (name -> NumPy type), read from the graph file alone (its weights are not read)."""
    import onnx

    if not path.is_file():
        raise ModelFolderError(f"{path.name} is missing from {path.parent}; download or build the model folder again.")
    try:
        graph = onnx.load(str(path), load_external_data=False).graph
        initializers = {init.name for init in graph.initializer}
        return {i.name: np.dtype(onnx.helper.tensor_dtype_to_np_dtype(i.type.tensor_type.elem_type)).type
                for i in graph.input if i.name not in initializers}
    except Exception as exc:  # onnx raises its own types (DecodeError, ValueError, KeyError)
        raise ModelFolderError(f"{path.name} in {path.parent} cannot be read ({exc.__class__.__name__}); download or "
                               "build the model folder again.") from exc


def open_session(path: pathlib.Path, providers: Sequence[str], options, digests: dict | None = None):
    """A session of the graph at ``path``; with ``digests`` its files are checked first (``with_weights_in_memory``)."""
    import onnxruntime as ort

    if not path.is_file():
        raise ModelFolderError(f"{path.name} is missing from {path.parent}; download or build the model folder again.")
    try:
        options, buffers = with_weights_in_memory(path, options, digests)
        session = ort.InferenceSession(str(path), sess_options=options, providers=list(providers))
        del buffers  # copied into the session
        return session
    except ChangedOnDisk:
        raise
    except Exception as exc:  # onnxruntime raises its own exception types
        raise ModelFolderError(
            f"{path.name} in {path.parent} cannot be loaded by onnxruntime ({exc.__class__.__name__}: "
            f"{str(exc).splitlines()[0][:300]}); download or build the model folder again."
        ) from exc


def in_memory_session(model, constants: dict, providers: Sequence[str], options):
    """A session of ``model`` whose ``constants`` (name -> array) reach ONNX Runtime as ``OrtValue``s
    (``SessionOptions.add_external_initializers``: no 2 GB protobuf limit, no copy on disk).  A constant
    the graph has already as a placeholder (external, location ``in-memory``) keeps it."""
    import onnx
    import onnxruntime as ort

    names, values = [], []
    present = {init.name for init in model.graph.initializer}
    for name, value in constants.items():
        if name not in present:
            placeholder = onnx.TensorProto(name=name, data_type=onnx.helper.np_dtype_to_tensor_dtype(value.dtype),
                                           dims=list(value.shape))
            placeholder.data_location = onnx.TensorProto.EXTERNAL
            placeholder.external_data.add(key="location", value="in-memory")
            model.graph.initializer.append(placeholder)
        names.append(name)
        values.append(ort.OrtValue.ortvalue_from_numpy(np.ascontiguousarray(value)))
    options.add_external_initializers(names, values)
    return ort.InferenceSession(model.SerializeToString(), sess_options=options, providers=list(providers))
