"""A local stand-in for the Hugging Face Hub's file API, for the download tests.

It is a real HTTP server (stdlib ``ThreadingHTTPServer``, HTTP/1.1, keep-alive)
on 127.0.0.1 with a free port, serving folders of this machine as model repos
the way ``huggingface_hub`` 2.x reads the Hub.  ``snapshot_download`` and
``hf_hub_download`` call, and this server answers:

* ``GET /api/models/{repo}`` and ``GET /api/models/{repo}/revision/{rev}``:
  repo info with ``sha`` (the commit) and ``siblings``;
* ``GET /api/models/{repo}/tree/{rev}[/{path}]?recursive=...``: the file listing
  (``type``, ``path``, ``size``, ``oid`` = git blob sha1, and ``lfs`` with the
  sha256 for the large files), paginated with a ``Link: <...>; rel="next"``
  header when ``page_size`` is small;
* ``HEAD``/``GET /{repo}/resolve/{rev}/{path}``: the file, with ``ETag``,
  ``X-Repo-Commit``, ``Content-Length`` and, for LFS files, ``X-Linked-Etag``
  and ``X-Linked-Size``; ``Range: bytes=N-`` / ``bytes=N-M`` answered with 206
  and ``Content-Range``;
* errors with the Hub's ``X-Error-Code`` (``RepoNotFound``,
  ``RevisionNotFound``, ``EntryNotFound``).

Every request is recorded (method, path, Range header, status, body bytes
sent), so tests can assert what was and was not downloaded.  Faults can be
injected per file: cut a transfer after N bytes (the connection is closed
mid-body, as a dropped network does), fail with a status code, or serve
corrupted bytes.

    with HubServer() as hub:
        hub.add_repo("org/model", folder)
        os.environ["HF_ENDPOINT"] = hub.url
"""

from __future__ import annotations

import dataclasses
import hashlib
import http.server
import json
import pathlib
import re
import socket
import threading
import urllib.parse

#: Files stored through Git LFS on the Hub (the usual .gitattributes patterns).
LFS_SUFFIXES = (".onnx", ".data", ".onnx_data", ".bin", ".safetensors", ".pt", ".npz", ".wav")
LFS_MIN_SIZE = 10 * 1024 * 1024
FAKE_LAST_MODIFIED = "2025-01-01T00:00:00.000Z"


def git_blob_sha1(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


@dataclasses.dataclass
class RepoEntry:
    path: str           # relative POSIX path in the repo
    source: pathlib.Path
    size: int
    sha1: str           # git blob id
    sha256: str
    lfs: bool

    def to_tree_json(self) -> dict:
        data = {"type": "file", "oid": self.sha1, "size": self.size, "path": self.path}
        if self.lfs:
            data["lfs"] = {"oid": self.sha256, "size": self.size, "pointerSize": 134}
        return data

    @property
    def etag(self) -> str:
        return self.sha256 if self.lfs else self.sha1


@dataclasses.dataclass
class Repo:
    repo_id: str
    commit: str
    files: dict[str, RepoEntry]
    refs: dict[str, str]  # branch/tag -> commit


@dataclasses.dataclass
class RequestRecord:
    method: str
    path: str                 # URL path, unquoted
    query: str
    range: str | None
    status: int = 0
    bytes_sent: int = 0
    cut: bool = False
    authorization: str | None = None


@dataclasses.dataclass
class Fault:
    kind: str                 # "cut" | "fail" | "corrupt"
    times: int | None = 1     # how many requests it applies to (None = until cleared)
    after: int = 0            # for "cut": body bytes sent before the connection is closed
    status: int = 500         # for "fail"


def _scan_folder(folder: pathlib.Path) -> dict[str, RepoEntry]:
    files = {}
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        rel = path.relative_to(folder).as_posix()
        if "/.git/" in f"/{rel}" or rel.startswith(".git/"):
            continue
        data = path.read_bytes()
        lfs = rel.endswith(LFS_SUFFIXES) or len(data) >= LFS_MIN_SIZE
        files[rel] = RepoEntry(rel, path, len(data), git_blob_sha1(data), hashlib.sha256(data).hexdigest(), lfs)
    return files


def _commit_of(repo_id: str, files: dict[str, RepoEntry]) -> str:
    digest = hashlib.sha1(repo_id.encode())
    for rel, entry in sorted(files.items()):
        digest.update(f"{rel}\0{entry.sha1}\n".encode())
    return digest.hexdigest()


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: "_Server"

    # --- plumbing -----------------------------------------------------------------
    def setup(self):
        super().setup()
        with self.server.hub._lock:
            self.server.hub._connections.add(self.connection)

    def finish(self):
        try:
            super().finish()
        finally:
            with self.server.hub._lock:
                self.server.hub._connections.discard(self.connection)

    def log_message(self, format, *args):  # keep pytest output clean
        pass

    def do_GET(self):
        self._dispatch(head=False)

    def do_HEAD(self):
        self._dispatch(head=True)

    def _record(self) -> RequestRecord:
        parsed = urllib.parse.urlsplit(self.path)
        record = RequestRecord(self.command, urllib.parse.unquote(parsed.path), parsed.query,
                               self.headers.get("Range"), authorization=self.headers.get("Authorization"))
        self.server.hub._log(record)
        return record

    def _send_json(self, record: RequestRecord, status: int, payload, extra: dict | None = None, head=False):
        body = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        for key, value in (extra or {}).items():
            self.send_header(key, value)
        self.end_headers()
        record.status = status
        if not head:
            self.wfile.write(body)
            record.bytes_sent = len(body)

    def _error(self, record: RequestRecord, status: int, code: str | None, message: str, head=False, extra=None):
        headers = {"X-Error-Message": message, **(extra or {})}
        if code:
            headers["X-Error-Code"] = code
        self._send_json(record, status, {"error": message}, headers, head=head)

    # --- routing ------------------------------------------------------------------
    def _dispatch(self, head: bool):
        record = self._record()
        hub = self.server.hub
        parsed = urllib.parse.urlsplit(self.path)
        path = urllib.parse.unquote(parsed.path)
        query = urllib.parse.parse_qs(parsed.query)
        if hub.required_token and self.headers.get("Authorization") != f"Bearer {hub.required_token}":
            return self._error(record, 401, "RepoNotFound", "Invalid credentials in Authorization header", head)

        match = re.fullmatch(r"/api/models/([^/]+/[^/]+)(?:/revision/([^/]+))?/?", path)
        if match:
            return self._repo_info(record, match.group(1), match.group(2) or "main", head)
        match = re.fullmatch(r"/api/models/([^/]+/[^/]+)/tree/([^/]+)(?:/(.*))?", path)
        if match:
            return self._tree(record, match.group(1), match.group(2), match.group(3) or "", query, head)
        match = re.fullmatch(r"/([^/]+/[^/]+)/resolve/([^/]+)/(.+)", path)
        if match:
            return self._resolve(record, match.group(1), match.group(2), match.group(3), head)
        return self._error(record, 404, None, f"no route for {path}", head)

    def _repo_and_commit(self, record, repo_id: str, revision: str, head: bool) -> tuple[Repo, str] | None:
        repo = self.server.hub.repos.get(repo_id)
        if repo is None:
            self._error(record, 401, "RepoNotFound", f"Repository {repo_id} not found", head)
            return None
        commit = repo.refs.get(revision) or (revision if revision == repo.commit else None)
        if commit is None:
            self._error(record, 404, "RevisionNotFound", f"Invalid rev id: {revision}", head)
            return None
        return repo, commit

    def _repo_info(self, record, repo_id, revision, head):
        found = self._repo_and_commit(record, repo_id, revision, head)
        if not found:
            return
        repo, commit = found
        payload = {
            "_id": hashlib.sha1(repo_id.encode()).hexdigest()[:24],
            "id": repo_id,
            "modelId": repo_id,
            "author": repo_id.split("/")[0],
            "sha": commit,
            "lastModified": FAKE_LAST_MODIFIED,
            "private": False,
            "disabled": False,
            "gated": False,
            "tags": ["onnx"],
            "siblings": [{"rfilename": rel} for rel in sorted(repo.files)],
        }
        self._send_json(record, 200, payload, head=head)

    def _tree(self, record, repo_id, revision, sub, query, head):
        found = self._repo_and_commit(record, repo_id, revision, head)
        if not found:
            return
        repo, commit = found
        recursive = query.get("recursive", ["false"])[0].lower() in ("1", "true")
        prefix = sub.strip("/")
        entries: list[dict] = []
        dirs: set[str] = set()
        for rel in sorted(repo.files):
            if prefix and not rel.startswith(prefix + "/"):
                continue
            rest = rel[len(prefix) + 1:] if prefix else rel
            parts = rest.split("/")
            # directories on the way (the Hub lists them as entries of type "directory")
            for depth in range(1, len(parts)):
                if not recursive and depth > 1:
                    break
                folder = "/".join(([prefix] if prefix else []) + parts[:depth])
                if folder not in dirs:
                    dirs.add(folder)
                    entries.append({"type": "directory", "oid": hashlib.sha1(folder.encode()).hexdigest(),
                                    "size": 0, "path": folder})
            if recursive or len(parts) == 1:
                entries.append(repo.files[rel].to_tree_json())
        if prefix and not entries:
            return self._error(record, 404, "EntryNotFound", f"{prefix} does not exist on {revision}", head)
        cursor = int(query.get("cursor", ["0"])[0])
        page_size = self.server.hub.page_size
        page = entries[cursor:cursor + page_size]
        extra = {}
        if cursor + page_size < len(entries):
            params = {k: v[0] for k, v in query.items()}
            params["cursor"] = str(cursor + page_size)
            next_url = f"{self.server.hub.url}{urllib.parse.urlsplit(self.path).path}?{urllib.parse.urlencode(params)}"
            extra["Link"] = f'<{next_url}>; rel="next"'
        self._send_json(record, 200, page, extra, head=head)

    def _resolve(self, record, repo_id, revision, rel, head):
        found = self._repo_and_commit(record, repo_id, revision, head)
        if not found:
            return
        repo, commit = found
        entry = repo.files.get(rel)
        if entry is None:
            return self._error(record, 404, "EntryNotFound", f"{rel} does not exist on {revision}", head,
                               extra={"X-Repo-Commit": commit})
        hub = self.server.hub
        fault = None if head else hub._take_fault(repo_id, rel)
        if fault is not None and fault.kind == "fail":
            return self._error(record, fault.status, None, f"injected failure for {rel}", head)

        data = entry.source.read_bytes()
        if fault is not None and fault.kind == "corrupt":
            middle = len(data) // 2
            data = data[:middle] + bytes([data[middle] ^ 0xFF]) + data[middle + 1:]

        start, end, status = 0, len(data) - 1, 200
        range_header = self.headers.get("Range")
        if range_header and not head:
            match = re.fullmatch(r"bytes=(\d+)-(\d*)", range_header.strip())
            if not match or int(match.group(1)) >= len(data):
                self.send_response(416)
                self.send_header("Content-Range", f"bytes */{len(data)}")
                self.send_header("Content-Length", "0")
                self.end_headers()
                record.status = 416
                return
            start = int(match.group(1))
            if match.group(2):
                end = min(int(match.group(2)), len(data) - 1)
            status = 206
        body = data[start:end + 1]

        self.send_response(status)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("X-Repo-Commit", commit)
        self.send_header("ETag", f'"{entry.etag}"')
        if entry.lfs:
            self.send_header("X-Linked-Etag", f'"{entry.sha256}"')
            self.send_header("X-Linked-Size", str(entry.size))
        if status == 206:
            self.send_header("Content-Range", f"bytes {start}-{end}/{len(data)}")
        self.send_header("Content-Length", str(len(body) if not head else entry.size))
        self.end_headers()
        record.status = status
        if head:
            return
        if fault is not None and fault.kind == "cut":
            part = body[:fault.after]
            self.wfile.write(part)
            self.wfile.flush()
            record.bytes_sent, record.cut = len(part), True
            self.close_connection = True
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            return
        chunk = 64 * 1024
        for offset in range(0, len(body), chunk):
            self.wfile.write(body[offset:offset + chunk])
            record.bytes_sent += len(body[offset:offset + chunk])


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    hub: "HubServer"


class HubServer:
    """Serve local folders as Hub model repos on http://127.0.0.1:<free port>."""

    def __init__(self, page_size: int = 1000, required_token: str | None = None):
        self.repos: dict[str, Repo] = {}
        self.requests: list[RequestRecord] = []
        self.page_size = page_size
        self.required_token = required_token
        self._faults: dict[tuple[str, str], list[Fault]] = {}
        self._lock = threading.Lock()
        self._connections: set[socket.socket] = set()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # --- repos --------------------------------------------------------------------
    def add_repo(self, repo_id: str, folder: str | pathlib.Path, revision: str = "main") -> str:
        """Serve ``folder`` as ``repo_id`` at ``revision``; return its commit sha.

        Adding the same repo again with changed content makes a new commit that
        ``revision`` then points to (older commits stop being served).
        """
        folder = pathlib.Path(folder)
        files = _scan_folder(folder)
        commit = _commit_of(repo_id, files)
        refs = dict(self.repos[repo_id].refs) if repo_id in self.repos else {}
        refs[revision] = commit
        with self._lock:
            self.repos[repo_id] = Repo(repo_id, commit, files, refs)
        return commit

    # --- faults -------------------------------------------------------------------
    def cut_after(self, repo_id: str, path: str, nbytes: int, times: int | None = 1) -> None:
        """Close the connection after ``nbytes`` of the body of the next GET(s) of ``path``."""
        self._add_fault(repo_id, path, Fault("cut", times=times, after=nbytes))

    def fail(self, repo_id: str, path: str, status: int = 500, times: int | None = None) -> None:
        """Answer GETs of ``path`` with ``status`` (HEAD still works)."""
        self._add_fault(repo_id, path, Fault("fail", times=times, status=status))

    def corrupt(self, repo_id: str, path: str, times: int | None = None) -> None:
        """Serve ``path`` with one byte flipped (same size, same headers)."""
        self._add_fault(repo_id, path, Fault("corrupt", times=times))

    def clear_faults(self) -> None:
        with self._lock:
            self._faults.clear()

    def _add_fault(self, repo_id: str, path: str, fault: Fault) -> None:
        with self._lock:
            self._faults.setdefault((repo_id, path), []).append(fault)

    def _take_fault(self, repo_id: str, path: str) -> Fault | None:
        with self._lock:
            queue = self._faults.get((repo_id, path))
            if not queue:
                return None
            fault = queue[0]
            if fault.times is not None:
                fault.times -= 1
                if fault.times <= 0:
                    queue.pop(0)
            return dataclasses.replace(fault)

    # --- request log --------------------------------------------------------------
    def _log(self, record: RequestRecord) -> None:
        with self._lock:
            self.requests.append(record)

    def reset_log(self) -> None:
        with self._lock:
            self.requests.clear()

    def downloads(self, repo_id: str | None = None, path: str | None = None) -> list[RequestRecord]:
        """GET requests of files (``/resolve/``), optionally of one repo and one repo path."""
        out = []
        for record in list(self.requests):
            match = re.fullmatch(r"/([^/]+/[^/]+)/resolve/([^/]+)/(.+)", record.path)
            if record.method != "GET" or not match:
                continue
            if repo_id is not None and match.group(1) != repo_id:
                continue
            if path is not None and match.group(3) != path:
                continue
            out.append(record)
        return out

    def downloaded_paths(self, repo_id: str | None = None) -> set[str]:
        return {re.fullmatch(r"/[^/]+/[^/]+/resolve/[^/]+/(.+)", r.path).group(1)
                for r in self.downloads(repo_id)}

    # --- life cycle ---------------------------------------------------------------
    @property
    def port(self) -> int:
        assert self._server is not None, "server not started"
        return self._server.server_address[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> "HubServer":
        if self._server is not None:
            return self
        server = _Server(("127.0.0.1", 0), _Handler)
        server.hub = self
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="hub-server", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and drop every open connection (the port then refuses connections)."""
        if self._server is None:
            return
        self._server.shutdown()
        self._server.server_close()
        with self._lock:
            connections = list(self._connections)
        for conn in connections:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = None
        self._thread = None

    def __enter__(self) -> "HubServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
