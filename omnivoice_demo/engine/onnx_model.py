"""OmniVoice's forward pass on ONNX Runtime: embeddings -> backbone -> audio heads.

``OmniVoiceOnnx.logits(input_ids, audio_mask, lengths)`` computes what
``OmniVoice.forward(input_ids, audio_mask, attention_mask)`` computes in the
reference, for right-padded rows that each attend only within their own length.
The backbone is onnxruntime-genai's graph; it is fed an empty KV cache, so every
call is a full forward (the reference has no KV cache either), unless a step
reuses a prompt's keys and values (``PromptPast``, ``GenerationConfig.prompt_refresh``).
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import os
import pathlib
from typing import Optional, Sequence

import numpy as np

from ..errors import ModelFolderError
from ..runtime.sessions import NUMPY_TYPES, graph_inputs, open_session, providers_for, run_options, session_options
from ..storage.manifest import BACKBONE_GRAPHS


def read_genai_decoder_config(folder: pathlib.Path) -> dict:
    import json

    path = folder / "genai_config.json"
    if not path.is_file():
        raise ModelFolderError(f"genai_config.json is missing from {folder}; download or build the model folder again.")
    try:
        return json.loads(path.read_text(encoding="utf-8"))["model"]["decoder"]
    except (ValueError, KeyError, TypeError, UnicodeDecodeError) as exc:
        raise ModelFolderError(f"genai_config.json in {folder} is not a valid onnxruntime-genai config "
                               f"({exc.__class__.__name__}: {str(exc)[:200]}); download or build the model folder "
                               "again.") from exc


@dataclasses.dataclass
class PromptPast:
    """The per-layer keys and values of one row's first ``length`` positions (its prompt).

    Filled by a whole forward (``hidden_states(..., keep=past)``) and given back as the past of
    forwards of the positions after them (``hidden_states(..., past=past)``).  The graph's
    GroupQueryAttention then places the new positions at ``length + i`` (their rotary positions
    in the whole row: ORT derives them from ``seqlens_k`` and ``total_sequence_length``, which
    genai's graph takes from the attention mask of ``length + new`` ones) and, with ``causal=0``,
    lets each attend to every past and every new position: what the whole row's forward computes
    at those positions when the prompt's keys and values are those of the same forward
    (``tests/test_prompt_refresh.py``).  Kept across steps they are an approximation: the prompt
    attends to the target, whose tokens change from step to step.
    """

    length: int
    tensors: dict = dataclasses.field(default_factory=dict)  # past_key_values.* name -> [1, kv_heads, length, dim]


class OmniVoiceOnnx:
    """The three graphs of a model folder, run in sequence."""

    def __init__(self, folder: str | pathlib.Path, provider: str = "cpu", threads: int | None = None):
        self.folder = pathlib.Path(folder)
        self.provider = provider
        providers = providers_for(provider)
        options = session_options(threads)
        self.embeddings = open_session(self.folder / BACKBONE_GRAPHS["audio_embeddings"], providers, options)
        # the folder's own backbone is opened when first used: an engine that runs another choice
        # (backbone_choice.py) never holds it, which kept ~0.5 GB resident beside the 8-bit graph
        self._backbone, self._backbone_opener = None, lambda: open_session(
            self.folder / BACKBONE_GRAPHS["backbone"], providers, options)
        self.heads = open_session(self.folder / BACKBONE_GRAPHS["audio_heads"], providers, options)
        self.run_options = run_options()
        #: whether ``hidden_states_pair`` runs its two forwards at once (with more than one thread: see there)
        self.overlap_forwards = (threads if threads is not None else os.cpu_count() or 1) > 1
        self._second_forward: Optional[concurrent.futures.ThreadPoolExecutor] = None

        inputs = graph_inputs(self.folder / BACKBONE_GRAPHS["backbone"])
        self.past_names = [name for name in inputs if name.startswith("past_key_values.")]
        if "inputs_embeds" not in inputs or "attention_mask" not in inputs:
            raise ModelFolderError(
                f"{BACKBONE_GRAPHS['backbone']} in {self.folder} does not take inputs_embeds and attention_mask: "
                "it was not built with exclude_embeds (see convert/pipeline.py)."
            )
        self.embeds_type = inputs["inputs_embeds"]
        self.mask_type = inputs["attention_mask"]
        if self.past_names:
            # [batch, kv_heads, past, head_dim]; genai leaves head_dim symbolic, its config has it
            decoder = read_genai_decoder_config(self.folder)
            self.kv_heads, self.head_dim = int(decoder["num_key_value_heads"]), int(decoder["head_size"])
            self.past_type = inputs[self.past_names[0]]
        self.hidden_size = int(self.embeddings.get_outputs()[0].shape[-1])
        self.heads_input_type = NUMPY_TYPES[self.heads.get_inputs()[0].type]
        self.backbone_outputs = ["hidden_states"]

    @property
    def backbone(self):
        """The backbone session: the folder's own graph unless another was set (``backbone_choice.py``)."""
        if self._backbone is None:
            self._backbone = self._backbone_opener()
        return self._backbone

    @backbone.setter
    def backbone(self, session) -> None:
        self._backbone = session

    def open_folder_backbone(self):
        """A new session of the folder's own backbone graph (``backbone_choice`` probes it again beside others)."""
        return self._backbone_opener()

    # --- the three stages ---------------------------------------------------------

    def embed(self, input_ids: np.ndarray, audio_mask: np.ndarray) -> np.ndarray:
        """input_ids [B, 8, S] int64, audio_mask [B, S] bool -> inputs_embeds [B, S, H]."""
        return self.embeddings.run(None, {"input_ids": input_ids.astype(np.int64, copy=False),
                                          "audio_mask": audio_mask.astype(np.bool_, copy=False)},
                                   self.run_options)[0]

    @property
    def keeps_prompt(self) -> bool:
        """Whether the backbone graph takes a past (``past_key_values.*`` in, ``present.*`` out): ``PromptPast``."""
        return bool(self.past_names)

    def hidden_states(self, inputs_embeds: np.ndarray, lengths: Sequence[int], past: Optional[PromptPast] = None,
                      keep: Optional[PromptPast] = None) -> np.ndarray:
        """Backbone over right-padded rows; row b attends to its first ``lengths[b]`` positions.

        One row only with ``past`` (its positions come after the past's and attend to it) or ``keep``
        (its first ``keep.length`` positions' keys and values are stored in ``keep``).
        """
        batch, seq = inputs_embeds.shape[:2]
        before = past.length if past is not None else 0
        if (past is not None or keep is not None) and (batch != 1 or list(lengths) != [seq] or not self.past_names):
            raise ValueError("a past is kept and given for one unpadded row of a graph with past inputs")
        mask = np.zeros((batch, before + seq), dtype=self.mask_type)
        for row, length in enumerate(lengths):
            mask[row, :before + length] = 1
        feeds = {"inputs_embeds": inputs_embeds.astype(self.embeds_type, copy=False), "attention_mask": mask}
        if past is not None:
            feeds.update(past.tensors)
        elif self.past_names:
            empty = np.zeros((batch, self.kv_heads, 0, self.head_dim), dtype=self.past_type)
            feeds.update({name: empty for name in self.past_names})
        if keep is None:
            return self.backbone.run(self.backbone_outputs, feeds, self.run_options)[0]
        presents = [name.replace("past_key_values.", "present.", 1) for name in self.past_names]
        hidden, *kept = self.backbone.run(self.backbone_outputs + presents, feeds, self.run_options)
        keep.tensors = {name: np.ascontiguousarray(value[:, :, :keep.length])
                        for name, value in zip(self.past_names, kept)}
        return hidden

    def hidden_states_pair(self, first: tuple, second: tuple) -> tuple[np.ndarray, np.ndarray]:
        """``(hidden_states(*first), hidden_states(*second))``: a step's conditional and unconditional rows.

        With ``overlap_forwards`` the two run at once, the second on a worker thread (ONNX Runtime
        releases the GIL and a session may run from two threads).  At a step's sizes one forward
        leaves cores idle between and inside its ~2,300 nodes (150 positions of the full-size int8
        backbone: 0.39 s on 2 threads, 0.47 s on 1), so side by side the pair took 0.49 s where
        one after the other took 0.63, and a 32-step generation 10.2 s instead of 12.1
        (``benchmarks/overlap.py``).  Each forward computes exactly what it computes alone: same
        graph, same inputs, no shared state but the weights.
        """
        if not self.overlap_forwards:
            return self.hidden_states(*first), self.hidden_states(*second)
        _ = self.backbone  # a folder's own graph is opened here, not by both threads at once
        if self._second_forward is None:
            self._second_forward = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="omnivoice-forward")
        pending = self._second_forward.submit(self.hidden_states, *second)
        try:
            result = self.hidden_states(*first)
        except BaseException:
            concurrent.futures.wait([pending])  # never leave a forward running behind an error
            raise
        return result, pending.result()

    def audio_logits(self, hidden_states: np.ndarray) -> np.ndarray:
        """hidden_states [B, S, H] -> logits [B, 8, S, 1025] float32."""
        logits = self.heads.run(None, {"hidden_states": hidden_states.astype(self.heads_input_type, copy=False)},
                                self.run_options)[0]
        return logits.astype(np.float32, copy=False)

    def logits(self, input_ids: np.ndarray, audio_mask: np.ndarray, lengths: Sequence[int] | None = None,
               positions: slice | None = None) -> np.ndarray:
        """The full forward; ``positions`` restricts the heads to a slice of the sequence."""
        lengths = [input_ids.shape[-1]] * input_ids.shape[0] if lengths is None else lengths
        hidden = self.hidden_states(self.embed(input_ids, audio_mask), lengths)
        if positions is not None:
            hidden = hidden[:, positions]
        return self.audio_logits(hidden)

    # --- the bidirectional check --------------------------------------------------

    def attends_bidirectionally(self, length: int = 6, tolerance: float = 1e-6) -> bool:
        """Two short forwards that differ only at the last position: does position 0 move?

        A causal backbone cannot let position 0 see the last position, so its
        first output is identical in both runs.
        """
        return self.attention_verdict(length, tolerance) == "bidirectional"

    def attention_verdict(self, length: int = 6, tolerance: float = 1e-6) -> str:
        """``attends_bidirectionally``'s forwards, with the cause when it fails: ``"bidirectional"``,
        ``"causal"`` (position 0 does not move), or ``"not finite"`` (the outputs hold NaN or infinities, so
        nothing can be told about the attention: poisoned weights, not the graph's direction)."""
        rng = np.random.default_rng(0)
        embeds = rng.standard_normal((1, length, self.hidden_size)).astype(np.float32)
        changed = embeds.copy()
        changed[0, -1] += 1.0
        first = self.hidden_states(embeds, [length])[0, 0].astype(np.float32)
        second = self.hidden_states(changed, [length])[0, 0].astype(np.float32)
        if not (np.isfinite(first).all() and np.isfinite(second).all()):
            return "not finite"
        return "bidirectional" if np.abs(first - second).max() > tolerance else "causal"


def attention_ratio(folder: pathlib.Path) -> Optional[float]:
    """``kappa``: the backbone's attention work per position squared over its weight work per position.

    A forward of ``L`` positions does about ``W*L`` multiply-adds in its weight
    products (``W`` = the sum of K*N over its MatMuls) and ``A*L*L`` in
    attention (``A`` = the sum over layers of 2 x heads x head size: Q.K and
    P.V), so its cost grows as ``L + kappa*L**2`` with ``kappa = A / W``: the
    shape of the time estimates' forward curve (``estimate.PipelineEstimator``).
    Read from the graph without its weights and from genai_config.json; None
    for a folder where either cannot be read.
    """
    import onnx

    from ..backbones.repair import is_standard_attention

    try:
        graph = onnx.load(str(folder / BACKBONE_GRAPHS["backbone"]), load_external_data=False).graph
        head_size = int(read_genai_decoder_config(folder)["head_size"])
    except Exception:  # onnx raises its own types; ModelFolderError, KeyError, ValueError from the config
        return None
    shapes = {init.name: list(init.dims) for init in graph.initializer}
    weights, attention = 0, 0
    for node in graph.node:
        attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
        if node.op_type == "MatMulNBits":
            weights += int(attrs["K"]) * int(attrs["N"])
        elif node.op_type == "MatMul" and len(shapes.get(node.input[1], [])) == 2:
            weights += int(np.prod(shapes[node.input[1]]))
        elif node.op_type == "GroupQueryAttention":
            attention += 2 * int(attrs["num_heads"]) * head_size
        elif is_standard_attention(node):   # rewritten (backbones/attention.py)
            attention += 2 * int(attrs["q_num_heads"]) * head_size
    return attention / weights if weights and attention else None
