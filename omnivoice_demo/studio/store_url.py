"""A voice store's address as it may be shown: without its password, whatever form libpq was given it in.

``--voice-store`` (or ``$OMNIVOICE_VOICE_STORE``) may name a PostgreSQL database, and libpq takes a password in
more than one place; every message, log line, usage error and HTTP body that names the store shows it through
``redact_store_url`` (issue 57), and text that may repeat a command line or a database's error goes through
``redact_text``.  The forms covered:

* the URL's userinfo, ``postgresql://USER:PASSWORD@HOST/DB``, also with a raw ``@``, ``:``, ``/`` or ``?`` in
  the password (everything up to the last ``@`` is taken as userinfo) and percent-encoded (``%40``);
* a ``password=`` (or ``sslpassword=``) query parameter, in any position and any case of its key (libpq itself
  knows only the lower case; the others are hidden all the same);
* a key=value connection string (``host=db password='a b' dbname=voices``), read by libpq's own parser
  (``psycopg.conninfo``).

Not in the address, so never shown by it: a password in a service file (``service=NAME`` names the file's
section, not the password), in ``PGPASSWORD`` or in ``~/.pgpass`` (``passfile=`` is a path) -- the ways to keep
the password out of the command line altogether.

A string that cannot be read (or whose shown form would still hold a password: a guard after every redaction)
is withheld whole after its scheme: ``postgresql://***``.  ``check_store_url`` refuses, before any connection,
an address libpq would read otherwise than it is written (a raw ``@`` or ``/`` in the password: libpq takes the
text after the first ``@`` as the host, and a piece of the password then shows in its "cannot resolve host"
errors).
"""

from __future__ import annotations

import argparse
import re
import sys
import urllib.parse
from typing import Iterable, Optional

from ..errors import InvalidInput

__all__ = ["DATABASE_SCHEMES", "HIDDEN", "RedactingParser", "check_store_url", "is_database_url", "looks_like_conninfo",
           "redact_store_url", "redact_text", "store_url_secrets"]

#: what a database store's address starts with (libpq's two URI schemes)
DATABASE_SCHEMES = ("postgresql://", "postgres://")
#: what stands for a hidden value
HIDDEN = "***"
#: libpq's connection parameters that hold a secret (``sslpassword``: the client key's pass phrase)
SECRET_KEYS = frozenset({"password", "sslpassword"})
#: libpq's parameters a key=value connection string usually starts with (to tell one from a folder's name)
_CONNINFO_KEYS = ("host", "hostaddr", "port", "dbname", "user", "password", "passfile", "service", "sslmode",
                  "sslpassword", "connect_timeout", "options", "application_name", "target_session_attrs")
_CONNINFO_START = re.compile(r"\s*(?:%s)\s*=" % "|".join(_CONNINFO_KEYS), re.IGNORECASE)
#: a database URL inside other text (a usage error, a log line): up to the next blank
_URL_IN_TEXT = re.compile(r"postgres(?:ql)?://\S*", re.IGNORECASE)
#: a password parameter inside other text: ``password=VALUE`` (quoted or up to a blank, ``&`` or ``,``)
_PASSWORD_IN_TEXT = re.compile(r"\b((?:pg|ssl)?password\s*=\s*)('(?:[^'\\]|\\.)*'?|[^\s&,]*)", re.IGNORECASE)


def is_database_url(text: Optional[str]) -> bool:
    """Whether ``text`` names a database by a libpq URI (``postgresql://`` or ``postgres://``)."""
    return bool(text) and str(text).lower().startswith(DATABASE_SCHEMES)


def looks_like_conninfo(text: Optional[str]) -> bool:
    """Whether ``text`` is a libpq key=value connection string (``host=... dbname=...``) rather than a folder."""
    return bool(text) and "://" not in str(text) and _CONNINFO_START.match(str(text)) is not None


def redact_store_url(url: Optional[str]) -> str:
    """``url`` as it may be shown: every password hidden (see the module docstring); a folder as it is."""
    if not url:
        return url or ""
    url = str(url)
    if is_database_url(url):
        shown = _redacted_uri(url)
    elif looks_like_conninfo(url):
        shown = _redacted_conninfo(url)
    else:
        return url
    if shown is None or _still_shows(shown, url):
        return _withheld(url)
    return shown


def redact_text(text: str, urls: Iterable[Optional[str]] = ()) -> str:
    """``text`` with every store address in it redacted: each of ``urls`` (the command line's arguments, the
    configured store: they may hold blanks, which no pattern can find the end of) and its passwords, then any
    ``postgresql://`` address and any ``password=`` parameter left."""
    for url in urls:
        if not url:
            continue
        url = str(url)
        start = url.lower().find("postgres")
        whole = url[start:] if start > 0 and is_database_url(url[start:]) else url   # --voice-store=URL
        if whole in text:
            text = text.replace(whole, redact_store_url(whole))
        for secret in sorted(store_url_secrets(whole), key=len, reverse=True):
            text = text.replace(secret, HIDDEN)
    text = _URL_IN_TEXT.sub(lambda found: redact_store_url(found.group()), text)
    return _PASSWORD_IN_TEXT.sub(lambda found: found.group(1) + HIDDEN, text)


def store_url_secrets(url: Optional[str]) -> set[str]:
    """Every password ``url`` holds, as written and as decoded, by this module's reading and by libpq's (they
    differ on a malformed address); empty for a folder."""
    if not url or not (is_database_url(url) or looks_like_conninfo(url) or "password" in str(url).lower()):
        return set()
    url = str(url)
    found: set[str] = set()
    if is_database_url(url):
        userinfo, at, _ = url.partition("://")[2].rpartition("@")
        if at and ":" in userinfo:
            found.add(userinfo.partition(":")[2])
    for match in _PASSWORD_IN_TEXT.finditer(url):
        value = match.group(2)
        found.add(value)
        if value.startswith("'"):
            found.add(re.sub(r"\\(.)", r"\1", value.strip("'")))
    parsed = _libpq_params(url)
    found.update(value for key, value in (parsed or {}).items() if key.lower() in SECRET_KEYS and value)
    for value in list(found):
        found.add(urllib.parse.unquote(value))
    return {value for value in found if value and value != HIDDEN}


def check_store_url(url: str) -> None:
    """``InvalidInput`` (naming the address redacted, never its password) when libpq cannot read ``url`` or would
    read it otherwise than it is written; nothing for a well-formed address."""
    shown = redact_store_url(url)
    if looks_like_conninfo(url):
        raise InvalidInput(f"--voice-store {shown} is a key=value connection string; give the database as a URL: "
                           "postgresql://USER@HOST:PORT/DATABASE (the password percent-encoded in it, or better "
                           "in PGPASSWORD or ~/.pgpass).", param="voice_store")
    if not is_database_url(url):
        return
    encode = ("percent-encode every character of the password that a URL reserves (@ as %40, / as %2F, ? as "
              "%3F, # as %23, % as %25, a blank as %20), or leave the password out of the URL and give it in "
              "PGPASSWORD or ~/.pgpass")
    try:
        from psycopg import ProgrammingError
        from psycopg.conninfo import conninfo_to_dict
    except ImportError:   # the store extra is missing: the store says so when it is opened
        return
    try:
        parsed = conninfo_to_dict(url)
    except ProgrammingError as exc:
        # libpq's own words repeat the part it could not read, which may be the password: only without one
        reason = "" if store_url_secrets(url) else f" ({' '.join(str(exc).split())})"
        raise InvalidInput(f"--voice-store {shown} is not a database address libpq can read{reason}: write it as "
                           f"postgresql://USER:PASSWORD@HOST:PORT/DATABASE and {encode}.",
                           param="voice_store") from None
    userinfo, at, _ = url.partition("://")[2].rpartition("@")
    meant = urllib.parse.unquote(userinfo.partition(":")[2]) if at and ":" in userinfo else None
    hosts = str(parsed.get("host") or "")
    if (meant is not None and parsed.get("password") != meant) or "@" in hosts:
        raise InvalidInput(f"--voice-store {shown}: libpq would read the address otherwise than it is written "
                           f"(its password holds a character a URL reserves): {encode}.", param="voice_store")


class RedactingParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose usage errors never repeat a password: argparse echoes what it did not take
    (``unrecognized arguments: --voice-store postgresql://u:secret@h/db`` of a command without that flag), so
    the message is redacted against the arguments it was given (``redact_text``) before it is said."""

    def parse_known_args(self, args=None, namespace=None):  # type: ignore[override]
        self._arguments_given = [str(arg) for arg in (sys.argv[1:] if args is None else args)]
        return super().parse_known_args(args, namespace)

    def redacted(self, message: str) -> str:
        return redact_text(message, getattr(self, "_arguments_given", sys.argv[1:]))

    def error(self, message: str):  # type: ignore[override]
        super().error(self.redacted(message))


def _redacted_uri(url: str) -> Optional[str]:
    scheme, _, rest = url.partition("://")
    userinfo, at, location = rest.rpartition("@")
    shown_user = ""
    if at:
        user, colon, _ = userinfo.partition(":")
        shown_user = f"{user}:{HIDDEN}@" if colon else f"{user}@"
    else:
        location = rest
    head, question, query = location.partition("?")
    if question:
        query = "&".join(_redacted_parameter(part) for part in query.split("&"))
    return f"{scheme}://{shown_user}{head}{question}{query}"


def _redacted_parameter(part: str) -> str:
    key, equals, _ = part.partition("=")
    return f"{key}={HIDDEN}" if equals and urllib.parse.unquote(key).strip().lower() in SECRET_KEYS else part


def _redacted_conninfo(text: str) -> Optional[str]:
    """A key=value string libpq can read with its password values hidden (in the order written); None when libpq
    cannot read it (then it is withheld whole: where its values end is not known)."""
    if _libpq_params(text) is None:
        return None
    return _PASSWORD_IN_TEXT.sub(lambda found: found.group(1) + HIDDEN, text)


def _libpq_params(text: str) -> Optional[dict]:
    """libpq's reading of ``text`` (``psycopg.conninfo.conninfo_to_dict``: its own parser, no connection made),
    or None where it cannot read it or psycopg is not installed."""
    try:
        from psycopg.conninfo import conninfo_to_dict
    except ImportError:
        return None
    try:
        return {key: str(value) for key, value in conninfo_to_dict(text).items()}
    except Exception:  # noqa: BLE001 - any refusal of libpq's parser is "cannot be read"
        return None


def _still_shows(shown: str, url: str) -> bool:
    """The guard: whether a password of ``url`` is still in ``shown`` (past its scheme)."""
    body = shown.partition("://")[2] if "://" in shown else shown
    body = body.replace(HIDDEN, "\0")
    return any(secret in body for secret in store_url_secrets(url))


def _withheld(url: str) -> str:
    if is_database_url(url):
        return url.partition("://")[0] + "://" + HIDDEN
    return f"a connection string ({HIDDEN}: withheld, it may hold a password)"
