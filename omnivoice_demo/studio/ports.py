"""Before a server starts: is its port free?  (Otherwise the web server's own error is a traceback.)"""

from __future__ import annotations

import socket
import sys


def port_in_use(host: str, port: int) -> bool:
    """Whether ``host:port`` cannot be bound now (another program listens there)."""
    family = socket.AF_INET6 if ":" in (host or "") else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host or "0.0.0.0", port))
        except OSError:
            return True
    return False


def exit_if_port_in_use(host: str, port: int) -> None:
    """One ``error:`` line and status 2 when the port is taken."""
    if port_in_use(host, port):
        print(f"error: port {port} on {host} is in use (is the app already running?); stop that program, or "
              "choose another port with --port N", file=sys.stderr)
        raise SystemExit(2)
