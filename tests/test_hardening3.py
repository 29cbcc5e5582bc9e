"""Issue 21, the rest of items 6 and 7: on a shared server each output file is served only to the visitor who
made it, and a batch row that cannot be read or run fails alone.

Each test here failed before its fix (see the commits on branch own)."""

from __future__ import annotations

import pathlib
import re

import httpx
import pytest

from tests.support.app_server import AppProcess
from tests.test_http_api import wait_model_loaded


# --- item 6: outputs served only to their owner in shared mode ------------------------------------------

def test_an_output_is_readable_by_its_owner_only_and_a_copy_of_it_too(tmp_path):
    from omnivoice_demo.storage.outputs import OutputFolder

    now = [0.0]
    folder = OutputFolder(tmp_path / "out", max_age_seconds=100, copies_kept_seconds=50, clock=lambda: now[0])
    mine = folder.path("omnivoice-speak-42", ".wav", owner="a" * 32)
    mine.write_bytes(b"RIFF")
    copy = tmp_path / "gradio-cache" / "0123abcd" / mine.name   # Gradio serves a copy named as the output
    beside = folder.written_beside(folder.path("voice-1234", ".npz", owner="a" * 32), ".json")
    assert folder.readable_by(mine, "a" * 32) and folder.readable_by(copy, "a" * 32)
    assert folder.readable_by(beside, "a" * 32)  # an export's .json is the .npz's owner's too
    for stranger in ("b" * 32, None):
        assert folder.readable_by(mine, stranger) is False and folder.readable_by(copy, stranger) is False
    dotted = f"{tmp_path}/gradio-cache/../out/{mine.name}"
    assert folder.readable_by(dotted, "b" * 32) is False
    assert folder.readable_by(tmp_path / "out" / "made-before-a-restart.wav", "a" * 32) is False  # nobody's
    assert folder.readable_by(tmp_path / "out" / "no-such-file.wav", None) is False
    assert folder.readable_by(tmp_path / "elsewhere" / "upload.wav", None) is None  # not ours: Gradio decides
    now[0] = 151.0  # past the output's age and the copies' time: the owner is forgotten, the copy nobody's
    assert folder.readable_by(mine, "a" * 32) is False and folder.readable_by(copy, "a" * 32) is None


def test_local_mode_hides_no_output(tmp_path):
    from omnivoice_demo.studio import ModelManager, Studio, VoiceLibrary

    local = Studio(models=ModelManager(), voices=VoiceLibrary(tmp_path / "voices"), out_dir=tmp_path / "out")
    path = local.output_path("omnivoice-speak", ".wav", owner="a" * 32)
    assert not local.output_hidden_from(str(path), None) and not local.output_hidden_from(str(path), "b" * 32)


@pytest.fixture(scope="module")
def shared_server(tiny_fp32_folder, tmp_path_factory):
    server = AppProcess(["--model", str(tiny_fp32_folder), "--precision", "fp32", "--shared"],
                        tmp_path_factory.mktemp("owners"))
    try:
        wait_model_loaded(server)
        yield server
    finally:
        server.stop()


def _visitor(server) -> httpx.Client:
    """A visitor with a cookie jar who has loaded the page (and so has its owner cookie)."""
    client = httpx.Client(base_url=server.url, timeout=60)
    assert client.get("/").status_code == 200
    return client


def test_a_shared_servers_outputs_are_served_to_the_visitor_who_made_them_only(shared_server, tmp_path):
    from gradio_client import Client

    page = httpx.get(shared_server.url, timeout=60)
    cookies = page.headers.get_list("set-cookie")
    assert any("omnivoice-owner-lax=" in c and "HttpOnly" in c and "SameSite=Lax" in c for c in cookies), cookies
    assert any("SameSite=None" in c and "Secure" in c for c in cookies), cookies

    alice = Client(shared_server.url, download_files=False, verbose=False)
    result = alice.predict(text="Hello.", num_step=1, seed=0, api_name="/speak")
    url = result[0]["url"]
    assert "/gradio_api/file=" in url
    own = httpx.get(url, cookies=alice.cookies, timeout=60)
    assert own.status_code == 200 and own.content[:4] == b"RIFF"

    bob = _visitor(shared_server)
    for stranger in (bob, httpx.Client(timeout=60)):  # another owner cookie, or none
        refused = stranger.get(url)
        assert refused.status_code == 404, refused.text  # before: 200, the file to anyone with its name
        assert refused.json() == {"detail": "Not Found"}

    # the file itself in the output folder: Alice's, by the same token; a name there of no one is no one's
    token = re.search(r"-([0-9a-f]{24})\.wav", url).group(1)
    original = next((shared_server.log_path.parent / "data" / "outputs").glob(f"*-{token}.wav"))
    route = f"/gradio_api/file={original}"
    assert httpx.get(shared_server.url.rstrip("/") + route, cookies=alice.cookies, timeout=60).status_code == 200
    assert bob.get(route).status_code == 404
    missing = bob.get(f"/gradio_api/file={original.parent / 'omnivoice-nothing.wav'}")
    assert missing.status_code == 404 and missing.json() == {"detail": "Not Found"}  # the same answer

    # a visitor's upload is theirs to fetch as before (the file route still serves what is not an output)
    uploaded = bob.post("/gradio_api/upload", files={"files": ("clip.wav", b"RIFF-not-an-output")})
    assert uploaded.status_code == 200, uploaded.text
    assert bob.get(f"/gradio_api/file={uploaded.json()[0]}").content == b"RIFF-not-an-output"


def test_the_gradio_clients_own_downloads_still_work_in_shared_mode(shared_server):
    from gradio_client import Client

    client = Client(shared_server.url, verbose=False)   # downloads the results it gets, with its cookies
    path, seed, _ = client.predict(text="Hi.", num_step=1, seed=3, api_name="/speak")
    assert pathlib.Path(path).read_bytes()[:4] == b"RIFF" and seed == 3


# --- item 7: a bad batch row fails alone ---------------------------------------------------------------

def test_bad_batch_rows_fail_alone_and_the_good_ones_are_made(tiny_fp32_folder, tmp_path):
    import json
    import subprocess

    from tests.test_batch import batch_command

    source = tmp_path / "items.jsonl"
    source.write_text("\n".join([
        '{"id": "good", "text": "Fine."}',
        '{"id": "lone", "text": "Half a character: \\ud800."}',   # the JSON escape of a lone surrogate
        '{"id": "mem", "text": "Hello.", "voice": "/proc/self/mem"}',
        '[1, 2, 3]',
        '{"id": "klingon", "text": "Fine words.", "language": "Klingonish"}',  # refused by the engine's checks
        '{"id": "also-good", "text": "Fine too."}',
    ]) + "\n")
    out = tmp_path / "out"
    done = subprocess.run(batch_command(tiny_fp32_folder, source, out), capture_output=True, text=True, timeout=300)
    assert done.returncode == 3, done.stdout + done.stderr  # before: 1, "internal error", nothing made
    assert "Traceback" not in done.stderr + done.stdout and "internal error" not in done.stderr + done.stdout
    assert sorted(p.name for p in out.glob("*.wav")) == ["also-good.wav", "good.wav"]
    summary = done.stdout
    assert "6 items: 2 done, 0 skipped (done before), 4 failed" in summary, summary
    failed = dict(re.findall(r"^failed (.+?): (.*)$", summary, re.MULTILINE))
    assert "lone surrogate" in failed["line 2"] and "/proc/self/mem" in failed["line 3"]
    assert "JSON object" in failed["line 4"] and "Klingonish" in failed["klingon"]
    sidecar = json.loads((out / "klingon.json").read_text())
    assert sidecar["status"] == "failed" and "Klingonish" in sidecar["error"]

    again = subprocess.run(batch_command(tiny_fp32_folder, source, out), capture_output=True, text=True, timeout=300)
    assert again.returncode == 3 and "2 skipped (done before), 4 failed" in again.stdout, again.stdout


def test_a_row_with_bytes_that_are_not_utf8_or_nested_too_deeply_fails_alone(tmp_path):
    from omnivoice_demo.batch.items import read_batch

    rows = tmp_path / "odd.jsonl"
    rows.write_bytes(b'{"id": "ok", "text": "Fine."}\n{"id": "bytes", "text": "caf\xe9"}\n'
                     + b"[" * 100_000 + b"]" * 100_000 + b"\n")
    items, problems = read_batch(rows)   # before: UnicodeDecodeError / RecursionError, the whole run gone
    assert [item.id for item in items] == ["ok"]
    assert [line for line, _ in problems] == [2, 3]
    assert "not UTF-8" in problems[0][1] and "nested too deeply" in problems[1][1]
    lines = tmp_path / "odd.txt"
    lines.write_bytes(b"Fine line.\ncaf\xe9 line\n")
    items, problems = read_batch(lines)
    assert len(items) == 1 and problems[0][0] == 2 and "not valid Unicode" in problems[0][1]
