"""Whom the server believes about a client's address: ``ForwardedTrust`` and ``--forwarded-allow-ips``.

A request's ``X-Forwarded-For`` is anyone's to write.  Uvicorn believes it by default from 127.0.0.1 (or the
addresses in its ``FORWARDED_ALLOW_IPS``) and then puts the header's address in the request's ``client``; so a
client on the same machine, or any client behind a local reverse proxy that passes the header on, could name a
new address with every request, and the wrong-key delay, keyed on that address, never grew (issue 49, item 9).

Here the forwarded headers are believed only from the proxies the operator names (``--forwarded-allow-ips``,
or ``OMNIVOICE_FORWARDED_ALLOW_IPS``: addresses or networks, comma-separated), none by default.  With none, a
request's client is the peer of its connection, which cannot be forged; from a named proxy, uvicorn's own
``ProxyHeadersMiddleware`` takes the nearest address in ``X-Forwarded-For`` that is not one of them (the one the
proxy saw).  Both servers (the app's, ``omnivoice serve``) run uvicorn with ``uvicorn_options()``.
"""

from __future__ import annotations

import argparse
import dataclasses
import ipaddress
import os

ENV = "OMNIVOICE_FORWARDED_ALLOW_IPS"


@dataclasses.dataclass(frozen=True)
class ForwardedTrust:
    """The proxies (addresses or networks, as written) whose ``X-Forwarded-For`` and ``-Proto`` are believed."""

    proxies: tuple[str, ...] = ()

    @classmethod
    def parse(cls, text: str | None) -> "ForwardedTrust":
        """``"10.0.0.1, 10.1.0.0/16"`` -> the trust of those; empty or None: none.  A wrong entry is a
        ``ValueError`` naming it."""
        entries = [entry.strip() for entry in (text or "").split(",") if entry.strip()]
        for entry in entries:
            try:
                ipaddress.ip_network(entry, strict=False)
            except ValueError:
                raise ValueError(f"--forwarded-allow-ips: {entry[:60]!r} is not an IP address or network "
                                 "(e.g. 10.0.0.1 or 10.0.0.0/8)") from None
        return cls(tuple(entries))

    def uvicorn_options(self) -> dict:
        """``uvicorn.Config``'s proxy settings: the headers read only from ``proxies`` (not at all without any)."""
        return {"proxy_headers": bool(self.proxies), "forwarded_allow_ips": list(self.proxies)}


def add_forwarded_argument(parser) -> None:
    parser.add_argument("--forwarded-allow-ips", default=os.environ.get(ENV, ""), metavar="ADDRESSES",
                        type=_checked,
                        help="reverse proxies whose X-Forwarded-For is believed (addresses or networks, "
                             f"comma-separated; default ${ENV}, else none: a client is the peer of its connection)")


def _checked(text: str) -> str:
    try:
        ForwardedTrust.parse(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def forwarded_from_arguments(args) -> ForwardedTrust:
    return ForwardedTrust.parse(getattr(args, "forwarded_allow_ips", None))
