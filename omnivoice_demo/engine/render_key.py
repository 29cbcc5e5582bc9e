"""The render key: what decides a generation's audio, from the resolved inputs, in one place.

Batch, book and eval reuse audio made before exactly when its key is the key of what would run now, and key
on nothing else.  The key is built from the plan ``prepare`` made and the engine that runs it, never from
what was asked:

* ``text``: the text as the model reads it (after the lexicon, SSML and number normalisation), its chunks
  and planned length; a script's speakers, an SSML document's segments and pauses;
* ``language``, ``instruct``: the language code the model gets and the instruct as resolved;
* ``voice``: the voice's content (its codes, transcript and loudness), never its name or file;
* ``settings``: the generation config with its seed;
* ``model``: the content of the graphs the engine loaded (the manifest's ``content_sha256``: a copy of a
  folder at another path is the same model, other weights at the same path are not);
* ``compute``: the backbone compute that runs (``auto`` resolved: ``int4``, ``fp32``, ``int8-row``, ...),
  where its weights came from and the execution provider;
* ``normalizer``: the number normaliser's identity and version, where numbers were read as words;
* ``engine``: ``OUTPUT_VERSION``, bumped when a change of this program alters the audio;
* ``format``: the delivery format (``float32``: the result's array; ``wav``, ``flac``: a file);
* ``recognizer``: only where the sentence check (``guard``) chooses the takes (batch and book items,
  ``with_recognizer``): the speech recogniser that judges them, by content (``recognizer_identity``: the digest
  of its graphs and configuration, its precision and ``RECOGNIZER_VERSION``; not its path).  Without the check
  the part is absent and the key is what it was.

``render_parts`` gives each part's value (short digests for the long ones), so a rerun can say which part
changed (``changed_parts``); ``key_of`` is the sha256 of them all.
"""

from __future__ import annotations

import hashlib
import json
from typing import Optional

import numpy as np

#: bump when a change of this program alters the audio of a request that is otherwise the same (a new
#: sampling order, another post-processing, ...): every key changes, so batch, book and eval remake it all
OUTPUT_VERSION = 1
#: bump when a change of this program's transcription (``asr``) alters a transcript: a sentence check may then
#: keep other takes, so every checked key changes
RECOGNIZER_VERSION = 1

#: the parts of a key, in the order a report names them
PARTS = ("text", "language", "instruct", "voice", "settings", "model", "compute", "normalizer", "engine", "format",
         "recognizer")

#: what a report says for each part that changed
PART_NAMES = {"text": "the text as read", "language": "the language", "instruct": "the instruct",
              "voice": "the voice", "settings": "the generation settings or seed", "model": "the model's weights",
              "compute": "the backbone compute", "normalizer": "the number normaliser",
              "engine": "the engine's output version", "format": "the audio format",
              "recognizer": "the sentence check's recogniser"}


def _digest(value) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, ensure_ascii=False).encode()).hexdigest()[:32]


def voice_digest(voice) -> Optional[str]:
    """A voice by its content: its codes (shape and values), transcript and loudness (``rms``, which sets the
    output's level); not its name, file or recognised language."""
    if voice is None:
        return None
    digest = hashlib.sha256()
    codes = np.ascontiguousarray(voice.codes, dtype=np.int64)
    digest.update(repr(codes.shape).encode())
    digest.update(codes.tobytes())
    rms = None if voice.rms is None else float(voice.rms)   # a chunk made the voice (Wyoming's later pieces): no level
    digest.update(json.dumps([voice.transcript, rms]).encode())
    return digest.hexdigest()[:32]


def compute_identity(choice: dict, provider: str, weights_digest: Optional[str] = None) -> str:
    """The backbone compute that runs, from the engine's ``backbone_choice``: the precision that runs (``as built``
    resolved to the folder's), the arithmetic version of an 8-bit rebuild (``ARITHMETIC_VERSION``, written "build
    v5" as the keys made before it named it), the original weights' digest where they built it, and the execution
    provider.  ``auto`` never appears: the same compute asked for by another name (``auto`` resolving to
    ``int4``, or ``int4`` by name) is the same identity."""
    from ..backbones.choice import EIGHT_BIT
    from ..backbones.precision import ARITHMETIC_VERSION

    name, source = choice.get("choice"), choice.get("source")
    ran = source if name in (None, "as built") else name
    parts = [str(ran)]
    if name in EIGHT_BIT:
        parts.append(f"build v{ARITHMETIC_VERSION}")
    if weights_digest and name not in (None, "as built"):
        parts.append(f"weights {weights_digest[:16]}")
    return " ".join(parts) + f" on {provider}"


def _plans(plan) -> list:
    """The ``GenerationPlan``s of any plan, with what sits between them (pauses) and who speaks them."""
    from .read_ahead import StreamedPlan
    from .segments import SegmentsPlan
    from .turns import TurnsPlan

    if isinstance(plan, StreamedPlan):
        plan = plan.complete()
    if isinstance(plan, SegmentsPlan):
        return [("pause", item) if isinstance(item, int) else ("segment", item) for item in plan.items]
    if isinstance(plan, TurnsPlan):
        return [(f"turn {speaker}", one) for speaker, one in zip(plan.speakers, plan.plans)]
    return [("text", plan)]


def render_parts(plan, *, model: str, compute: str, audio_format: str = "float32") -> dict[str, object]:
    """Each part of the key of ``plan`` (``prepare``'s, of any kind) run on a model of content ``model`` with
    ``compute`` (``compute_identity``), delivered as ``audio_format`` (the recogniser: ``with_recognizer``)."""
    from ..text.normalize import identity as normalizer_identity

    texts, languages, instructs, voices, settings, normalizers = [], [], [], [], [], []
    for role, one in _plans(plan):
        if role == "pause":
            texts.append(["pause", one])
            continue
        texts.append([role, one.text, list(one.chunks), int(one.target_frames)])
        languages.append(one.language)
        instructs.append(one.instruct)
        voices.append(voice_digest(one.voice))
        settings.append(one.config.to_dict())
        normalization = one.normalization
        normalizers.append(normalizer_identity(normalization.language)
                           if normalization is not None and normalization.language else None)
    single = len(languages) == 1
    return {"text": _digest(texts), "language": languages[0] if single else _digest(languages),
            "instruct": instructs[0] if single else _digest(instructs),
            "voice": voices[0] if single else _digest(voices), "settings": _digest(settings),
            "model": model, "compute": compute,
            "normalizer": normalizers[0] if single else _digest(normalizers),
            "engine": OUTPUT_VERSION, "format": audio_format}


def with_recognizer(parts: dict, plan, recognizer) -> dict:
    """``parts`` (``render_parts``' of ``plan``) with the ``recognizer`` that judges its takes where its sentence
    check is on (batch and book items: ``batch.worker``); ``parts`` as they are where it is off."""
    if not any(role != "pause" and one.config.guard for role, one in _plans(plan)):
        return parts
    return {**parts, "recognizer": recognizer_identity(recognizer)}


def key_of(parts: dict) -> str:
    """The render key: the sha256 of every part (``recognizer`` only where there is one: a key without the
    sentence check is the key it was before the part existed)."""
    return hashlib.sha256(json.dumps({name: parts.get(name) for name in PARTS
                                      if name != "recognizer" or parts.get(name) is not None}, sort_keys=True,
                                     ensure_ascii=False).encode()).hexdigest()


def recognizer_identity(recognizer) -> str:
    """The speech recogniser that judges a sentence check's takes, by content: the sha256 of the files it reads
    (its precision's graphs, their external data, its configuration and tokenizer), its precision and
    ``RECOGNIZER_VERSION``; a copy of its folder elsewhere is the same recogniser.  A recogniser made on first
    use (``asr.LazyRecognizer``) is loaded (the check needs it anyway); one that is no folder (a stand-in) is
    named by its kind."""
    load = getattr(recognizer, "get", None)
    loaded = load() if load is not None else recognizer
    folder, graphs = getattr(loaded, "folder", None), getattr(loaded, "graphs", None)
    if folder is None or not isinstance(graphs, dict):
        return f"{type(loaded).__module__}.{type(loaded).__qualname__} v{RECOGNIZER_VERSION}"
    return f"{_recognizer_digest(str(folder), tuple(sorted(graphs.values())))} {loaded.precision} v{RECOGNIZER_VERSION}"


_RECOGNIZER_DIGESTS: dict[tuple, str] = {}


def _recognizer_digest(folder: str, graphs: tuple[str, ...]) -> str:
    """The digest of a recogniser folder's files that ``graphs`` need, kept while their sizes and times hold."""
    import pathlib

    from ..asr.folder import CONFIG_FILES
    from ..storage.digests import file_sha256

    root = pathlib.Path(folder)
    names = [*graphs, *(f"{g}{tail}" for g in graphs for tail in ("_data", ".data")), *CONFIG_FILES]
    present = [(name, (root / name).stat()) for name in names if (root / name).is_file()]
    stamp = (folder, tuple((name, info.st_size, info.st_mtime_ns) for name, info in present))
    if stamp not in _RECOGNIZER_DIGESTS:
        _RECOGNIZER_DIGESTS[stamp] = _digest([[name, file_sha256(root / name)] for name, _ in present])
    return _RECOGNIZER_DIGESTS[stamp]


def changed_parts(before: Optional[dict], now: dict) -> list[str]:
    """The parts that differ, in words (``PART_NAMES``); a record made before render keys: one reason saying so."""
    if not isinstance(before, dict) or not before:
        return ["made before render keys (an older version): made once again"]
    return [PART_NAMES[name] for name in PARTS if before.get(name) != now.get(name)]
