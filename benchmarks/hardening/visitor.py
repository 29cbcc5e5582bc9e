"""What a visitor sends (audio, voices, speech, raw and chunked bodies, Gradio calls) and how an answer is judged."""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import pathlib
import re
import select
import socket
import time
from typing import Callable, Optional

import httpx
import numpy as np
import soundfile

from .server import Server


def speech_wav(seconds: float = 3.0, amplitude: float = 0.3, subtype: str = "PCM_16", rate: int = 24000) -> bytes:
    """A speech-like clip: a voiced tone with syllable-rate loudness changes and a little noise."""
    t = np.arange(int(seconds * rate)) / rate
    pitch = 120 + 20 * np.sin(2 * np.pi * 0.5 * t)
    voiced = sum(np.sin(2 * np.pi * k * np.cumsum(pitch) / rate) / k for k in range(1, 8))
    envelope = 0.5 + 0.5 * np.sin(2 * np.pi * 4 * t) ** 2
    audio = amplitude * voiced * envelope / 2 + 0.01 * np.random.default_rng(0).standard_normal(t.size)
    return wav_bytes(audio.astype(np.float32), subtype, rate)


def wav_bytes(audio: np.ndarray, subtype: str = "PCM_16", rate: int = 24000) -> bytes:
    buffer = io.BytesIO()
    soundfile.write(buffer, audio, rate, format="WAV", subtype=subtype)
    return buffer.getvalue()


def message_of(response: httpx.Response) -> str:
    with contextlib.suppress(ValueError, KeyError, TypeError, AttributeError):
        body = response.json()
        if isinstance(body, dict) and isinstance(body.get("error"), dict):
            return str(body["error"].get("message", ""))
        if isinstance(body, dict) and "detail" in body:
            return str(body["detail"])
    return response.text[:300]


def clear_4xx(response: httpx.Response, words: str = "") -> bool:
    """A 4xx whose message is there, names ``words`` (a regex, any case) and is no traceback or internal error."""
    message = message_of(response)
    return 400 <= response.status_code < 500 and bool(message.strip()) and "traceback" not in message.lower() \
        and "internal" not in message.lower() and re.search(words, message, re.I) is not None


def short(response: httpx.Response) -> str:
    if 200 <= response.status_code < 300 and not response.headers.get("content-type", "").startswith("application/"):
        return str(response.status_code)  # audio
    return f"{response.status_code}: {' '.join(message_of(response).split())[:160]}"


def create_voice(client: httpx.Client, name: str, wav: bytes, transcript: str = "Hello there, this is a test.",
                 filename: str = "clip.wav") -> httpx.Response:
    return client.post("v1/audio/voices", data={"name": name, "transcript": transcript, "consent": "true"},
                       files={"file": (filename, wav, "audio/wav")})


def speak(client: httpx.Client, voice: str = "auto", text: str = "Hello.", steps: int = 1, **fields) -> httpx.Response:
    return client.post("v1/audio/speech", json={"model": "omnivoice", "input": text, "voice": voice, "steps": steps,
                                               "response_format": "wav", "stream": False, **fields})


def raw_post(server: Server, path: str, headers: dict, pieces, timeout: float = 120) -> dict:
    """POST ``pieces`` (bytes, in order) on a plain socket, watching for an early answer: the status, the body,
    the bytes sent before the answer came (a server that reads a body whole answers only after its end)."""
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=timeout)
    head = f"POST /{path} HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\nConnection: close\r\n" + \
        "".join(f"{k}: {v}\r\n" for k, v in headers.items()) + "\r\n"
    sock.sendall(head.encode("latin-1"))
    sent, answered_early, started = 0, False, time.monotonic()
    try:
        for piece in pieces:
            if select.select([sock], [], [], 0)[0]:
                answered_early = True
                break
            sock.sendall(piece)
            sent += len(piece)
    except (BrokenPipeError, ConnectionResetError):
        answered_early = True
    reply = b""
    with contextlib.suppress(OSError):
        sock.settimeout(timeout)
        while chunk := sock.recv(65536):
            reply += chunk
    sock.close()
    status = int(reply.split(b" ", 2)[1]) if reply.startswith(b"HTTP/") else 0
    body = reply.split(b"\r\n\r\n", 1)[-1].decode("utf-8", "replace")
    return {"status": status, "body": body[:400], "sent": sent, "early": answered_early,
            "seconds": time.monotonic() - started}


def chunked(pieces):
    for piece in pieces:
        yield f"{len(piece):x}\r\n".encode() + piece + b"\r\n"
    yield b"0\r\n\r\n"


def framed(pieces: list[bytes], form: str, headers: dict):
    """``pieces`` as a body sent in ``form`` ("chunked", or "Content-Length" declared up front), its framing header
    added to ``headers``."""
    if form == "chunked":
        headers["Transfer-Encoding"] = "chunked"
        return chunked(pieces)
    headers["Content-Length"] = str(sum(len(piece) for piece in pieces))
    return iter(pieces)


def gradio_client(server: Server, session_hash: Optional[str] = None):
    from gradio_client import Client

    client = Client(server.url, verbose=False, download_files=False)
    if session_hash is not None:
        client.session_hash = session_hash
    return client


def gradio_error(call: Callable) -> tuple[Optional[object], str]:
    """(result, '') or (None, the error's message)."""
    try:
        return call(), ""
    except Exception as exc:  # gradio_client raises AppError (and others) with the server's message
        return None, f"{type(exc).__name__}: {' '.join(str(exc).split())[:300]}"


def gradio_call(server: Server, api_name: str, **named) -> tuple[str, str]:
    """Call a Gradio endpoint over plain HTTP (its /call route) with JSON as ``json.dumps`` writes it (a lone
    surrogate travels as the escape \\ud800, which gradio_client cannot send): (the last event, its data)."""
    parameters = gradio_client(server).view_api(print_info=False, return_format="dict")["named_endpoints"][
        f"/{api_name}"]["parameters"]
    data = [named.get(p["parameter_name"], p.get("parameter_default")) for p in parameters]
    started = httpx.post(f"{server.url}gradio_api/call/{api_name}", content=json.dumps({"data": data}),
                         headers={"Content-Type": "application/json"}, timeout=60)
    if started.status_code != 200:
        return f"HTTP {started.status_code}", started.text[:300]
    event_id = started.json()["event_id"]
    event, payload = "", ""
    with httpx.stream("GET", f"{server.url}gradio_api/call/{api_name}/{event_id}", timeout=120) as stream:
        for line in stream.iter_lines():
            if line.startswith("event:"):
                event = line.split(":", 1)[1].strip()
            elif line.startswith("data:"):
                payload = line.split(":", 1)[1].strip()
                if event in ("complete", "error"):
                    break
    return event, payload


def folder_bytes(folder: pathlib.Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) if folder.exists() else 0


def names_of(response: httpx.Response) -> list[str]:
    """The saved voices of a /v1/audio/voices listing (not the built-in designs)."""
    with contextlib.suppress(ValueError, AttributeError, TypeError):
        body = response.json()
        items = body.get("voices") or body.get("data") or []
        return [v.get("id") or v.get("name") for v in items if v.get("type") == "saved"]
    return []


def voice_npz(path: pathlib.Path, meta: str, frames: int = 40) -> None:
    """A voice file as ``Voice.save`` writes one (codes [8, frames], a JSON string of meta) with ``meta`` as given."""
    path.parent.mkdir(parents=True, exist_ok=True)
    codes = np.random.default_rng(0).integers(0, 1024, size=(8, frames), dtype=np.int64)
    with open(path, "wb") as handle:
        np.savez(handle, codes=codes, meta=np.array(meta))


def sha256_of(path: pathlib.Path) -> Optional[str]:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None


def tail(text: str, chars: int = 220) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return " ".join((lines[-1] if lines else "").split())[:chars]
