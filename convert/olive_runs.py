"""Olive workflows run for our builds, and their graphs saved in the published layout: shared by the codec's
export (``codec.py``) and the model's (``pipeline.py``).

``run_olive_workflow`` runs one workflow given as a dict, quietly (no run-history lines) and sending nothing
(``olive_telemetry_off``); ``save_graph`` writes a graph with its weights inline below
``EXTERNAL_DATA_THRESHOLD`` bytes, else in exactly one ``<graph>.onnx.data`` file.
"""

from __future__ import annotations

import os
import pathlib
import warnings

EXTERNAL_DATA_THRESHOLD = 512 * 1024 * 1024


class _QuietRunHistory:
    """Logging filter: drop Olive's INFO run-history lines (printed whatever the configured level)."""

    def filter(self, record) -> bool:
        return record.levelno > 20 or "run history" not in record.getMessage()


def olive_telemetry_off() -> None:
    """Keep Olive from sending anything: our builds run on users' machines and offline ones.

    Olive 0.13 logs a heartbeat (a device id, the OS) *before* it reads ``OLIVE_DISABLE_TELEMETRY``;
    only CI variables skip it, and on a machine with no network its export thread then prints a
    traceback into the build's output.  Its ``Telemetry`` is a singleton whose every method does
    nothing while its logger is None, so we make that instance first, already initialised with no
    logger.  A user who wants Olive's telemetry sets ``OLIVE_DISABLE_TELEMETRY=0``."""
    os.environ.setdefault("OLIVE_DISABLE_TELEMETRY", "1")
    if os.environ["OLIVE_DISABLE_TELEMETRY"] != "1":
        return
    from olive.telemetry.telemetry import Telemetry

    instance = Telemetry.__new__(Telemetry)
    if not instance._initialized:
        instance._logger = None
        instance._cache_handler = None
        instance._initialized = True
    else:  # made earlier in this process: stop what it would still send
        instance.disable_telemetry()


def run_olive_workflow(config: dict, work: pathlib.Path) -> pathlib.Path:
    """Run one Olive workflow given as a dict (outputs and cache under ``work``); return the produced
    model.onnx.  Shared by convert/pipeline.py."""
    olive_telemetry_off()
    import logging

    from olive.workflows import run

    # Olive forces INFO to print its run history; keep the export's progress readable
    engine_logger = logging.getLogger("olive.engine.engine")
    if not any(isinstance(f, _QuietRunHistory) for f in engine_logger.filters):
        engine_logger.addFilter(_QuietRunHistory())

    out_dir = work / "out"
    config = {
        **config,
        "cache_dir": str(work / "cache"),
        "output_dir": str(out_dir),
        "log_severity_level": 3,
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run(config)
    model = out_dir / "model.onnx"
    if not model.is_file():
        raise RuntimeError(f"Olive produced no model in {out_dir}: {sorted(p.name for p in out_dir.glob('*'))}")
    return model


def save_graph(source: pathlib.Path, target: pathlib.Path, threshold: int | None = None) -> list[pathlib.Path]:
    """Copy ``source`` to ``target``: weights inline below ``threshold`` bytes (default
    ``EXTERNAL_DATA_THRESHOLD``), else one ``<name>.data`` file.  Shared by convert/pipeline.py."""
    import onnx

    model = onnx.load(str(source), load_external_data=True)
    for stale in (target, target.with_name(target.name + ".data")):
        stale.unlink(missing_ok=True)
    size = sum(init.ByteSize() for init in model.graph.initializer)
    if size < (EXTERNAL_DATA_THRESHOLD if threshold is None else threshold):
        onnx.save_model(model, str(target))
        return [target]
    data_name = target.name + ".data"
    onnx.save_model(model, str(target), save_as_external_data=True, all_tensors_to_one_file=True,
                    location=data_name, size_threshold=1024)
    return [target, target.with_name(data_name)]
