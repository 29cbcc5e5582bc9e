"""The app's models: resolve (download, repair, build) and load in the background, keep several loaded.

The app starts serving before any model is loaded; ``ModelManager.start_load``
runs ``hub.resolve_model`` and ``OmniVoiceEngine`` in a thread while the model
bar shows its progress (``status()``).  Several models can stay loaded (the
Benchmark tab compares them); one is *active* for Speak, Clone and Codec.
A front end that wants to know when a model becomes the active one (the Wyoming server's warm-up
request) subscribes with ``ModelManager.on_active``; the manager owns the state and calls it.
"""

from __future__ import annotations

import dataclasses
import logging
import pathlib
import re
import threading
import time
from collections import OrderedDict
from typing import Callable, Optional

from ..settings.limits import Limits
from ..engine.loop import OmniVoiceEngine
from ..errors import ModelNotAvailable, OmniVoiceError
from ..backbones.choice import weights_unused_reason
from .sharing import refuse_model_changes

log = logging.getLogger(__name__)

MODEL_CARD = "https://huggingface.co/k2-fsa/OmniVoice"
CODEC_CARD = "https://huggingface.co/bosonai/higgs-audio-v2-tokenizer"


class ModelNotReady(ModelNotAvailable):
    """No model can serve a request now; the message says why and what to do."""


class ModelFileWatch:
    """The size and modification time of a model folder's graph and weights files when it was loaded.

    The sessions hold the weights in memory (``runtime.sessions.with_weights_in_memory``), so a file
    changed in place cannot crash the server; ``check()`` says in the log that the files on disk
    are no longer what is served, once per change."""

    PATTERNS = ("*.onnx", "*.data", "*.onnx_data")  # graphs and their external weights (*.onnx.data)

    def __init__(self, folder: pathlib.Path):
        self.folder = pathlib.Path(folder)
        self.seen = self._snapshot()

    def _snapshot(self) -> dict[str, tuple]:
        found = {}
        for pattern in self.PATTERNS:
            for path in self.folder.rglob(pattern):
                try:
                    stat = path.stat()
                except OSError:  # gone between the listing and the stat: checked below as missing
                    continue
                found[path.relative_to(self.folder).as_posix()] = (stat.st_size, stat.st_mtime_ns, stat.st_ino)
        return found

    def check(self) -> list[str]:
        """The files changed since the load (or the last check), each logged as a warning."""
        now = self._snapshot()
        changed = sorted(name for name in self.seen.keys() | now.keys() if self.seen.get(name) != now.get(name))
        for name in changed:
            before, after = self.seen.get(name), now.get(name)
            what = ("was removed" if after is None else "appeared" if before is None
                    else f"size {before[0]} -> {after[0]} bytes" if before[0] != after[0] else "was rewritten")
            log.warning("model file %s in %s changed on disk since it was loaded (%s); this server keeps serving "
                        "the weights it read into memory: restart it or load the model again to use the new "
                        "files, and replace model files by renaming a complete copy over them, not in place.",
                        name, self.folder, what)
        self.seen = now
        return changed


@dataclasses.dataclass
class LoadedModel:
    label: str
    engine: OmniVoiceEngine
    folder: pathlib.Path
    source: str
    precision: str
    provider: str
    repaired: bool
    notices: list[str]
    licence: str
    load_seconds: float
    lock: threading.Lock = dataclasses.field(default_factory=threading.Lock)
    files: Optional[ModelFileWatch] = None

    def __post_init__(self) -> None:
        if self.files is None:
            self.files = ModelFileWatch(self.folder)

    def summary(self) -> str:
        return f"{self.label} ({self.engine.profile}, {self.provider})"


@dataclasses.dataclass
class LoadStatus:
    state: str = "idle"            # idle | loading | ready | error
    message: str = ""
    stage: str = ""
    fraction: Optional[float] = None
    notices: list[str] = dataclasses.field(default_factory=list)
    request: str = ""
    started: float = 0.0


def licence_text(folder: pathlib.Path) -> str:
    """What the folder says about the weights' licence (a LICENSE file or a model card's ``license:``)."""
    for place in (folder, folder.parent):
        for name in ("LICENSE", "LICENSE.txt", "LICENSE.md", "LICENCE"):
            path = place / name
            if path.is_file():
                first = path.read_text(encoding="utf-8", errors="replace").strip().splitlines()
                return f"{first[0].strip() if first else 'see the file'} ({path})"
        card = place / "README.md"
        if card.is_file():
            text = card.read_text(encoding="utf-8", errors="replace")
            match = re.search(r"^---\s*$(.*?)^---\s*$", text, re.S | re.M)
            if match:
                lic = re.search(r"^license:\s*(\S+)", match.group(1), re.M)
                if lic:
                    return f"{lic.group(1)} (from the model card {card})"
    return (f"not stated in the model folder; the weights' licence is that of the OmniVoice model card "
            f"({MODEL_CARD}) and the Higgs audio codec's ({CODEC_CARD}); read them before using the audio.")


def available_providers() -> list[str]:
    import onnxruntime as ort

    names = ort.get_available_providers()
    return ["cpu"] + (["cuda"] if "CUDAExecutionProvider" in names else [])


class ModelManager:
    """Loaded models, the active one, and the background loader's status."""

    def __init__(self, provider: str = "cpu", threads: Optional[int] = None, cache_dir=None,
                 offline: Optional[bool] = None, max_loaded: int = 3, limits: Optional[Limits] = None,
                 locked: bool = False, backbone: str = "auto", backbone_weights=None):
        self.limits = limits or Limits()
        self.backbone = backbone  # OmniVoiceEngine's backbone= (backbone_choice.BACKBONE_MODES)
        self.backbone_weights = backbone_weights  # OmniVoiceEngine's backbone_weights= (the original checkpoint)
        self.locked = locked  # shared mode: only the operator (start-up flags) chooses models
        self.provider = provider
        self.threads = threads
        self.cache_dir = cache_dir
        self.offline = offline
        self.max_loaded = max_loaded
        self.models: "OrderedDict[str, LoadedModel]" = OrderedDict()
        self.active: Optional[str] = None
        self.status = LoadStatus()
        self._lock = threading.RLock()
        self._thread: Optional[threading.Thread] = None
        self._on_active: list[Callable[[LoadedModel], None]] = []

    # --- subscribers --------------------------------------------------------------------

    def on_active(self, callback: Callable[[LoadedModel], None]) -> Callable[[], None]:
        """Call ``callback(loaded)`` each time a model becomes the active one: a load finished (``load``,
        ``start_load``), ``add``, ``set_active`` to another model, or an ``unload`` that made another one active.
        It is called on the thread that made the change, after the manager's lock is released, so it must
        return at once (hand its work to a thread or event loop of its own); what it raises is logged, never
        raised to the loader.  Returns the function that ends the subscription."""
        with self._lock:
            self._on_active.append(callback)

        def unsubscribe() -> None:
            with self._lock:
                if callback in self._on_active:
                    self._on_active.remove(callback)
        return unsubscribe

    def _announce_active(self, loaded: Optional[LoadedModel]) -> None:
        if loaded is None:
            return
        with self._lock:
            callbacks = list(self._on_active)
        for callback in callbacks:
            try:
                callback(loaded)
            except Exception:  # noqa: BLE001 - a subscriber's failure never fails a load
                log.warning("a subscriber to the active model (%r) failed", callback, exc_info=True)

    # --- loading ----------------------------------------------------------------------

    @property
    def loading(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start_load(self, spec: Optional[str], precision: Optional[str] = None, provider: Optional[str] = None,
                   offline: Optional[bool] = None, build: bool = False, force_download: bool = False,
                   by_operator: bool = False, backbone_weights: Optional[str] = None) -> bool:
        """Resolve and load in a thread; False when a load is already running.

        ``backbone_weights``: the original checkpoint (a folder, its ``model.safetensors`` or a Hub repo) the
        backbone is built from (the Model tab's "Build from the original weights"; ``load``).
        When ``locked`` (shared mode) only the operator's load (``by_operator``, the start-up flags) is allowed."""
        if not by_operator:
            refuse_model_changes(self.locked)
        with self._lock:
            if self.loading:
                return False
            self._set_status(state="loading", message="starting", stage="resolve", fraction=None, notices=[],
                             request=self._describe_request(spec, precision, build, backbone_weights),
                             started=time.monotonic())
            self._thread = threading.Thread(target=self._load_quietly, name="omnivoice-model-loader", daemon=True,
                                            args=(spec, precision, provider, offline, build, force_download,
                                                  backbone_weights))
            self._thread.start()
            return True

    def wait(self, timeout: Optional[float] = None) -> None:
        thread = self._thread
        if thread is not None:
            thread.join(timeout)

    def _load_quietly(self, *args) -> None:
        try:
            self.load(*args)
        except Exception:  # load() has recorded the message in the status; the console says it too
            log.warning("the model was not loaded: %s", self.status.message)
            log.debug("model load failed", exc_info=True)

    def load(self, spec: Optional[str], precision: Optional[str] = None, provider: Optional[str] = None,
             offline: Optional[bool] = None, build: bool = False, force_download: bool = False,
             backbone_weights: Optional[str] = None) -> LoadedModel:
        """Resolve ``spec`` (``hub.resolve_model``), open the engine, make it active.  Raises on failure.

        ``precision`` None (or "auto"): a model folder's own precision, else the Hub default.
        ``backbone_weights``: the original checkpoint to build the backbone's choices from (found or
        downloaded by ``hub.weights.backbone_weights``, with its progress and offline rules, before the
        engine builds them); else the manager's own (``--backbone-weights``) or the resolver's (``int8``)."""
        from .. import hub

        provider = provider or self.provider
        precision = None if precision in (None, "", "auto") else precision
        request = self._describe_request(spec, precision, build, backbone_weights)
        with self._lock:
            if self.status.state != "loading":
                self._set_status(state="loading", message="starting", stage="resolve", fraction=None, notices=[],
                                 request=request, started=time.monotonic())
        try:
            if provider not in available_providers():
                raise ModelNotAvailable(
                    f"The {provider} provider is not available in this onnxruntime "
                    f"({', '.join(available_providers())} are); choose cpu, or install onnxruntime-gpu.")
            started = time.perf_counter()
            resolved = hub.resolve_model(spec, precision=precision, cache_dir=self.cache_dir,
                                         offline=self.offline if offline is None else offline, build=build,
                                         progress=self._on_progress, force_download=force_download)
            folder = resolved.path
            weights = self.backbone_weights or resolved.backbone_weights
            notices = list(resolved.notices)
            unused = backbone_weights and weights_unused_reason(folder, self.backbone)
            if unused:   # said, not downloaded for nothing ("Build from the original weights" on an fp32 folder)
                notices.append(f"The original weights ({backbone_weights}) were not used: {unused}.")
            elif backbone_weights:
                from ..hub.weights import backbone_weights as find_weights

                self._set_status(stage="weights", message=f"the original weights: {backbone_weights}", fraction=None)
                weights = find_weights(backbone_weights, offline=self.offline if offline is None else offline,
                                       progress=self._on_progress, cache_dir=self.cache_dir)
            self._set_status(stage="load", message=f"opening the ONNX sessions in {folder} (the first time on this "
                             "machine, the backbone choices that pass the fidelity gate are built"
                             + (f" from the original weights ({getattr(weights, 'label', weights)})" if weights else "")
                             + " and timed: a few minutes at full size)", fraction=None)
            # the resolver has just checked every file: the engine checks sizes only
            engine = OmniVoiceEngine(folder, provider=provider, threads=self.threads, verify="size", limits=self.limits,
                                     backbone=self.backbone, backbone_weights=weights)
            precision = resolved.precision or precision or engine.profile
            loaded = LoadedModel(
                label=self._label(precision, provider, folder), engine=engine, folder=folder,
                source=resolved.source or str(spec or hub.DEFAULT_REPO), precision=precision,
                provider=provider, repaired=resolved.repaired, notices=notices,
                licence=licence_text(folder), load_seconds=time.perf_counter() - started)
        except Exception as exc:
            expected = isinstance(exc, (OmniVoiceError, OSError))  # named by the resolver or the engine
            message = str(exc) if expected else f"{type(exc).__name__}: {exc}"
            if not expected:
                log.exception("loading %s failed", request)
            self._set_status(state="error", message=message, stage="error", fraction=None)
            raise
        with self._lock:
            self.models[loaded.label] = loaded
            self.models.move_to_end(loaded.label)
            while len(self.models) > self.max_loaded:
                oldest = next(iter(self.models))
                if oldest == loaded.label:
                    break
                self.models.pop(oldest)
            self.active = loaded.label
            self._set_status(state="ready", message=f"ready in {loaded.load_seconds:.1f} s", stage="ready",
                             fraction=1.0, notices=notices)
        self._announce_active(loaded)
        return loaded

    def add(self, engine: OmniVoiceEngine, label: Optional[str] = None, precision: str = "") -> LoadedModel:
        """Register an engine opened elsewhere (tests, embedding the UI in another program)."""
        loaded = LoadedModel(label=label or self._label(precision or engine.profile, engine.provider, engine.folder),
                             engine=engine, folder=engine.folder, source=str(engine.folder),
                             precision=precision or engine.profile, provider=engine.provider, repaired=False,
                             notices=[], licence=licence_text(engine.folder), load_seconds=0.0)
        with self._lock:
            self.models[loaded.label] = loaded
            self.active = loaded.label
            self._set_status(state="ready", message="ready", stage="ready", fraction=1.0)
        self._announce_active(loaded)
        return loaded

    def _label(self, precision: str, provider: str, folder) -> str:
        base = f"{precision} · {provider} · {pathlib.Path(folder).name}"
        label, n = base, 2
        while label in self.models and self.models[label].folder != pathlib.Path(folder):
            label, n = f"{base} ({n})", n + 1
        return label

    @staticmethod
    def _describe_request(spec, precision, build, backbone_weights=None) -> str:
        from .. import hub

        what = str(spec) if spec else (hub.DEFAULT_CHECKPOINT_REPO if build else hub.DEFAULT_REPO)
        extra = (", build" if build else "") + (f", backbone from {backbone_weights}" if backbone_weights else "")
        return f"{what} ({precision or 'auto precision'}{extra})"

    def _on_progress(self, event) -> None:
        fields = dict(stage=event.stage, message=event.message, fraction=event.fraction)
        with self._lock:
            if event.notice and event.notice not in self.status.notices:
                self.status.notices.append(event.notice)
            self._set_status(**fields)

    def _set_status(self, **fields) -> None:
        with self._lock:
            for key, value in fields.items():
                setattr(self.status, key, value)

    # --- use --------------------------------------------------------------------------

    def get(self, label: Optional[str] = None) -> LoadedModel:
        """The active model (or ``label``); ``ModelNotReady`` with what to do when there is none."""
        with self._lock:
            if label:
                if label not in self.models:
                    loaded = ", ".join(repr(name) for name in self.models) or "none"
                    raise ModelNotReady(f"The model {label!r} is not loaded; the loaded models are: {loaded} "
                                        "(load others in the Model tab).")
                return self._checked(self.models[label])
            if self.active and self.active in self.models:
                return self._checked(self.models[self.active])
            status = self.status
        if status.state == "loading":
            fraction = f" {status.fraction * 100:.0f}%" if status.fraction is not None else ""
            raise ModelNotReady(f"The model is still loading ({status.stage}{fraction}: {status.message}). "
                                "Try again when the model bar says it is ready.")
        if status.state == "error":
            raise ModelNotReady(f"No model is loaded: {status.message}")
        raise ModelNotReady("No model is loaded. Open the Model tab, choose a model folder or Hub repo and "
                            "press Load (or start the app with --model DIR).")

    @staticmethod
    def _checked(loaded: LoadedModel) -> LoadedModel:
        loaded.files.check()  # a few stat calls: a model file changed in place is said in the log
        return loaded

    def set_active(self, label: str) -> LoadedModel:
        refuse_model_changes(self.locked)
        with self._lock:
            if label not in self.models:
                raise ModelNotReady(f"The model {label!r} is not loaded.")
            changed, self.active = self.active != label, label
            loaded = self.models[label]
        if changed:
            self._announce_active(loaded)
        return loaded

    def unload(self, label: str) -> None:
        refuse_model_changes(self.locked)
        with self._lock:
            gone = self.models.pop(label, None)
            watch = getattr(getattr(gone, "engine", None), "backbone_watch", None)
            if watch is not None:  # a probe waiting to be made again is not made for a model that is gone
                watch.close()
            now_active = None
            if self.active == label:
                self.active = next(reversed(self.models), None) if self.models else None
                if self.active is None:
                    self.status = LoadStatus(message="no model loaded")
                else:
                    now_active = self.models[self.active]
        self._announce_active(now_active)

    def labels(self) -> list[str]:
        with self._lock:
            return list(self.models)
