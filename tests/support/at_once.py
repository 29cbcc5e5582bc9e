"""Run a call on several threads at the same moment (two starts of the app, as the tests stand them in)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Callable


def at_once(call: Callable, count: int = 2) -> list:
    """``call()`` on ``count`` threads started together; their results in start order (the first error raised)."""
    with ThreadPoolExecutor(count) as pool:
        futures = [pool.submit(call) for _ in range(count)]
        return [future.result() for future in futures]
