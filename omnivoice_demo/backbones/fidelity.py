"""How close each backbone choice computes to the fp32 model: the check, and its published figures.

Random weights hide what trained ones have: a few hidden channels with
activations ~100x the rest ("massive activations" of Qwen-style models),
which is what one activation scale per tensor cannot take.  The check
therefore runs on a full-size random checkpoint with such channels planted
(``python -m convert.random_checkpoint --size full --outliers``: 4 channels,
RMSNorm weights x60 in every layer), built as an fp32 folder and an int4
folder; for each choice, ``compare`` measures against the fp32 folder's own
forward on a prompt-shaped sequence:

* ``cosine``: the mean over positions of the hidden states' cosine similarity;
* ``agreement``: the share of greedy audio codes (argmax of the audio heads over
  the 8 codebooks at every audio position) equal to fp32's.

``benchmarks/backbone_fidelity.py`` runs it and writes ``data/backbone_fidelity.json``,
which this module reads: the gate of ``backbone="auto"`` admits a choice whose
figures are at least the int4 graph's (``GATE_TOLERANCE`` absorbs float
noise between equal computations).  A choice the table lacks never passes.
"""

from __future__ import annotations

import functools
import json
import pathlib
from typing import Optional

import numpy as np

TABLE = pathlib.Path(__file__).resolve().parent.parent / "data" / "backbone_fidelity.json"

#: figures within this of int4's count as equal (the lossless 8-bit re-encoding computes int4's products)
GATE_TOLERANCE = 1e-3


@functools.lru_cache(maxsize=1)
def published_table() -> dict:
    try:
        data = json.loads(TABLE.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def fidelity_of(source: str, choice: str, table: Optional[dict] = None) -> Optional[dict]:
    """The check's figures of ``choice`` built from a ``source`` ("int4" or "fp32") folder or from the
    original weights (``source="checkpoint"``), or None."""
    table = published_table() if table is None else table
    if source == "checkpoint" and choice == "fp32":  # the original weights in fp32: the model itself
        return {"cosine": 1.0, "agreement": 1.0}
    if choice in ("as built", source):
        if source == "fp32":
            return {"cosine": 1.0, "agreement": 1.0}
        # an int4 folder as built is the int4 row; a folder built in 8 bits is that form from fp32 weights
        row = table.get("from_int4", {}).get("int4") if source == "int4" else table.get("from_fp32", {}).get(source)
    else:
        row = table.get(f"from_{source}", {}).get(choice)
    return row if isinstance(row, dict) else None


def passes_gate(source: str, choice: str, table: Optional[dict] = None) -> bool:
    """Whether ``choice`` computes at least as close to fp32 as the int4 graph does, on the check."""
    table = published_table() if table is None else table
    int4 = fidelity_of("int4", "int4", table)
    mine = fidelity_of(source, choice, table)
    if int4 is None or mine is None:
        return False
    return all(float(mine[k]) >= float(int4[k]) - GATE_TOLERANCE for k in ("cosine", "agreement"))


# --- the check itself ---------------------------------------------------------------------------

def check_sequence(model, length: int = 256, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """``(input_ids [1, 8, L], audio_mask [1, L])`` shaped like a prompt mid-generation: 40 text
    positions, then audio positions of which half are still masked."""
    rng = np.random.default_rng(seed)
    text = min(40, length // 4)
    ids = np.empty((1, 8, length), dtype=np.int64)
    ids[0, :, :text] = rng.integers(0, 1000, text)
    audio = rng.integers(0, 1024, (8, length - text))
    audio[rng.random(audio.shape) < 0.5] = 1024
    ids[0, :, text:] = audio
    mask = np.zeros((1, length), dtype=bool)
    mask[0, text:] = True
    return ids, mask


def compare(reference, candidate, input_ids: np.ndarray, audio_mask: np.ndarray) -> dict:
    """Hidden-state cosine and greedy-code agreement of ``candidate`` against ``reference``
    (two ``OmniVoiceOnnx``, typically the same folder with different backbones)."""
    length = input_ids.shape[-1]
    embeds = reference.embed(input_ids, audio_mask)
    expected = reference.hidden_states(embeds, [length])[0]
    got = candidate.hidden_states(embeds, [length])[0]
    return figures_of(reference, expected, got, audio_mask[0])


def agreement_on(model, reference_session, candidate_session, length: int = 256) -> dict:
    """``compare``'s figures of ``candidate_session`` against ``reference_session`` as the backbone of one
    ``model``, on ``check_sequence``: what ``auto`` measures on the weights the user loaded (issue 38).
    ``model.backbone`` is left at ``candidate_session``."""
    input_ids, audio_mask = check_sequence(model, length)
    embeds = model.embed(input_ids, audio_mask)
    model.backbone = reference_session
    expected = model.hidden_states(embeds, [length])[0]
    model.backbone = candidate_session
    got = model.hidden_states(embeds, [length])[0]
    return {**figures_of(model, expected, got, audio_mask[0]), "positions": length}


def figures_of(model, expected: np.ndarray, got: np.ndarray, audio: np.ndarray) -> dict:
    """Mean and least hidden-state cosine over positions, and the greedy audio codes' agreement at the
    ``audio`` positions (``model``'s heads), of ``got`` against ``expected`` (``[L, H]``)."""
    expected, got = expected.astype(np.float64), got.astype(np.float64)
    cosines = (expected * got).sum(-1) / np.maximum(np.linalg.norm(expected, axis=-1) * np.linalg.norm(got, axis=-1),
                                                   1e-30)
    codes_expected = model.audio_logits(expected[np.newaxis, audio].astype(np.float32))[0].argmax(-1)
    codes_got = model.audio_logits(got[np.newaxis, audio].astype(np.float32))[0].argmax(-1)
    return {"cosine": round(float(cosines.mean()), 5), "cosine_min": round(float(cosines.min()), 5),
            "agreement": round(float((codes_expected == codes_got).mean()), 5)}
