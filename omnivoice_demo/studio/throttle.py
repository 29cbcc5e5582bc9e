"""Wrong keys slowed down per client: one ``LoginThrottle`` for the page's login and the HTTP API's Bearer key.

The app's login (``ui.key_gate``) and ``/v1`` (``api.routes``) share one instance, so a client that guesses the
key on one door waits on the other too (issue 43, item 7).
"""

from __future__ import annotations

import collections
import time


class LoginThrottle:
    """Each client's wrong passwords in a row, and the wait before its next login attempt.

    Every attempt counts as wrong until it succeeds (so attempts sent side by side wait in turn), the first
    ``free`` cost nothing, then the wait doubles from ``base`` seconds up to ``cap``; a success clears the
    count, and so do ``forget_after`` seconds without an attempt.  At most ``clients`` clients are kept
    (the longest quiet is forgotten first)."""

    def __init__(self, free: int = 3, base: float = 0.5, cap: float = 8.0, clients: int = 4096,
                 forget_after: float = 900.0, clock=time.monotonic):
        self.free, self.base, self.cap, self.clients, self.forget_after = free, base, cap, clients, forget_after
        self.clock = clock
        self._failures: collections.OrderedDict[str, tuple[int, float]] = collections.OrderedDict()

    def wait_for(self, failures: int) -> float:
        return 0.0 if failures < self.free else min(self.cap, self.base * 2 ** (failures - self.free))

    def failures(self, client: str) -> int:
        count, last = self._failures.get(client, (0, 0.0))
        return count if self.clock() - last < self.forget_after else 0

    def attempt(self, client: str) -> float:
        """Count an attempt of ``client`` (as wrong until ``succeeded``); the seconds it waits first."""
        count = self.failures(client)
        self._failures[client] = (count + 1, self.clock())
        self._failures.move_to_end(client)
        while len(self._failures) > self.clients:
            self._failures.popitem(last=False)
        return self.wait_for(count)

    def succeeded(self, client: str) -> None:
        self._failures.pop(client, None)

    def before_check(self, client: str) -> float:
        """The seconds ``client`` waits before its key is checked (its wrong keys so far; nothing counted)."""
        return self.wait_for(self.failures(client))

    def failed(self, client: str) -> float:
        """Count a wrong key of ``client``; the seconds its next attempt will wait (for ``Retry-After``)."""
        self.attempt(client)
        return self.wait_for(self.failures(client))
