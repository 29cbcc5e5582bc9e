"""``auto``'s outcome remembered per machine: ``backbone-choice.json`` in our cache, keyed by what the outcome
depends on (``choice_key``), so the probe runs once per machine, graph and runtime."""

from __future__ import annotations

import json
import os
import pathlib
import time
from typing import Optional, Sequence

from .fidelity import published_table
from .precision import BUILD_VERSION, PRECISIONS

#: what a remembered probe measured: an entry of another kind (the single forward of earlier versions,
#: which load could fool) is probed again
PROBE_KIND = "step"


def choice_key(path: pathlib.Path, providers: Sequence[str], threads: int | None, weights=None) -> str:
    """What ``auto``'s outcome depends on: the CPU, onnxruntime, the provider, threads, the session settings
    (spinning or not changes the timings), the graph, the builder's version and the fidelity table (a new
    table can admit other choices)."""
    import hashlib

    import onnxruntime as ort

    from ..runtime.sessions import SESSION_CONFIG
    from ..runtime.machine import cpu_name

    cpu, flags = cpu_name(), ""
    try:
        for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                flags = hashlib.sha256(line.encode()).hexdigest()[:12]
                break
    except OSError:
        pass
    sizes = "+".join(str(p.stat().st_size) for p in sorted(path.parent.glob(path.name + "*")))
    gate = hashlib.sha256(json.dumps(published_table(), sort_keys=True).encode()).hexdigest()[:8]
    session = ",".join(f"{key}={value}" for key, value in sorted(SESSION_CONFIG.items()))
    return (f"{cpu} flags {flags} | onnxruntime {ort.__version__} | {providers[0]} | "
            f"threads {threads or os.cpu_count()} | {session} | {path.name} {sizes} | choices v{BUILD_VERSION} "
            f"gate {gate}" + (f" | weights {weights.digest}" if weights is not None else ""))


class ChoiceCache:
    """``backbone-choice.json`` in our cache folder: probe outcomes by ``choice_key``.

    A file that cannot be read or written only costs a new probe.
    """

    def __init__(self, folder: pathlib.Path | None = None):
        from ..storage.cache import default_cache_dir

        self.path = pathlib.Path(folder or default_cache_dir()) / "backbone-choice.json"

    def _read(self) -> dict:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError, UnicodeDecodeError):
            return {}
        return data if isinstance(data, dict) else {}

    def get(self, key: str) -> dict | None:
        """The remembered outcome for ``key``, or None: none, unreadable, or measured by another kind of probe
        (earlier versions timed one forward, which load could fool: issue 42)."""
        entry = self._read().get(key)
        valid = isinstance(entry, dict) and entry.get("choice") in ("int4",) + PRECISIONS and isinstance(
            entry.get("probe_s"), dict) and isinstance(entry.get("probe"), dict) and (
            entry["probe"].get("kind") == PROBE_KIND and entry["probe"].get("contention") is None)
        return entry if valid else None

    def put(self, key: str, choice: str, probe_s: dict, probe: dict, agreement: Optional[dict] = None) -> None:
        from ..storage.atomic import atomic_write_json

        data = self._read()
        data[key] = {"choice": choice, "probe_s": probe_s, "probe": probe, "agreement": agreement,
                     "measured": probe.get("measured") or time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_json(self.path, data)
        except OSError:
            pass
