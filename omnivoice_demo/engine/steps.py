"""The step loop of one chunk (``_generate_iterative``): forwards, the audio heads where cells are scored, scoring.

``unmask`` is the loop over the schedule's steps for one item (the engine's ``_unmask``); each step runs the
conditional row (and the unconditional one on the steps that run it), then the audio heads, then
``sampling.decode_step``.  Only the cells still masked are scored (the others are never chosen again), so:

* ``decode_step`` takes the log-softmax, guidance and choice of the masked cells only (sampling.py);
* ``CellHeads`` runs the heads at the masked cells only on the steps where few are left: the heads graph's one
  product ``hidden [S, H] x W [H, 8*1025]`` split by codebook into eight products ``hidden[frames masked in c]
  x W_c [H, 1025]``.  Each logit is the same dot product of the same numbers in the same order: ONNX Runtime's
  product blocks its inner dimension alike at any row or column count, so the bits are those of the whole graph
  (``tests/test_cell_heads.py`` compares them).  With most cells masked the eight narrower products are slower
  than the one wide product, so the whole graph runs on those steps (``CELL_SHARE``).

Why not skip whole positions (frames)?  The layer penalty decides the low codebooks first, so nearly every frame
keeps a masked cell in a high codebook until the last step or two: 99.9% of the steps' frames at 32 steps, and
100% at 16 and 8 (a simulation of the schedule and the choice); the masked cells are 84-88% on average.
"""

from __future__ import annotations

import pathlib
import time
from typing import Callable, Iterator, Optional

import numpy as np

from ..settings.generation import GenerationConfig
from ..storage.manifest import BACKBONE_GRAPHS
from .events import Timer
from .onnx_model import PromptPast
from .sampling import guidance_schedule, unmask_schedule

#: below this share of a step's cells still masked, the heads run at those cells only (``CellHeads``); above it the
#: whole heads graph runs.  At full size on 2 threads the cells' products cost the whole graph's at about 0.65 of
#: the cells masked with both rows, 0.9 with one, and 0.55 / 0.57 at 0.5 (BENCHMARKS.md, "The heads where cells
#: are scored": ``python -m benchmarks.heads_where_scored --crossover``).
CELL_SHARE = 0.5


class CellHeads:
    """The audio heads at chosen cells, bit for bit what the folder's heads graph gives there.

    Built when the heads graph is the exporter's form: one ``MatMul`` of ``hidden_states`` with an fp32
    ``[H, C*V]`` initializer, reshaped to ``[B, S, C, V]`` and transposed to ``[B, C, S, V]``; otherwise
    ``available`` is False and the loop runs the whole graph on every step (an fp16 folder's heads, say).
    It holds a second copy of the heads' weights (``C*V*H`` floats: 34 MB at full size)."""

    def __init__(self, folder: pathlib.Path, providers, options):
        self.session, self.codebooks = None, 0
        found = _heads_weight(folder / BACKBONE_GRAPHS["audio_heads"])
        if found is None:
            return
        weight, self.codebooks, self.vocab = found
        self.session, self._weights = _cell_session(weight, self.codebooks, providers, options)

    @property
    def available(self) -> bool:
        return self.session is not None

    def logits(self, rows: list[np.ndarray], masked: np.ndarray) -> np.ndarray:
        """``[R, C, T, V]`` float32: the heads' logits of ``rows`` (hidden states ``[1, T, H]`` each) at the cells
        ``masked`` (``[C, T]``), zero at the others."""
        frames = [np.flatnonzero(masked[c]) for c in range(self.codebooks)]
        feeds = {f"hidden_{c}": np.ascontiguousarray(np.concatenate([row[0, index] for row in rows]), dtype=np.float32)
                 for c, index in enumerate(frames)}
        out = self.session.run(None, feeds)
        logits = np.zeros((len(rows), self.codebooks, masked.shape[1], self.vocab), dtype=np.float32)
        for c, index in enumerate(frames):
            for r in range(len(rows)):
                logits[r, c, index] = out[c][r * len(index):(r + 1) * len(index)]
        return logits


def _heads_weight(path: pathlib.Path) -> Optional[tuple[np.ndarray, int, int]]:
    """The heads graph's ``[H, C*V]`` fp32 weight, ``C`` and ``V``, when the graph is ``MatMul -> Reshape -> Transpose(0,2,1,3)``."""
    import onnx
    from onnx import numpy_helper

    try:
        graph = onnx.load(str(path)).graph
    except Exception:  # noqa: BLE001 - onnx raises its own types; the whole graph then runs as it is
        return None
    products = [node for node in graph.node if node.op_type not in ("Shape", "Constant", "Gather", "Unsqueeze",
                                                                     "Concat")]
    if [node.op_type for node in products] != ["MatMul", "Reshape", "Transpose"]:
        return None
    matmul, reshape, transpose = products
    perm = [list(attr.ints) for attr in transpose.attribute if attr.name == "perm"]
    weights = {init.name: init for init in graph.initializer}
    if (matmul.input[0] != "hidden_states" or matmul.input[1] not in weights or reshape.input[0] != matmul.output[0]
            or transpose.input[0] != reshape.output[0] or perm != [[0, 2, 1, 3]]):
        return None
    weight = numpy_helper.to_array(weights[matmul.input[1]], base_dir=str(path.parent))
    output = graph.output[0].type.tensor_type.shape.dim
    codebooks, vocab = output[1].dim_value, output[3].dim_value
    if weight.dtype != np.float32 or weight.ndim != 2 or not codebooks or weight.shape[1] != codebooks * vocab:
        return None
    return weight, codebooks, vocab


def _cell_session(weight: np.ndarray, codebooks: int, providers, options):
    """A session of ``C`` products ``hidden_c [n, H] x W_c [H, V]``, ``W_c`` codebook c's columns of ``weight``,
    and the ``W_c`` (ONNX Runtime reads them where they are: they live as long as the session)."""
    from onnx import TensorProto, helper

    from ..runtime.sessions import in_memory_session

    hidden, width = weight.shape
    vocab = width // codebooks
    weights = {f"weight_{c}": np.ascontiguousarray(weight[:, c * vocab:(c + 1) * vocab]) for c in range(codebooks)}
    graph = helper.make_graph(
        [helper.make_node("MatMul", [f"hidden_{c}", f"weight_{c}"], [f"logits_{c}"]) for c in range(codebooks)],
        "audio_heads_by_codebook",
        [helper.make_tensor_value_info(f"hidden_{c}", TensorProto.FLOAT, ["n", hidden]) for c in range(codebooks)],
        [helper.make_tensor_value_info(f"logits_{c}", TensorProto.FLOAT, ["n", vocab]) for c in range(codebooks)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    return in_memory_session(model, weights, providers, options), weights


def step_logits(model, cell_heads: Optional[CellHeads], rows: list[np.ndarray], masked: np.ndarray) -> np.ndarray:
    """The heads' logits ``[R, C, T, V]`` of a step's rows (hidden states ``[1, T, H]``): at the masked cells only
    when few are left (``CELL_SHARE``), else the whole graph's on one call (one larger product is faster)."""
    if cell_heads is not None and cell_heads.available and masked.mean() < CELL_SHARE:
        return cell_heads.logits(rows, masked)
    return model.audio_logits(np.concatenate(rows) if len(rows) > 1 else rows[0])


def unmask(engine, tokens: np.ndarray, cond_ids: np.ndarray, cond_audio_mask: np.ndarray, rng: np.random.Generator,
           config: GenerationConfig, timer: Timer, prompt_refresh: int, decide: Callable) -> Iterator[tuple]:
    """``_generate_iterative`` for one item: decides ``tokens`` in place, yields (step, decided).
    ``prompt_refresh``: the conditional row whole on every k-th step only (``presets.prompt_refresh_for``);
    ``decide``: ``sampling.decode_step`` (the engine hands its own name, so a test's spy on it sees each step)."""
    frames = tokens.shape[-1]
    length = cond_ids.shape[-1]
    target = slice(length - frames, length)
    guided = config.guidance_scale != 0
    # the unconditional row is the target frames alone, all audio, positions 0..T-1
    uncond_audio_mask = np.ones((1, frames), dtype=bool)
    schedule = unmask_schedule(frames, engine.num_codebooks, config.num_step, config.t_shift)
    runs_uncond = guidance_schedule(schedule, config.guidance_every)
    # prompt_refresh: the conditional row runs whole on these steps and its prompt's keys and values are
    # kept (``PromptPast``); the steps between run its target frames alone on them
    model, estimator, watch = engine.model, engine.estimator, engine.backbone_watch
    refresh = prompt_refresh if model.keeps_prompt else 1  # a graph without past inputs runs whole
    runs_whole = guidance_schedule(schedule, refresh)
    prompt = PromptPast(length - frames) if refresh > 1 else None
    last_uncond = None  # the last unconditional logits, reused on steps that skip its forward
    for step, (k, fresh, whole) in enumerate(zip(schedule, runs_uncond, runs_whole), start=1):
        if k <= 0:  # the reference computes this step's forward and then skips the item
            yield step, np.zeros(tokens.shape, dtype=bool)
            continue
        fresh = guided and fresh
        tick = time.perf_counter()
        cond_ids[0, :, target] = tokens
        rows = slice(None) if whole else target
        cond_embeds = model.embed(cond_ids[:, :, rows], cond_audio_mask[:, rows])
        uncond_embeds = model.embed(tokens[np.newaxis], uncond_audio_mask) if fresh else None
        tick = timer.add("embeddings", tick)
        cond = (cond_embeds, [cond_embeds.shape[1]])
        if prompt is not None:  # kept on whole steps, given as the past on the others
            cond += (None, prompt) if whole else (prompt,)
        with watch.gate.step():  # never while a probe made again swaps the backbone
            tick = time.perf_counter()
            if fresh:  # both rows' forwards side by side where the model can (``hidden_states_pair``)
                cond_hidden, uncond_hidden = model.hidden_states_pair(cond, (uncond_embeds, [frames]))
            else:
                cond_hidden = model.hidden_states(*cond)
            seconds = time.perf_counter() - tick
        estimator.observe_step(length, frames, seconds, paired=fresh, whole=whole)
        watch.observe_step(length, frames, seconds, paired=fresh, whole=whole)
        cond_hidden = cond_hidden[:, -frames:]
        tick = timer.add("backbone", tick)
        # both rows' target frames through the heads in one call; decode_step reads the masked cells only, and
        # the cells masked on a later step are among these, so reused unconditional logits hold them all
        logits = step_logits(model, engine.cell_heads, [cond_hidden, uncond_hidden] if fresh else [cond_hidden],
                             tokens == engine.mask_id)
        if fresh:
            last_uncond = logits[1]   # decode_step never writes in the logits it is given
        uncond_logits = last_uncond if guided else None
        tick = timer.add("heads", tick)
        decided = decide(tokens, logits[0], uncond_logits, k,
                         guidance_scale=config.guidance_scale,
                         class_temperature=config.class_temperature,
                         layer_penalty_factor=config.layer_penalty_factor,
                         position_temperature=config.position_temperature,
                         rng=rng, mask_id=engine.mask_id,
                         # reused unconditional logits are never computed in (they serve the next step too)
                         overwrite=config.guidance_every == 1 or not guided)
        timer.add("sampling", tick)
        yield step, decided
