"""A real PostgreSQL server for the voice store's tests: ``initdb`` into a temporary folder, ``pg_ctl start`` on
a free port of 127.0.0.1 (and a Unix socket in that folder), stopped and removed at the end. Never a mock.

The binaries are Debian's (``/usr/lib/postgresql/<version>/bin``, the ``postgresql`` package, which
``scripts/setup_dev.sh`` installs where it can), else whatever ``initdb`` is on PATH. PostgreSQL refuses to run
as root: as root the server runs as the ``postgres`` user (``runuser``), in a folder that user owns.
"""

from __future__ import annotations

import glob
import os
import pathlib
import shutil
import subprocess
import tempfile
from typing import Optional

from tests.support.app_server import free_port


def find_bin() -> Optional[pathlib.Path]:
    """The folder of ``initdb`` and ``pg_ctl``, or None."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]))
    if found:
        return pathlib.Path(found[-1]).parent
    on_path = shutil.which("initdb")
    return pathlib.Path(on_path).parent if on_path else None


def why_not() -> Optional[str]:
    """Why no server can be started here (None: one can)."""
    if find_bin() is None:
        return ("PostgreSQL's server binaries (initdb, pg_ctl) are not installed: apt-get install postgresql "
                "(scripts/setup_dev.sh does it where it can)")
    if os.geteuid() == 0 and shutil.which("runuser") is None:
        return "running as root without runuser: PostgreSQL will not start as root"
    try:
        import psycopg  # noqa: F401
        import psycopg_pool  # noqa: F401
    except ImportError:
        return "psycopg and psycopg_pool are not installed (requirements-dev.txt)"
    return None


class PostgresServer:
    """``start()`` a server; ``url(database)`` a URL for it; ``stop()``; ``create_database(name)``."""

    def __init__(self):
        self.bin = find_bin()
        self.folder = pathlib.Path(tempfile.mkdtemp(prefix="omnivoice-pg-"))
        self.data = self.folder / "data"
        self.port = free_port()
        self.as_root = os.geteuid() == 0

    def _run(self, *command: str, check: bool = True) -> subprocess.CompletedProcess:
        prefix = ["runuser", "-u", "postgres", "--"] if self.as_root else []
        return subprocess.run([*prefix, *command], capture_output=True, text=True, timeout=120, check=check,
                              cwd=self.folder)

    def start(self) -> "PostgresServer":
        if self.as_root:
            shutil.chown(self.folder, "postgres", "postgres")
        self._run(str(self.bin / "initdb"), "-D", str(self.data), "-U", "postgres", "--auth=trust", "-E", "UTF8",
                  "--no-sync")
        options = (f"-c listen_addresses=127.0.0.1 -c port={self.port} -c unix_socket_directories={self.folder} "
                   "-c fsync=off -c max_connections=100 -c shared_buffers=16MB")
        done = self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-l", str(self.folder / "server.log"),
                         "-o", options, "-w", "-t", "60", "start", check=False)
        if done.returncode != 0:
            log = (self.folder / "server.log").read_text(errors="replace")[-2000:] \
                if (self.folder / "server.log").exists() else ""
            raise RuntimeError(f"pg_ctl start failed: {done.stderr}\n{log}")
        return self

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def create_database(self, name: str) -> str:
        import psycopg

        with psycopg.connect(self.url(), autocommit=True) as connection:
            connection.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def stop(self) -> None:
        if (self.data / "postmaster.pid").exists():
            self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w", "stop", check=False)
        shutil.rmtree(self.folder, ignore_errors=True)
