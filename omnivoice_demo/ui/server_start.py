"""Gradio's server start without its 5 s window.

``gradio.http_server.Server.run_in_thread`` starts uvicorn in a thread and raises ``ServerFailedToStartError``
when the server has not started 5 s later; ``start_server`` then takes the port for a taken one and, with the
port we always give it, the launch ends in "Cannot find empty port".  On a busy machine (a shared Space, a
test run beside a build) the start (the lifespan, the bind) can take longer than that, and the app died
at launch.  Gradio has no setting for the window, so ``patient_server_start`` puts this subclass in its
place: it waits for the start as long as the server thread lives (a port really taken ends that thread
at once: uvicorn exits it after its bind error, so that case still fails fast), up to ``START_SECONDS``.
The rest is Gradio's own code path (its reloader on Spaces included).
"""

from __future__ import annotations

import threading
import time
from typing import Optional

from gradio import http_server

from ..settings.network import ForwardedTrust

#: the longest a server may take to start before the launch fails
START_SECONDS = 180.0


class PatientServer(http_server.Server):
    """Gradio's server, waiting for its start while its thread lives instead of for 5 s, and believing forwarded
    headers only from the proxies of ``forwarded`` (``settings.network``; none by default: uvicorn's own default
    believes 127.0.0.1)."""

    forwarded = ForwardedTrust()

    def __init__(self, config, *args, **kwargs):
        for name, value in self.forwarded.uvicorn_options().items():
            setattr(config, name, value)
        super().__init__(config, *args, **kwargs)

    def run_in_thread(self):
        self.thread = threading.Thread(target=self.run, daemon=True)
        if self.reloader:
            self.watch_thread = threading.Thread(target=self.watch, daemon=True)
            self.watch_thread.start()
        self.thread.start()
        deadline = time.monotonic() + START_SECONDS
        while not self.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise http_server.ServerFailedToStartError(
                    "Server failed to start. Please check that the port is available.")
            time.sleep(0.005)


def patient_server_start(forwarded: Optional[ForwardedTrust] = None) -> None:
    """Make Gradio's launch wait for its server as long as the server thread lives (see the module), believing
    forwarded headers only from ``forwarded``'s proxies."""
    PatientServer.forwarded = forwarded or ForwardedTrust()
    http_server.Server = PatientServer
