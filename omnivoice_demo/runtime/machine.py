"""What this machine and process are: the CPU's name and the process's peak resident memory.

The backbone choice keys what it remembers on the CPU; the benchmarks report the peak memory."""

from __future__ import annotations

import pathlib
import platform
import sys
from typing import Optional


def cpu_name() -> str:
    """The CPU's model name (Linux ``/proc/cpuinfo``), else what ``platform`` says."""
    try:
        for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def reset_peak_rss() -> bool:
    """Start a new peak for ``peak_rss_mb`` (Linux: reset VmHWM); False where a peak cannot be reset."""
    try:
        with open("/proc/self/clear_refs", "w") as handle:
            handle.write("5")
        return True
    except OSError:
        return False


def peak_rss_mb() -> Optional[float]:
    """Peak resident memory (RSS) of this process in MiB: since the last ``reset_peak_rss`` on Linux (VmHWM),
    else since the process started (``ru_maxrss``: KiB on Linux, bytes on macOS); None where neither exists.

    The one memory measure of the benchmarks: the app's tab resets it per model; ``python -m benchmarks``
    runs each system in a fresh process, so there it is that system's peak."""
    try:
        for line in pathlib.Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    try:
        import resource

        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak / (1024.0 * 1024.0) if sys.platform == "darwin" else peak / 1024.0
    except (ImportError, OSError):
        return None

