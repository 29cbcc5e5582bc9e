"""The configurations an evaluation compares: the exact one and the candidates, and their engines.

A configuration is a model (a folder or Hub repo, and its precision), the
engine's ``backbone=`` (passed through as given, so every choice the engine
offers works here), and a ``GenerationConfig`` (a preset, any of its fields,
``sentence_streaming``).  On the command line a candidate is one comma-separated
spec: ``name=fast,preset=fast``, ``backbone=int4``, ``precision=int4``,
``model=DIR,num_step=8``, ``preset=reference,streaming=on``, ``preset=fast,streaming=on,quick_start=1.2`` (a
voice assistant's first chunk of a clause or a few words, against ``preset=fast,streaming=on``).  Whatever a
candidate does not say is the exact configuration's (its model, precision and
backbone); the settings default to the Reference preset.
"""

from __future__ import annotations

import dataclasses
import os
import re
from typing import TYPE_CHECKING, Callable, Optional

from ..settings.generation import GenerationConfig
from ..settings.limits import Limits
from ..settings.presets import under_preset
from ..errors import InvalidInput

if TYPE_CHECKING:
    from ..engine.loop import OmniVoiceEngine

EXACT_NAME = "exact"
EXACT_BACKBONE = "fp32"
SPEC_KEYS = ("name", "model", "precision", "backbone", "backbone_weights", "preset", "streaming")
NAME_PATTERN = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._+-]{0,63}$")


@dataclasses.dataclass(frozen=True)
class Candidate:
    """One configuration: ``model``/``precision``/``backbone`` (None: the exact one's), ``config``."""

    name: str
    model: Optional[str] = None
    precision: Optional[str] = None
    backbone: Optional[str] = None
    backbone_weights: Optional[str] = None
    config: GenerationConfig = dataclasses.field(default_factory=lambda: GenerationConfig.preset("reference"))
    #: how the report names the model (default: "model" and a folder's name or a repo); the audio does not depend on it
    shown_as: Optional[str] = None

    def under(self, exact: "Candidate") -> "Candidate":
        """This configuration with the exact one's model and backbone where it names none."""
        backbone = self.backbone or exact.backbone
        weights = self.backbone_weights or exact.backbone_weights
        if self.model is not None:
            return dataclasses.replace(self, backbone=backbone, backbone_weights=weights)
        return dataclasses.replace(self, model=exact.model, precision=self.precision or exact.precision,
                                   backbone=backbone, backbone_weights=weights,
                                   shown_as=self.shown_as or exact.shown_as)

    def engine_key(self) -> tuple:
        """What decides the engine that runs this configuration: the same key, the same loaded engine."""
        return (self.model, self.precision, self.backbone, self.backbone_weights)

    def describe(self) -> str:
        config = self.config
        parts = [f"{config.num_step} step{'' if config.num_step == 1 else 's'}"]
        if config.guidance_every != 1:
            parts.append(f"guidance every {config.guidance_every}")
        if config.prompt_refresh != 1:
            parts.append(f"prompt refreshed every {config.prompt_refresh}")
        if config.sentence_streaming:
            parts.append("sentence streaming")
            if config.quick_start:
                parts.append(f"quick start {config.quick_start:g} s")
        parts.append(f"backbone {self.backbone}" + (f" from {self.backbone_weights}" if self.backbone_weights else ""))
        if self.model:
            parts.append(self.shown_as or f"model {_shown_model(self.model)}")
        if self.precision:
            parts.append(f"precision {self.precision}")
        return ", ".join(parts)


def _shown_model(model: str) -> str:
    """A model as a report names it: a folder by its name (never the server's path), a Hub repo or a loaded
    model's label as it is."""
    return os.path.basename(os.path.normpath(model)) if os.path.isdir(model) else model


def exact_candidate(model: Optional[str] = None, precision: Optional[str] = None, backbone: str = EXACT_BACKBONE,
                    config: Optional[GenerationConfig] = None, backbone_weights: Optional[str] = None) -> Candidate:
    """The exact configuration: by default the fp32 backbone, the Reference preset, no streaming."""
    return Candidate(EXACT_NAME, model=model, precision=precision, backbone=backbone, backbone_weights=backbone_weights,
                     config=config or GenerationConfig.preset("reference"))


def parse_candidate(spec: str) -> Candidate:
    """A candidate from ``key=value,key=value`` (keys: ``SPEC_KEYS`` and the GenerationConfig fields)."""
    values: dict[str, str] = {}
    for part in (p.strip() for p in str(spec).split(",")):
        if not part:
            continue
        key, sep, value = part.partition("=")
        key = key.strip().replace("-", "_")
        if not sep or not value.strip():
            raise InvalidInput(f"--candidate {spec!r}: {part!r} is not key=value.", param="candidate")
        if key not in SPEC_KEYS and key not in GenerationConfig.names():
            raise InvalidInput(f"--candidate {spec!r}: unknown key {key!r}; use {', '.join(SPEC_KEYS)} or a "
                               f"generation setting ({', '.join(GenerationConfig.names())}).", param="candidate")
        values[key] = value.strip()
    if not values:
        raise InvalidInput("--candidate is empty; give e.g. preset=fast or backbone=int4.", param="candidate")
    if "streaming" in values:
        values["sentence_streaming"] = values.pop("streaming")
    name = values.pop("name", None) or _name_of(spec)
    spec_fields = {k: values.pop(k) for k in ("model", "precision", "backbone", "backbone_weights") if k in values}
    try:
        config = GenerationConfig.from_mapping(under_preset(values.pop("preset", "reference"), values)).validate()
    except InvalidInput as exc:
        raise InvalidInput(f"--candidate {spec!r}: {exc}", param="candidate") from exc
    if config.seed is not None:
        raise InvalidInput("--candidate: the seed is the item's, the same for every configuration; remove seed=.",
                           param="candidate")
    return checked_name(Candidate(name, config=config, **spec_fields))


def checked_name(candidate: Candidate) -> Candidate:
    if not NAME_PATTERN.match(candidate.name):
        raise InvalidInput(f"The configuration name {candidate.name!r} cannot name a file: use up to 64 letters, "
                           "digits, '.', '+', '-' or '_' (name=...).", param="candidate")
    return candidate


def _name_of(spec: str) -> str:
    """A file-safe name from the spec's values: ``preset=fast,backbone=int4`` -> ``fast+int4``."""
    parts = []
    for part in str(spec).split(","):
        key, _, value = part.partition("=")
        key, value = key.strip(), value.strip()
        if key == "model":
            value = os.path.basename(value.rstrip("/")) or value
        elif key not in ("preset", "backbone", "precision"):
            value = f"{key}-{value}"
        parts.append(re.sub(r"[^A-Za-z0-9._-]+", "-", value).strip("-"))
    return "+".join(p for p in parts if p)[:64] or "candidate"


class EngineCache:
    """Opens the engine of a configuration (resolving its model), keeping the last one open.

    The configurations run one after another, grouped by engine (``runner``), so only
    one engine (with its backbone in memory) is held at a time and each distinct
    model, precision and backbone is loaded once.
    """

    def __init__(self, provider: str = "cpu", threads: Optional[int] = None, offline: Optional[bool] = None,
                 cache_dir=None, recognizer=None, progress=None, limits: Optional[Limits] = None):
        self.provider, self.threads, self.offline, self.cache_dir = provider, threads, offline, cache_dir
        self.limits = limits or Limits.local()
        self.recognizer, self.progress = recognizer, progress
        self._key, self._engine = None, None

    def __call__(self, candidate: Candidate):
        from ..engine.loop import OmniVoiceEngine
        from ..hub import resolve_model

        key = candidate.engine_key()
        if key != self._key:
            self._engine = None  # free the last backbone before the next is loaded
            ready = resolve_model(candidate.model, precision=candidate.precision, cache_dir=self.cache_dir,
                                  offline=self.offline, progress=self.progress or (lambda *_: None))
            # the resolver has just checked every file: the engine checks sizes only
            self._engine = OmniVoiceEngine(ready.path, provider=self.provider, threads=self.threads, verify="size",
                                           limits=self.limits, backbone=candidate.backbone,
                                           backbone_weights=candidate.backbone_weights or ready.backbone_weights,
                                           recognizer=self.recognizer, calibrate=False)
            self._key = key
        return self._engine


EngineSource = Callable[[Candidate], "OmniVoiceEngine"]
